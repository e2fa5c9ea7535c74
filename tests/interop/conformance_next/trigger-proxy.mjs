// Loopback HTTP proxy in front of mcpfan for the conformance suite's list-change triggers.
//
//   node trigger-proxy.mjs --upstream http://127.0.0.1:PORT [--log FILE]
//
// The suite's server-stateless scenario mutates the server's tool / prompt list by calling its
// diagnostic tools `test_trigger_tool_change` / `test_trigger_prompt_change` (tools/call) while a
// subscriptions/listen stream is open, then expects notifications/tools/list_changed resp.
// notifications/prompts/list_changed on that stream. mcpfan is a hub: it has no tools of its
// own, and the change comes from a backend through POST /v1/publish. So this proxy answers
// exactly those two tools/call requests itself, after publishing the matching notification to
// mcpfan (and getting 202), and forwards every other request to mcpfan unchanged: same method,
// path, raw header list (names and order) and body bytes; the answer is streamed back with
// mcpfan's status and raw headers, chunk by chunk (SSE streams stay live).
//
// Caveat: Node's HTTP parser drops leading/trailing whitespace of header values, so a scenario
// that probes header-value whitespace must talk to mcpfan directly, not through this proxy.
//
// Prints "trigger-proxy: listening on 127.0.0.1:PORT" on stdout once it accepts connections.
// With --log, appends one JSON line per exchange: the request (method, url, raw headers, body)
// and the answer (status, raw headers, the first 64 KiB of the body), for FINDINGS.md.
import http from "node:http";
import fs from "node:fs";

const TRIGGERS = {
  test_trigger_tool_change: "notifications/tools/list_changed",
  test_trigger_prompt_change: "notifications/prompts/list_changed",
};
const MAX_BODY = 4 << 20;       // request bodies are buffered to look for the triggers
const LOG_BODY_MAX = 64 << 10;  // answer bytes kept per exchange in the log
const PUBLISH_TIMEOUT_MS = 5000;

function arg(name) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : undefined;
}
const upstream = new URL(arg("--upstream") ?? "");
const logFile = arg("--log");
const agent = new http.Agent({ keepAlive: true });

function log(entry) {
  if (!logFile) return;
  fs.appendFileSync(logFile, JSON.stringify({ t: new Date().toISOString(), ...entry }) + "\n");
}

// The trigger tool this request calls, if any.
function triggerOf(req, body) {
  if (req.method !== "POST") return undefined;
  let msg;
  try { msg = JSON.parse(body.toString("utf8")); } catch { return undefined; }
  if (!msg || typeof msg !== "object" || Array.isArray(msg) || msg.method !== "tools/call") return undefined;
  const name = msg.params?.name;
  return typeof name === "string" && Object.hasOwn(TRIGGERS, name) ? { msg, name } : undefined;
}

function publish(method) {
  const body = JSON.stringify([{ method }]);
  return new Promise((resolve) => {
    const r = http.request(new URL("/v1/publish", upstream), {
      method: "POST", agent, timeout: PUBLISH_TIMEOUT_MS,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    }, (res) => {
      const parts = [];
      res.on("data", (c) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode, body: Buffer.concat(parts).toString("utf8") }));
      res.on("error", (e) => resolve({ status: 0, body: String(e) }));
    });
    r.on("timeout", () => r.destroy(new Error(`no answer within ${PUBLISH_TIMEOUT_MS} ms`)));
    r.on("error", (e) => resolve({ status: 0, body: String(e) }));
    r.end(body);
  });
}

async function answerTrigger(req, res, body, { msg, name }) {
  const method = TRIGGERS[name];
  const pub = await publish(method);
  let status, answer;
  if (pub.status === 202) {
    status = 200;
    answer = {
      jsonrpc: "2.0", id: msg.id ?? null,
      result: {
        content: [{ type: "text", text: `trigger-proxy: published ${method} to mcpfan (POST /v1/publish -> 202)` }],
        resultType: "complete",
      },
    };
  } else {
    status = 500;
    answer = {
      jsonrpc: "2.0", id: msg.id ?? null,
      error: { code: -32603, message: `trigger-proxy: POST /v1/publish ${method} -> ${pub.status} ${pub.body}` },
    };
  }
  const text = JSON.stringify(answer);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
  log({ kind: "trigger", method: req.method, url: req.url, headers: req.rawHeaders, body: body.toString("utf8"),
        publish: { method, status: pub.status, body: pub.body }, status, answer: text });
}

function forward(req, res, body) {
  const entry = { kind: "forward", method: req.method, url: req.url, headers: req.rawHeaders,
                  body: body.toString("utf8") };
  const kept = [];
  let keptBytes = 0;
  let logged = false;
  const finish = (extra) => {
    if (logged) return;
    logged = true;
    log({ ...entry, ...extra, answer: Buffer.concat(kept).toString("utf8") });
  };
  const up = http.request(new URL(req.url, upstream), { method: req.method, agent, headers: req.rawHeaders }, (ur) => {
    entry.status = ur.statusCode;
    entry.answerHeaders = ur.rawHeaders;
    res.writeHead(ur.statusCode, ur.statusMessage, ur.rawHeaders);
    res.flushHeaders();
    ur.on("data", (c) => {
      if (keptBytes < LOG_BODY_MAX) { kept.push(c.subarray(0, LOG_BODY_MAX - keptBytes)); keptBytes += c.length; }
      res.write(c);
    });
    ur.on("end", () => { res.end(); finish({}); });
    ur.on("error", () => { res.destroy(); finish({ note: "upstream answer aborted" }); });
  });
  up.on("error", (e) => {
    finish({ note: `upstream error: ${e}` });
    if (!res.headersSent) {
      res.writeHead(502, { "content-type": "text/plain" });
      res.end(`trigger-proxy: upstream error: ${e}\n`);
    } else {
      res.destroy();
    }
  });
  // The client went away (the suite aborts streams it has read enough of): drop the upstream
  // exchange too, so mcpfan sees the stream close as it would without the proxy.
  res.on("close", () => {
    if (!res.writableFinished) { up.destroy(); finish({ note: "client closed before the answer ended" }); }
  });
  up.end(body);
}

const server = http.createServer((req, res) => {
  const parts = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > MAX_BODY) { req.destroy(); return; }
    parts.push(c);
  });
  req.on("end", () => {
    const body = Buffer.concat(parts);
    const trig = triggerOf(req, body);
    if (trig) {
      answerTrigger(req, res, body, trig).catch((e) => { res.destroy(); log({ kind: "error", error: String(e) }); });
    } else {
      forward(req, res, body);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`trigger-proxy: listening on ${address}:${port} -> ${upstream.origin}`);
});
const stop = () => { server.closeAllConnections(); server.close(() => process.exit(0)); setTimeout(() => process.exit(0), 1000).unref(); };
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

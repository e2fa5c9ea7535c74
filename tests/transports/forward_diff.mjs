// The front proxy's differential property (docs/protocol.md "What is rejected, rewritten and never retried"), with an independent strict parser: Node's llhttp
// (node:http, insecureHTTPParser off). For every case, the bytes a client sends are parsed by
// mcpfan's RequestParser and forwarded as upstream_request() builds them (mcpfan_forward_dump);
// the forwarded bytes of all the case's requests, pipelined on one loopback connection to a
// node:http server, must be read as exactly the requests mcpfan parsed: the same method,
// target, fields (Host, the end-to-end fields in order, mcpfan's Content-Length) and body.
// The dump also reports its own checks (byte-by-byte parsing agrees; read_strict agrees).
//
// usage: node forward_diff.mjs <mcpfan_forward_dump> <corpus dir>...
// Cases: every file of the corpus dirs, plus the generated ones below (written to a temp dir).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const [dump, ...corpora] = process.argv.slice(2);
if (!dump) {
  console.error('usage: node forward_diff.mjs <mcpfan_forward_dump> <corpus dir>...');
  process.exit(2);
}

const note = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}';
const head = (extra) => `POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n${extra}`;
const cl = (body) => `Content-Length: ${body.length}\r\n\r\n${body}`;
const chunked = (body, ext = '') => `${body.length.toString(16)}${ext}\r\n${body}\r\n0\r\n\r\n`;
// Generated cases: whitespace in names, duplicate or conflicting framing, obs-fold, bare CR or
// LF, chunk extensions, trailers, pipelining, odd targets and methods.
const generated = {
  ws_before_colon_te: head('Transfer-Encoding : chunked\r\n\r\n') + chunked(note),
  ws_before_colon_cl: head(`Content-Length : ${note.length}\r\n\r\n`) + note,
  ws_before_colon_other: head('X-A : 1\r\n') + cl(note),
  tab_in_name: head('X\tA: 1\r\n') + cl(note),
  duplicate_cl_same: head(`Content-Length: ${note.length}\r\n`) + cl(note),
  duplicate_cl_different: head('Content-Length: 3\r\n') + cl(note),
  cl_and_te: head(`Content-Length: ${note.length}\r\nTransfer-Encoding: chunked\r\n\r\n`) + chunked(note),
  te_twice: head('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n') + chunked(note),
  te_gzip_chunked: head('Transfer-Encoding: gzip, chunked\r\n\r\n') + chunked(note),
  te_identity: head('Transfer-Encoding: identity\r\n\r\n') + note,
  te_trailing_space: head('Transfer-Encoding: chunked \r\n\r\n') + chunked(note),
  te_x_chunked: head('Transfer-Encoding: xchunked\r\n\r\n') + chunked(note),
  cl_plus: head(`Content-Length: +${note.length}\r\n\r\n`) + note,
  cl_two_numbers: head(`Content-Length: ${note.length} ${note.length}\r\n\r\n`) + note,
  cl_hex: head('Content-Length: 0x10\r\n\r\n') + note,
  obs_fold_sp: head('X-A: one\r\n two\r\n') + cl(note),
  obs_fold_tab: head('X-A: one\r\n\ttwo\r\n') + cl(note),
  obs_fold_after_empty: head('X-A:\r\n two\r\n') + cl(note),
  bare_cr_in_value: head('X-A: a\rb\r\n') + cl(note),
  bare_lf_lines: `POST /mcp HTTP/1.1\nHost: h\nContent-Type: application/json\nContent-Length: ${note.length}\n\n${note}`,
  mixed_line_ends: `POST /mcp HTTP/1.1\r\nHost: h\nX-A: 1\r\nContent-Length: ${note.length}\n\r\n${note}`,
  nul_in_value: head('X-A: a\0b\r\n') + cl(note),
  del_in_value: head('X-A: a\x7fb\r\n') + cl(note),
  obs_text_value: head('X-A: caf\xe9\r\n') + cl(note),
  empty_value: head('X-Empty:\r\nX-Spaces:    \r\n') + cl(note),
  ows_around_value: head('X-A: \t padded \t \r\n') + cl(note),
  chunk_extension: head('Transfer-Encoding: chunked\r\n\r\n') + chunked(note, ';ext=1'),
  chunk_extension_quoted: head('Transfer-Encoding: chunked\r\n\r\n') + chunked(note, ';a="b c"'),
  trailers: head('Transfer-Encoding: chunked\r\n\r\n') + `${note.length.toString(16)}\r\n${note}\r\n0\r\nX-T1: 1\r\nAuthorization: x\r\nX-Last: 2\r\n\r\n`,
  pipelined_three: head('') + cl(note) + `GET /mcp?x=1 HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n` + head('Transfer-Encoding: chunked\r\n\r\n') + chunked(note),
  pipelined_after_reject: head('') + cl(note) + head('X A: 1\r\n') + cl(note),
  connection_nominates: head('Connection: keep-alive, X-Secret, Mcp-Session-Id\r\nX-Secret: s\r\nMcp-Session-Id: abc\r\nX-Kept: k\r\n') + cl(note),
  connection_twice: head('Connection: X-One\r\nConnection: X-Two\r\nX-One: 1\r\nX-Two: 2\r\nX-Three: 3\r\n') + cl(note),
  hop_by_hop: head('Keep-Alive: timeout=5\r\nTE: trailers\r\nTrailer: X-T\r\nUpgrade: h2c\r\nProxy-Authorization: Basic x\r\nProxy-Connection: keep-alive\r\n') + cl(note),
  upgrade_request: `GET /mcp HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\nGET /mcp HTTP/1.1\r\nHost: h\r\n\r\n`,
  expect_continue: head('Expect: 100-continue\r\n') + cl(note),
  two_hosts: `GET /mcp HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`,
  no_host: `GET /mcp HTTP/1.1\r\nAccept: */*\r\n\r\n`,
  http_1_0: `GET /mcp HTTP/1.0\r\nHost: h\r\n\r\n`,
  absolute_form: `GET http://example.com/other?q=1 HTTP/1.1\r\nHost: h\r\n\r\n`,
  target_fragment: `GET /mcp?a=1#frag HTTP/1.1\r\nHost: h\r\n\r\n`,
  target_high_bytes: `GET /mcp?\xff\xfe HTTP/1.1\r\nHost: h\r\n\r\n`,
  target_tab: `GET /mcp?a\tb HTTP/1.1\r\nHost: h\r\n\r\n`,
  target_percent: `GET /mcp?a=%00%0d%0a HTTP/1.1\r\nHost: h\r\n\r\n`,
  target_query_only_qmark: `GET /mcp? HTTP/1.1\r\nHost: h\r\n\r\n`,
  method_patch: `PATCH /mcp HTTP/1.1\r\nHost: h\r\n${cl(note)}`,
  method_options: `OPTIONS /mcp HTTP/1.1\r\nHost: h\r\n\r\n`,
  method_delete_body: `DELETE /mcp HTTP/1.1\r\nHost: h\r\n${cl(note)}`,
  method_lowercase: `get /mcp HTTP/1.1\r\nHost: h\r\n\r\n`,
  long_name: head(`X-${'n'.repeat(4000)}: v\r\n`) + cl(note),
  many_fields: head(Array.from({ length: 200 }, (_, i) => `X-F${i}: ${i}\r\n`).join('')) + cl(note),
  leading_crlf: `\r\n\r\n${head('')}${cl(note)}`,
  space_in_version: `GET /mcp HTTP/1.1 \r\nHost: h\r\n\r\n`,
  head_then_post: `HEAD /mcp HTTP/1.1\r\nHost: h\r\n\r\n${head('')}${cl(note)}`,
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'forward-diff-'));
const files = [];
for (const [name, bytes] of Object.entries(generated)) {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, Buffer.from(bytes, 'latin1'));
  files.push(f);
}
for (const dir of corpora) {
  for (const name of fs.readdirSync(dir).sort()) files.push(path.join(dir, name));
}

const run = spawnSync(dump, files, { maxBuffer: 256 * 1024 * 1024, encoding: 'utf8', timeout: 120000 });
fs.rmSync(tmp, { recursive: true, force: true });
if (run.status !== 0) {
  console.error(`${dump} exited ${run.status}: ${run.stderr}`);
  process.exit(1);
}
const cases = run.stdout.trim().split('\n').map((l) => JSON.parse(l));

const latin1 = (b64) => Buffer.from(b64, 'base64').toString('latin1');

// One node:http server, one connection per case; requests recorded in arrival order.
let current = null;
const server = http.createServer({ insecureHTTPParser: false, maxHeaderSize: 256 * 1024, requireHostHeader: true }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    current?.seen.push({ method: req.method, url: req.url, raw: req.rawHeaders, body: Buffer.concat(chunks).toString('latin1') });
    res.end('ok');
  });
});
server.on('clientError', (err, socket) => {
  current?.errors.push(`${err.code}: ${err.message}`);
  socket.destroy();
});
server.keepAliveTimeout = 0;
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

function sendCase(bytes, expected) {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let answers = 0;
    let buf = '';
    const done = () => {
      clearTimeout(timer);
      sock.destroy();
      resolve();
    };
    const timer = setTimeout(done, 5000);
    sock.on('connect', () => sock.write(bytes));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      answers = buf.split('HTTP/1.1 200').length - 1;
      if (answers >= expected && current.seen.length >= expected) done();
    });
    sock.on('close', done);
    sock.on('error', done);
  });
}

const failures = [];
let requests = 0;
let rejected = 0;
for (const c of cases) {
  const name = path.basename(c.file);
  if (c.failed) failures.push(`${name}: a parse step threw`);
  if (c.split) failures.push(`${name}: parsed at once and byte by byte differently: ${c.split}`);
  for (const r of c.requests) if (r.strict) failures.push(`${name}: read_strict: ${r.strict}`);
  if (c.rejected) rejected++;
  if (c.requests.length === 0) continue;
  requests += c.requests.length;
  current = { seen: [], errors: [] };
  const bytes = Buffer.concat(c.requests.map((r) => Buffer.from(r.forwarded, 'base64')));
  await sendCase(bytes, c.requests.length);
  if (current.errors.length) failures.push(`${name}: llhttp refused the forwarded bytes: ${current.errors.join('; ')}`);
  if (current.seen.length !== c.requests.length) {
    failures.push(`${name}: llhttp read ${current.seen.length} requests, mcpfan forwarded ${c.requests.length}`);
    continue;
  }
  c.requests.forEach((r, i) => {
    const got = current.seen[i];
    const want = { method: r.method, url: latin1(r.target), body: latin1(r.body), fields: r.fields.map(([n, v]) => [latin1(n), latin1(v)]) };
    if (got.method !== want.method) failures.push(`${name}#${i}: method ${got.method} vs ${want.method}`);
    if (got.url !== want.url) failures.push(`${name}#${i}: target ${JSON.stringify(got.url)} vs ${JSON.stringify(want.url)}`);
    if (got.body !== want.body) failures.push(`${name}#${i}: body differs (${got.body.length} vs ${want.body.length} bytes)`);
    const pairs = [];
    for (let k = 0; k < got.raw.length; k += 2) pairs.push([got.raw[k], got.raw[k + 1]]);
    if (JSON.stringify(pairs) !== JSON.stringify(want.fields)) {
      failures.push(`${name}#${i}: fields differ:\n    llhttp: ${JSON.stringify(pairs).slice(0, 600)}\n    mcpfan: ${JSON.stringify(want.fields).slice(0, 600)}`);
    }
  });
}
server.close();
console.log(`forward_diff: ${cases.length} cases, ${requests} forwarded requests read back by llhttp, ${rejected} inputs rejected by mcpfan`);
if (failures.length) {
  console.error(`forward_diff: ${failures.length} differences:\n  ${failures.join('\n  ')}`);
  process.exit(1);
}
console.log('forward_diff: every forwarded request is read exactly as mcpfan parsed it');

// Shared plumbing for the interop clients (tests/interop/*/*.mjs): failure reporting with the
// current stage, bounded waits, a recording fetch for the SDK's HTTP transport, and the
// publisher (POST /v1/publish) and operator (GET /metrics) side over plain fetch.
//
// Imports only Node built-ins: each test resolves its pinned SDK from its own node_modules, and
// this file must not pull in any package.

export const SUB_ID_KEY = 'io.modelcontextprotocol/subscriptionId';
export const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

export const STEP_TIMEOUT_MS = 10_000; // any single wait
export const OVERALL_TIMEOUT_MS = 90_000; // the whole program
export const QUIET_MS = 500; // grace period for "must not arrive"

// Every notification a server may push; the clients register a handler for each, so that a
// wrongly delivered one is seen.
export const NOTIFICATION_METHODS = [
    'notifications/resources/updated',
    'notifications/tools/list_changed',
    'notifications/prompts/list_changed',
    'notifications/resources/list_changed'
];

// mcpfan's "mcpfan: listening on HOST:PORT ..." stderr line; group 1 is HOST:PORT.
export const LISTENING_RE = /listening on ((?:[0-9.]+|\[[0-9a-f:]+\]):[0-9]+)/;

// ---------------------------------------------------------------------------------------
// failure, stage, bounded waits

export class TestFailure extends Error {}

export function fail(message) {
    throw new TestFailure(message);
}

export const sleep = ms => new Promise(r => setTimeout(r, ms));

export function short(s, n = 600) {
    return s.length > n ? `${s.slice(0, n)}…(${s.length} bytes)` : s;
}

export function headersOf(h) {
    const out = {};
    for (const [k, v] of h.entries()) out[k] = v;
    return out;
}

export async function withTimeout(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new TestFailure(`timed out after ${ms} ms waiting for ${what}`)), ms);
    });
    try {
        return await Promise.race([promise, timeout]);
    } finally {
        clearTimeout(timer);
    }
}

export async function waitUntil(predicate, ms, what, intervalMs = 25) {
    const deadline = Date.now() + ms;
    for (;;) {
        if (await predicate()) return;
        if (Date.now() >= deadline) fail(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise(r => setTimeout(r, intervalMs));
    }
}

// One test program: `t.stage` names the step in progress, `t.clientErrors` collects what the
// SDK reports through client.onerror (`client.onerror = t.onClientError`), and `t.run(main)`
// runs it under the overall budget. On failure it prints "NAME: FAIL at stage 'S': message",
// the client.onerror reports, then report() (the test's own wire/pipe log), calls cleanup()
// and exits 1; on success it calls cleanup() and exits 0.
export function createTest(name, { report = () => {}, cleanup = () => {} } = {}) {
    const t = {
        name,
        stage: 'start',
        clientErrors: [], // {stage, text}
        onClientError: e => t.clientErrors.push({ stage: t.stage, text: `${e?.name ?? 'Error'}: ${e?.message ?? e}` }),
        dumpAndExit(err) {
            const msg = err instanceof TestFailure ? err.message : `unexpected exception: ${err?.stack ?? err}`;
            console.error(`${name}: FAIL at stage '${t.stage}': ${msg}`);
            if (t.clientErrors.length > 0) {
                console.error('--- client.onerror reports:');
                for (const e of t.clientErrors) console.error(`  [${e.stage}] ${e.text}`);
            }
            report();
            cleanup();
            process.exit(1);
        },
        run(main) {
            const overall = setTimeout(() => t.dumpAndExit(new TestFailure(`overall timeout ${OVERALL_TIMEOUT_MS} ms`)), OVERALL_TIMEOUT_MS);
            overall.unref();
            main().then(
                () => {
                    clearTimeout(overall);
                    cleanup();
                    process.exit(0);
                },
                err => t.dumpAndExit(err)
            );
        }
    };
    return t;
}

// Registers one handler per key (method names for SDK v2, notification schemas for SDK v1) on
// an SDK Client; returns the array every received notification is pushed to, in order.
export function collectNotifications(client, keys = NOTIFICATION_METHODS) {
    const received = [];
    for (const key of keys) {
        client.setNotificationHandler(key, n => {
            received.push(n);
        });
    }
    return received;
}

// The base URL given on the command line: loopback only, else usage and exit 2.
export function loopbackBaseArg(script) {
    const base = process.argv[2];
    if (!base || !/^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost):\d+$/.test(base)) {
        console.error(`usage: node ${script} http://127.0.0.1:PORT   (loopback only)`);
        process.exit(2);
    }
    return base;
}

// ---------------------------------------------------------------------------------------
// the recording fetch, handed to an SDK HTTP transport as its `fetch` option
//
// Every exchange goes to `exchanges` (in order) and a readable line to `wire`, so a failure can
// show exactly what went over the wire. An exchange is
//   {n, key, method, url, reqHeaders, request, status, resHeaders, resBody, sse, sseEnded}
// key: the JSON-RPC id of the request, else its method, else "METHOD url". Event-stream bodies
// are teed: the SDK reads one branch, `sse` accumulates the raw text of the other (the SDK does
// not expose it), and `sseEnded` becomes 'by the server' or 'aborted (...)'. Other bodies are
// read once into `resBody` and handed to the SDK as an identical Response.

export function createRecorder() {
    const wire = [];
    const exchanges = [];
    let counter = 0;

    function recordingFetch(input, init = {}) {
        const method = init.method ?? 'GET';
        const reqHeaders = headersOf(new Headers(init.headers));
        const body = typeof init.body === 'string' ? init.body : '';
        let parsed;
        try {
            parsed = body ? JSON.parse(body) : undefined;
        } catch {
            parsed = undefined;
        }
        const key = parsed && 'id' in parsed ? parsed.id : (parsed?.method ?? `${method} ${input}`);
        const n = counter++;
        wire.push(`#${n} → ${method} ${input} headers=${JSON.stringify(reqHeaders)} body=${short(body)}`);
        const entry = {
            n,
            key,
            method,
            url: String(input),
            reqHeaders,
            request: parsed,
            status: undefined,
            resHeaders: undefined,
            resBody: undefined,
            sse: undefined,
            sseEnded: false
        };
        exchanges.push(entry);
        return fetch(input, init).then(
            response => {
                entry.status = response.status;
                entry.resHeaders = headersOf(response.headers);
                wire.push(`#${n} ← ${response.status} headers=${JSON.stringify(entry.resHeaders)}`);
                const ct = response.headers.get('content-type') ?? '';
                if (response.body && ct.toLowerCase().startsWith('text/event-stream')) {
                    const [forSdk, forLog] = response.body.tee();
                    entry.sse = '';
                    (async () => {
                        const decoder = new TextDecoder();
                        const reader = forLog.getReader();
                        try {
                            for (;;) {
                                const { value, done } = await reader.read();
                                if (done) break;
                                entry.sse += decoder.decode(value, { stream: true });
                            }
                            entry.sseEnded = 'by the server';
                            wire.push(`#${n} ← (event stream ended by the server) ${JSON.stringify(short(entry.sse, 2000))}`);
                        } catch (e) {
                            entry.sseEnded = `aborted (${e?.name ?? e})`;
                            wire.push(`#${n} ← (event stream aborted: ${e?.name ?? e}) ${JSON.stringify(short(entry.sse, 2000))}`);
                        }
                    })();
                    return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
                }
                if (response.body) {
                    // Read the body for the log, hand the SDK an identical copy.
                    return response.text().then(text => {
                        entry.resBody = text;
                        wire.push(`#${n} ← body ${JSON.stringify(short(text))}`);
                        const nullBody = response.status === 204 || response.status === 205 || response.status === 304;
                        return new Response(nullBody ? null : text, { status: response.status, statusText: response.statusText, headers: response.headers });
                    });
                }
                return response;
            },
            err => {
                wire.push(`#${n} ✗ ${err?.name ?? 'Error'}: ${err?.message ?? err}`);
                throw err;
            }
        );
    }

    return {
        fetch: recordingFetch,
        exchanges,
        wire,
        find: pred => exchanges.find(pred),
        // The POST that carried the JSON-RPC request or notification `method`.
        rpc: rpcMethod => exchanges.find(x => x.method === 'POST' && x.request?.method === rpcMethod),
        dump(title = 'SDK HTTP exchanges (as seen by the recording fetch)') {
            console.error(`--- ${title}:`);
            for (const line of wire) console.error(`  ${line}`);
        }
    };
}

// ---------------------------------------------------------------------------------------
// publisher and operator side (plain fetch, not the SDK)

// POST /v1/publish; design §3: 202 {"accepted": N}, N = 1 here.
export async function publish(base, notification) {
    const res = await withTimeout(
        fetch(`${base}/v1/publish`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(notification)
        }),
        STEP_TIMEOUT_MS,
        'POST /v1/publish'
    );
    const text = await withTimeout(res.text(), STEP_TIMEOUT_MS, 'POST /v1/publish body');
    if (res.status !== 202) fail(`POST /v1/publish ${JSON.stringify(notification)} answered ${res.status} ${text} (design §3: 202 {"accepted": N})`);
    let body;
    try {
        body = JSON.parse(text);
    } catch {
        fail(`POST /v1/publish answered non-JSON body: ${text}`);
    }
    if (body?.accepted !== 1) fail(`POST /v1/publish answered ${text}, expected {"accepted":1}`);
}

async function metricsText(base) {
    const res = await withTimeout(fetch(`${base}/metrics`), STEP_TIMEOUT_MS, 'GET /metrics');
    const text = await withTimeout(res.text(), STEP_TIMEOUT_MS, 'GET /metrics body');
    if (res.status !== 200) fail(`GET /metrics answered ${res.status}: ${short(text)}`);
    return text;
}

// The value of metric `name` (its label sets summed); fails when there is no sample.
export async function metric(base, name) {
    const text = await metricsText(base);
    let found = false;
    let sum = 0;
    const re = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`);
    for (const line of text.split('\n')) {
        const m = re.exec(line);
        if (m) {
            found = true;
            sum += Number(m[1]);
        }
    }
    if (!found) fail(`GET /metrics has no ${name} sample:\n${short(text, 3000)}`);
    return sum;
}

// Waits (bounded) until metric `name` equals `want`; the failure names the last value seen.
export async function waitForGauge(base, name, want) {
    let last;
    try {
        await waitUntil(async () => (last = await metric(base, name)) === want, STEP_TIMEOUT_MS, `${name} == ${want}`, 50);
    } catch (e) {
        if (e instanceof TestFailure) fail(`${e.message} (last value ${last})`);
        throw e;
    }
}

// All samples of every metric whose # TYPE is gauge: {name: value} (label sets summed).
export async function gauges(base) {
    const text = await metricsText(base);
    const types = new Map();
    for (const m of text.matchAll(/^# TYPE (\S+) (\S+)/gm)) types.set(m[1], m[2]);
    const out = {};
    for (const line of text.split('\n')) {
        const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
        if (m && types.get(m[1]) === 'gauge') out[m[1]] = (out[m[1]] ?? 0) + Number(m[2]);
    }
    return out;
}

// ---------------------------------------------------------------------------------------
// checks

// Key-order-independent JSON text: every key at every depth, sorted.
export function canon(v) {
    const keys = {};
    const walk = x => {
        if (x && typeof x === 'object') {
            for (const [k, y] of Object.entries(x)) {
                keys[k] = true;
                walk(y);
            }
        }
    };
    walk(v);
    return JSON.stringify(v, Object.keys(keys).sort());
}

// A server/discover result as design §2.1 describes it: supportedVersions holds every one of
// `versions`, the four notification capabilities, and _meta serverInfo {name: "mcpfan", version}.
export function checkDiscover(d, where, versions) {
    if (!d || typeof d !== 'object') fail(`${where}: no discover result`);
    for (const v of versions) {
        if (!Array.isArray(d.supportedVersions) || !d.supportedVersions.includes(v))
            fail(
                `${where}: supportedVersions ${JSON.stringify(d.supportedVersions)} lacks ${v}` +
                    (versions.length > 1 ? ` (design §2.1: list ${versions.join(' and ')})` : '')
            );
    }
    const c = d.capabilities ?? {};
    if (c.resources?.subscribe !== true || c.resources?.listChanged !== true || c.tools?.listChanged !== true || c.prompts?.listChanged !== true)
        fail(`${where}: capabilities ${JSON.stringify(c)} differ from design §2.1`);
    const info = d._meta?.[SERVER_INFO_KEY];
    if (info?.name !== 'mcpfan' || typeof info?.version !== 'string')
        fail(`${where}: _meta["${SERVER_INFO_KEY}"] is ${JSON.stringify(info)}, expected {name: "mcpfan", version: "..."}`);
}

// Fails on any SSE `event:` line other than "event: message" in raw stream text.
export function checkEventLines(raw, why = '') {
    for (const l of raw.split(/\r?\n/)) {
        if (l.startsWith('event:') && l.trim() !== 'event: message') fail(`unexpected SSE event type line '${l}'${why}`);
    }
}

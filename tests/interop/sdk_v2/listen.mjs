// Interop test: the official MCP TypeScript SDK v2 client (@modelcontextprotocol/client,
// pinned in package.json) against a running mcpfan server.
//
//   node listen.mjs http://127.0.0.1:PORT
//
// Written the way an SDK user would write a client: Client + StreamableHTTPClientTransport
// with versionNegotiation 'auto', notification handlers via setNotificationHandler, a
// subscription via client.listen(). The only non-SDK traffic is the publisher side
// (POST /v1/publish) and the operator side (GET /metrics), both with plain fetch.
//
// A recording fetch is handed to the transport (the SDK's `fetch` option) so that a failure
// can show exactly what went over the wire, and so the test can check the raw SSE bytes the
// SDK itself does not expose (no `id:` lines, response headers).
//
// Exit 0 and one summary line on success (SDKV2_VERBOSE=1 also prints the wire log); exit 1 with "interop_sdk_v2: FAIL: ..." otherwise.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const SUB_ID_KEY = 'io.modelcontextprotocol/subscriptionId';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
const EXPECTED_VERSION = '2026-07-28';
const URI_A = 'file:///interop/a.txt';
const URI_OTHER = 'file:///interop/b.txt';
// Starts with URI_A, but URI_A does not end with '/', so it is not a sub-resource (design §4).
const URI_PREFIX_TRAP = 'file:///interop/a.txt.bak';

const STEP_TIMEOUT_MS = 10_000; // any single wait
const OVERALL_TIMEOUT_MS = 90_000; // the whole program
const QUIET_MS = 500; // grace period for "must not arrive"

// ---------------------------------------------------------------------------------------
// plumbing: failure, bounded waits, wire log

const wire = []; // human-readable log of every HTTP exchange the SDK made
const clientErrors = []; // everything reported through client.onerror
let stage = 'start';

class TestFailure extends Error {}

function fail(message) {
    throw new TestFailure(message);
}

function dumpAndExit(err) {
    const msg = err instanceof TestFailure ? err.message : `unexpected exception: ${err?.stack ?? err}`;
    console.error(`interop_sdk_v2: FAIL at stage '${stage}': ${msg}`);
    if (clientErrors.length > 0) {
        console.error('--- client.onerror reports:');
        for (const e of clientErrors) console.error(`  ${e}`);
    }
    console.error('--- SDK HTTP exchanges (as seen by the recording fetch):');
    for (const line of wire) console.error(`  ${line}`);
    process.exit(1);
}

const overall = setTimeout(() => dumpAndExit(new TestFailure(`overall timeout ${OVERALL_TIMEOUT_MS} ms`)), OVERALL_TIMEOUT_MS);
overall.unref();

async function withTimeout(promise, ms, what) {
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

async function waitUntil(predicate, ms, what, intervalMs = 25) {
    const deadline = Date.now() + ms;
    for (;;) {
        if (await predicate()) return;
        if (Date.now() >= deadline) fail(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise(r => setTimeout(r, intervalMs));
    }
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

function headersOf(h) {
    const out = {};
    for (const [k, v] of h.entries()) out[k] = v;
    return out;
}

function short(s, n = 600) {
    return s.length > n ? `${s.slice(0, n)}…(${s.length} bytes)` : s;
}

// Raw SSE text of every event-stream response, keyed by the JSON-RPC id of the request.
const sseRaw = new Map();
// Response status/headers of every request, keyed by JSON-RPC id (or method for notifications).
const exchanges = [];
let exchangeCounter = 0;

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
    const n = exchangeCounter++;
    wire.push(`#${n} → ${method} ${input} headers=${JSON.stringify(reqHeaders)} body=${short(body)}`);
    const entry = { key, method, reqHeaders, request: parsed, status: undefined, resHeaders: undefined };
    exchanges.push(entry);
    return fetch(input, init).then(
        response => {
            entry.status = response.status;
            entry.resHeaders = headersOf(response.headers);
            wire.push(`#${n} ← ${response.status} headers=${JSON.stringify(entry.resHeaders)}`);
            const ct = response.headers.get('content-type') ?? '';
            if (response.body && ct.toLowerCase().startsWith('text/event-stream')) {
                const [forSdk, forLog] = response.body.tee();
                let text = '';
                sseRaw.set(key, () => text);
                (async () => {
                    const decoder = new TextDecoder();
                    const reader = forLog.getReader();
                    try {
                        for (;;) {
                            const { value, done } = await reader.read();
                            if (done) break;
                            text += decoder.decode(value, { stream: true });
                        }
                        wire.push(`#${n} ← (event stream ended) ${JSON.stringify(short(text, 2000))}`);
                    } catch (e) {
                        wire.push(`#${n} ← (event stream aborted: ${e?.name ?? e}) ${JSON.stringify(short(text, 2000))}`);
                    }
                })();
                return new Response(forSdk, { status: response.status, statusText: response.statusText, headers: response.headers });
            }
            if (response.body) {
                response
                    .clone()
                    .text()
                    .then(
                        t => wire.push(`#${n} ← body=${short(t)}`),
                        () => {}
                    );
            }
            return response;
        },
        error => {
            wire.push(`#${n} ✗ ${error?.name ?? ''} ${error?.message ?? error}`);
            throw error;
        }
    );
}

// ---------------------------------------------------------------------------------------
// publisher and operator helpers (plain HTTP, not the SDK)

async function publish(base, notification) {
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

async function metric(base, name) {
    const res = await withTimeout(fetch(`${base}/metrics`), STEP_TIMEOUT_MS, 'GET /metrics');
    const text = await withTimeout(res.text(), STEP_TIMEOUT_MS, 'GET /metrics body');
    if (res.status !== 200) fail(`GET /metrics answered ${res.status}: ${short(text)}`);
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

async function waitForGauge(base, name, want) {
    let last;
    try {
        await waitUntil(
            async () => (last = await metric(base, name)) === want,
            STEP_TIMEOUT_MS,
            `${name} == ${want}`,
            50
        );
    } catch (e) {
        if (e instanceof TestFailure) fail(`${e.message} (last value ${last})`);
        throw e;
    }
}

// ---------------------------------------------------------------------------------------
// checks

function sameFilter(a, b) {
    const norm = f => {
        const out = {};
        for (const k of ['toolsListChanged', 'promptsListChanged', 'resourcesListChanged']) if (f?.[k] !== undefined) out[k] = f[k];
        if (f?.resourceSubscriptions !== undefined) out.resourceSubscriptions = [...f.resourceSubscriptions].sort();
        return JSON.stringify(out);
    };
    return norm(a) === norm(b);
}

function checkDiscover(d, where) {
    if (!d || typeof d !== 'object') fail(`${where}: no discover result`);
    if (!Array.isArray(d.supportedVersions) || !d.supportedVersions.includes(EXPECTED_VERSION))
        fail(`${where}: supportedVersions ${JSON.stringify(d.supportedVersions)} lacks ${EXPECTED_VERSION}`);
    if (!d.supportedVersions.includes('DRAFT-2026-v1'))
        fail(`${where}: supportedVersions ${JSON.stringify(d.supportedVersions)} lacks DRAFT-2026-v1 (design §2.1: list both)`);
    const c = d.capabilities ?? {};
    if (c.resources?.subscribe !== true || c.resources?.listChanged !== true || c.tools?.listChanged !== true || c.prompts?.listChanged !== true)
        fail(`${where}: capabilities ${JSON.stringify(c)} differ from design §2.1`);
    const info = d._meta?.[SERVER_INFO_KEY];
    if (info?.name !== 'mcpfan' || typeof info?.version !== 'string')
        fail(`${where}: _meta["${SERVER_INFO_KEY}"] is ${JSON.stringify(info)}, expected {name: "mcpfan", version: "..."}`);
}

// ---------------------------------------------------------------------------------------
// the test

async function main() {
    const base = process.argv[2];
    if (!base || !/^http:\/\/(127\.\d+\.\d+\.\d+|\[::1\]|localhost):\d+$/.test(base)) {
        console.error('usage: node listen.mjs http://127.0.0.1:PORT   (loopback only)');
        process.exit(2);
    }
    const mcpUrl = new URL('/mcp', base);

    // -- connect with version negotiation 'auto' ------------------------------------------
    stage = 'connect';
    const client = new Client(
        { name: 'mcpfan-interop-sdk-v2', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } }
    );
    client.onerror = e => clientErrors.push(`${e?.name ?? 'Error'}: ${e?.message ?? e}`);

    const received = [];
    for (const method of [
        'notifications/resources/updated',
        'notifications/tools/list_changed',
        'notifications/prompts/list_changed',
        'notifications/resources/list_changed'
    ]) {
        client.setNotificationHandler(method, n => {
            received.push(n);
        });
    }

    const transport = new StreamableHTTPClientTransport(mcpUrl, { fetch: recordingFetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect()');

    const negotiated = client.getNegotiatedProtocolVersion();
    if (negotiated !== EXPECTED_VERSION || client.getProtocolEra() !== 'modern')
        fail(
            `negotiated protocol version is ${negotiated} (era ${client.getProtocolEra()}), expected ${EXPECTED_VERSION}. ` +
                `The SDK falls back to a 2025 'initialize' when the server/discover probe gets a result it cannot validate ` +
                `or an error other than -32022 (see FINDINGS.md §2)`
        );
    const probe = exchanges.find(x => x.request?.method === 'server/discover');
    if (!probe) fail('no server/discover probe was sent');
    if (probe.reqHeaders['mcp-protocol-version'] !== EXPECTED_VERSION || probe.reqHeaders['mcp-method'] !== 'server/discover')
        fail(`probe headers unexpected: ${JSON.stringify(probe.reqHeaders)}`);
    checkDiscover(client.getDiscoverResult(), 'probe discover result');
    const serverVersion = client.getServerVersion();
    if (serverVersion?.name !== 'mcpfan') fail(`client.getServerVersion() is ${JSON.stringify(serverVersion)}`);

    // -- explicit server/discover (numeric id; the SDK requires resultType here) -------------
    stage = 'discover';
    const discovered = await withTimeout(client.discover({ timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.discover()');
    checkDiscover(discovered, 'client.discover()');

    // -- open the listen -------------------------------------------------------------------
    stage = 'listen';
    const filter = { resourceSubscriptions: [URI_A], toolsListChanged: true };
    const sub = await withTimeout(client.listen(filter, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.listen() acknowledgement');
    let closedCause;
    sub.closed.then(c => {
        closedCause = c;
    });

    const listenEx = exchanges.find(x => x.request?.method === 'subscriptions/listen');
    if (!listenEx) fail('no subscriptions/listen request was recorded');
    const listenId = listenEx.request.id;
    if (typeof listenId !== 'string') fail(`SDK sent a non-string listen id ${JSON.stringify(listenId)} (SDK changed?)`);
    if (listenEx.reqHeaders['mcp-method'] !== 'subscriptions/listen' || listenEx.reqHeaders['mcp-protocol-version'] !== EXPECTED_VERSION)
        fail(`listen request headers unexpected: ${JSON.stringify(listenEx.reqHeaders)}`);
    const ct = listenEx.resHeaders?.['content-type'] ?? '';
    if (listenEx.status !== 200 || !ct.toLowerCase().startsWith('text/event-stream'))
        fail(`listen answered ${listenEx.status} content-type '${ct}', expected 200 text/event-stream`);
    if ((listenEx.resHeaders?.['cache-control'] ?? '').toLowerCase() !== 'no-cache')
        fail(`listen response Cache-Control is '${listenEx.resHeaders?.['cache-control']}', expected 'no-cache' (design §2.1)`);

    if (!sameFilter(sub.honoredFilter, filter))
        fail(
            `acknowledged filter ${JSON.stringify(sub.honoredFilter)} != requested ${JSON.stringify(filter)} ` +
                `(the SDK turns an ack it cannot validate into {})`
        );

    // The gauge must count our stream, so that its return to 0 later means something.
    await waitForGauge(base, 'mcpfan_listen_streams_open', 1);

    // -- publish ---------------------------------------------------------------------------
    // Order matters: per-stream order is publish order (design §4), so when the last expected
    // notification (tools/list_changed) has arrived, anything wrongly delivered from the
    // earlier publishes has arrived too. A quiet period after that catches stragglers.
    stage = 'publish';
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 1 } } });
    await publish(base, { method: 'notifications/prompts/list_changed' });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER, _meta: { 'test/seq': 2 } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_PREFIX_TRAP, _meta: { 'test/seq': 3 } } });
    await publish(base, { method: 'notifications/tools/list_changed' });

    stage = 'receive';
    await waitUntil(
        () => received.some(n => n.method === 'notifications/tools/list_changed'),
        STEP_TIMEOUT_MS,
        `notifications/tools/list_changed on the listen stream (received so far: ${JSON.stringify(received)})`
    ).catch(e => {
        fail(`${e.message}; received so far: ${JSON.stringify(received)}; raw stream: ${JSON.stringify(sseRaw.get(listenId)?.() ?? '')}`);
    });
    await sleep(QUIET_MS);

    const expectedUpdated = { uri: URI_A, _meta: { [SUB_ID_KEY]: listenId, 'test/seq': 1 } };
    const expectedTools = { _meta: { [SUB_ID_KEY]: listenId } };
    const got = JSON.stringify(received);
    if (received.length !== 2) fail(`expected exactly 2 notifications (resources/updated for ${URI_A}, tools/list_changed), got ${received.length}: ${got}`);
    const [first, second] = received;
    if (first.method !== 'notifications/resources/updated' || second.method !== 'notifications/tools/list_changed')
        fail(`wrong notifications or order: ${got}`);
    const canon = v => JSON.stringify(v, Object.keys(flatKeys(v)).sort());
    if (canon(first.params) !== canon(expectedUpdated))
        fail(`resources/updated params ${JSON.stringify(first.params)} != expected ${JSON.stringify(expectedUpdated)} (params verbatim + subscriptionId, design §3)`);
    if (canon(second.params ?? {}) !== canon(expectedTools))
        fail(`tools/list_changed params ${JSON.stringify(second.params)} != expected ${JSON.stringify(expectedTools)}`);

    // Raw stream checks the SDK does not make itself.
    const raw = sseRaw.get(listenId)?.() ?? '';
    if (/^id:/m.test(raw)) fail(`listen stream carries 'id:' lines (design §2.1 forbids them; this SDK then reconnects with GET + Last-Event-ID): ${JSON.stringify(short(raw, 2000))}`);
    const dataLines = raw.split('\n').filter(l => l.startsWith('data:'));
    const firstMsg = dataLines.length > 0 ? JSON.parse(dataLines[0].slice(5)) : undefined;
    if (firstMsg?.method !== 'notifications/subscriptions/acknowledged')
        fail(`first event on the listen stream is not the acknowledgement: ${JSON.stringify(short(raw, 2000))}`);
    if (firstMsg.params?._meta?.[SUB_ID_KEY] !== listenId)
        fail(`ack subscriptionId ${JSON.stringify(firstMsg.params?._meta?.[SUB_ID_KEY])} != listen id ${JSON.stringify(listenId)}`);
    for (const l of raw.split('\n')) {
        if (l.startsWith('event:') && l.trim() !== 'event: message') fail(`unexpected SSE event type line '${l}'`);
    }
    if (dataLines.length !== 3) fail(`expected 3 data events on the stream (ack + 2), saw ${dataLines.length}: ${JSON.stringify(short(raw, 2000))}`);

    // -- close the listen ------------------------------------------------------------------
    stage = 'close';
    await withTimeout(sub.close(), STEP_TIMEOUT_MS, 'subscription.close()');
    const cause = await withTimeout(sub.closed, STEP_TIMEOUT_MS, 'subscription.closed');
    if (cause !== 'local') fail(`subscription closed with cause '${cause}', expected 'local'`);
    if (closedCause !== undefined && closedCause !== 'local') fail(`closed cause ${closedCause}`);

    await waitForGauge(base, 'mcpfan_listen_streams_open', 0);
    await waitForGauge(base, 'mcpfan_subscriptions_active', 0);

    // The SDK always POSTs notifications/cancelled after aborting the stream; design §2.1 says 202.
    await waitUntil(
        () => exchanges.some(x => x.request?.method === 'notifications/cancelled' && x.status !== undefined),
        STEP_TIMEOUT_MS,
        'the answer to the SDK\'s notifications/cancelled POST'
    );
    const cancelled = exchanges.find(x => x.request?.method === 'notifications/cancelled');
    if (cancelled.request.params?.requestId !== listenId) fail(`notifications/cancelled named ${JSON.stringify(cancelled.request.params)}`);
    if (cancelled.status !== 202) fail(`notifications/cancelled {requestId: ${JSON.stringify(listenId)}} answered ${cancelled.status}, expected 202 (design §2.1)`);

    // Nothing may arrive any more (the stream is gone).
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 4 } } });
    await sleep(QUIET_MS / 2);
    if (received.length !== 2) fail(`notifications arrived after close: ${JSON.stringify(received.slice(2))}`);

    stage = 'shutdown';
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');

    if (clientErrors.length > 0) fail(`the SDK reported ${clientErrors.length} error(s) through client.onerror`);

    if (process.env.SDKV2_VERBOSE) {
        console.error('--- SDK HTTP exchanges (SDKV2_VERBOSE):');
        for (const line of wire) console.error(`  ${line}`);
    }
    console.log(
        `interop_sdk_v2: PASS — @modelcontextprotocol/client negotiated ${negotiated} (auto), ` +
            `listen ${JSON.stringify(listenId)} acked ${JSON.stringify(sub.honoredFilter)}, ` +
            `received 2/2 expected notifications and none of 3 filtered ones, listen freed (mcpfan_listen_streams_open=0)`
    );
}

// Every key at every depth, for a key-order-independent JSON comparison.
function flatKeys(v, acc = {}) {
    if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) {
            acc[k] = true;
            flatKeys(x, acc);
        }
    }
    return acc;
}

main().then(
    () => {
        clearTimeout(overall);
        process.exit(0);
    },
    err => dumpAndExit(err)
);

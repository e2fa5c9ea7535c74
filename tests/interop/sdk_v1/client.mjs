// Interop test: the official MCP TypeScript SDK v1 client (@modelcontextprotocol/sdk, pinned in
// package.json; the 2025-era protocol with sessions) against a running mcpfan server.
//
//   node client.mjs http://127.0.0.1:PORT
//
// Written the way an SDK user would write it: Client + StreamableHTTPClientTransport, handlers
// registered with setNotificationHandler, client.subscribeResource()/unsubscribeResource(),
// transport.terminateSession() (DELETE) and client.close(). The only non-SDK traffic is the
// publisher side (POST /v1/publish), the operator side (GET /metrics), and two raw requests
// that replay the deleted session id (expects 404, design §2.2 / MCP 2025-11-25 transports).
//
// A recording fetch is handed to the transport (the SDK's `fetch` option), so a failure can
// show exactly what went over the wire, and the test can check the raw SSE bytes of the
// session's GET stream and the HTTP statuses that the SDK does not expose.
//
// Exit 0 and one summary line on success (SDKV1_VERBOSE=1 also prints the wire log); exit 1
// with "interop_sdk_v1: FAIL at stage '...': ..." otherwise.

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newSdkClient } from './sdk_client.mjs';
import { QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY, TestFailure, createRecorder, createTest, fail, loopbackBaseArg, short, sleep, waitUntil, withTimeout } from '../lib/common.mjs';
import { canon, checkEventLines, gauges, publish } from '../lib/common.mjs';

const NAME = 'interop_sdk_v1';
const OFFERED_VERSION = '2025-11-25'; // LATEST_PROTOCOL_VERSION of sdk 1.32.2 (FINDINGS.md §1)
const URI_A = 'file:///interop/v1/a.txt';
const URI_OTHER = 'file:///interop/v1/b.txt';
// Starts with URI_A, but URI_A does not end with '/', so it is not a sub-resource (design §4).
const URI_PREFIX_TRAP = 'file:///interop/v1/a.txt.bak';
const URI_DIR = 'file:///interop/v1/dir/'; // ends with '/': sub-resources match (design §4)
const URI_IN_DIR = 'file:///interop/v1/dir/c.txt';

// Failure reporting, bounded waits, the recording fetch and the publish/metrics helpers are in
// ../lib/common.mjs; a failure prints the stage, the client.onerror reports and the wire log.
const rec = createRecorder();
const t = createTest(NAME, { report: () => rec.dump() });
const exchanges = rec.exchanges;
const findExchange = rec.find;
const rpcExchange = rec.rpc;

// Gauges that count per-client state (by name: sessions, streams, subscriptions, listens,
// clients, "open"/"active"/"pending" things); they must return to their pre-test value once
// the session is gone. Other gauges (configuration, uptime, ...) are not checked.
// mcpfan_connections_open also counts our own /metrics connection and idle keep-alive sockets
// of Node's fetch pool, so it is left out as well.
const CLIENT_STATE = /^mcpfan_.*(session|stream|subscription|listen|client|_open$|_active$|pending)/;
const NOT_CLIENT_STATE = { has: k => !CLIENT_STATE.test(k) || k === 'mcpfan_connections_open' };

// ---------------------------------------------------------------------------------------
// checks

function sseDataMessages(raw) {
    const out = [];
    for (const block of raw.split(/\r?\n\r?\n/)) {
        const data = block
            .split(/\r?\n/)
            .filter(l => l.startsWith('data:'))
            .map(l => l.slice(5).replace(/^ /, ''))
            .join('\n');
        if (data) out.push(JSON.parse(data));
    }
    return out;
}

// Published params must arrive verbatim; the only addition allowed is the subscriptionId
// _meta key that design §3 describes for listen subscriptions.
function checkVerbatim(got, published, what) {
    const g = structuredClone(got ?? {});
    if (g._meta) {
        delete g._meta[SUB_ID_KEY];
        if (Object.keys(g._meta).length === 0 && !published?._meta) delete g._meta;
    }
    if (canon(g) !== canon(published ?? {}))
        fail(`${what}: params on the wire ${JSON.stringify(got)} != published ${JSON.stringify(published ?? {})} (design §3: params verbatim)`);
}

// ---------------------------------------------------------------------------------------
// the test

async function main() {
    const base = loopbackBaseArg('client.mjs');
    const mcpUrl = new URL('/mcp', base);
    const notes = [];

    const before = await gauges(base);

    // -- connect: initialize, notifications/initialized, GET stream ---------------------------
    t.stage = 'connect';
    const { client, received } = newSdkClient('mcpfan-interop-sdk-v1', t.onClientError);

    // A long first reconnection delay: if mcpfan drops the GET stream, the SDK would otherwise
    // reconnect after 1 s (FINDINGS.md §4) and hide the drop; this way the drop shows in the
    // wire log and the missing notifications fail the test. close() cancels the timer.
    const transport = new StreamableHTTPClientTransport(mcpUrl, {
        fetch: rec.fetch,
        reconnectionOptions: { initialReconnectionDelay: 60_000, maxReconnectionDelay: 60_000, reconnectionDelayGrowFactor: 1, maxRetries: 2 }
    });
    try {
        await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect() (initialize + notifications/initialized)');
    } catch (e) {
        if (e instanceof TestFailure) throw e;
        fail(`client.connect() (initialize, then notifications/initialized) failed: ${e?.message ?? e}`);
    }

    const init = rpcExchange('initialize');
    if (!init) fail('no initialize request was recorded');
    if (init.request.params?.protocolVersion !== OFFERED_VERSION) fail(`SDK offered ${init.request.params?.protocolVersion}, expected ${OFFERED_VERSION} (SDK changed?)`);
    if ('mcp-session-id' in init.reqHeaders || 'mcp-protocol-version' in init.reqHeaders)
        fail(`initialize carried session/version headers: ${JSON.stringify(init.reqHeaders)} (SDK changed?)`);
    const sessionId = init.resHeaders?.['mcp-session-id'];
    if (!sessionId) fail(`initialize answered ${init.status} without an Mcp-Session-Id header (design §2.2): ${JSON.stringify(init.resHeaders)}`);
    if (!/^[\x21-\x7e]+$/.test(sessionId)) fail(`Mcp-Session-Id ${JSON.stringify(sessionId)} has characters outside visible ASCII 0x21-0x7E (MCP transports spec)`);
    if (transport.sessionId !== sessionId) fail(`transport.sessionId ${transport.sessionId} != header ${sessionId}`);
    const initResult = JSON.parse(init.resBody ?? 'null')?.result;
    const negotiated = initResult?.protocolVersion;
    if (negotiated !== OFFERED_VERSION) fail(`initialize answered protocolVersion ${JSON.stringify(negotiated)}; a server that supports ${OFFERED_VERSION} must echo it`);
    if ('resultType' in (initResult ?? {})) notes.push('initialize result carries resultType (a 2026 field) — harmless for this SDK, but not 2025 schema');
    const caps = client.getServerCapabilities() ?? {};
    if (caps.resources?.subscribe !== true || caps.resources?.listChanged !== true || caps.tools?.listChanged !== true || caps.prompts?.listChanged !== true)
        fail(`initialize capabilities ${JSON.stringify(caps)} differ from design §2.2`);
    if (!caps.logging) notes.push('no logging capability declared (the conformance suite sends logging/setLevel anyway)');
    const serverVersion = client.getServerVersion();
    if (serverVersion?.name !== 'mcpfan' || typeof serverVersion?.version !== 'string') fail(`serverInfo is ${JSON.stringify(serverVersion)}, expected {name: "mcpfan", version}`);

    const initialized = rpcExchange('notifications/initialized');
    if (!initialized) fail('no notifications/initialized was recorded');
    if (initialized.reqHeaders['mcp-session-id'] !== sessionId || initialized.reqHeaders['mcp-protocol-version'] !== negotiated)
        fail(`notifications/initialized headers unexpected: ${JSON.stringify(initialized.reqHeaders)}`);
    if (initialized.status !== 202)
        fail(`notifications/initialized answered ${initialized.status} ${initialized.resBody ?? ''}; the SDK opens the GET stream only after a 202 (FINDINGS.md §3)`);

    // The GET stream is opened fire-and-forget after the 202; wait until its headers are in.
    t.stage = 'GET stream';
    await waitUntil(() => findExchange(x => x.method === 'GET')?.status !== undefined, STEP_TIMEOUT_MS, 'the answer to the SDK\'s GET /mcp');
    const get = findExchange(x => x.method === 'GET');
    if (get.reqHeaders['mcp-session-id'] !== sessionId || get.reqHeaders.accept !== 'text/event-stream')
        fail(`GET /mcp headers unexpected: ${JSON.stringify(get.reqHeaders)}`);
    if (get.status === 405) fail('GET /mcp answered 405: mcpfan offers no session stream, so no notification can reach a 2025 client (design §2.2)');
    const getCt = (get.resHeaders?.['content-type'] ?? '').toLowerCase();
    if (get.status !== 200 || !getCt.startsWith('text/event-stream'))
        fail(`GET /mcp answered ${get.status} content-type '${getCt}' ${get.resBody ?? ''}, expected 200 text/event-stream`);
    if ((get.resHeaders?.['cache-control'] ?? '').toLowerCase() !== 'no-cache') notes.push(`GET stream Cache-Control is '${get.resHeaders?.['cache-control']}'`);

    // -- requests on the session -------------------------------------------------------------
    t.stage = 'requests';
    const pong = await withTimeout(client.ping({ timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'ping');
    if (Object.keys(pong ?? {}).length !== 0) fail(`ping returned ${JSON.stringify(pong)}, expected {}`);
    for (const uri of [URI_A, URI_DIR]) {
        const r = await withTimeout(client.subscribeResource({ uri }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `resources/subscribe ${uri}`);
        if (Object.keys(r ?? {}).length !== 0) fail(`resources/subscribe returned ${JSON.stringify(r)}, expected {}`);
    }
    for (const x of exchanges.filter(x => x.method === 'POST' && x.request?.id !== undefined && x.request.method !== 'initialize')) {
        if (x.reqHeaders['mcp-session-id'] !== sessionId || x.reqHeaders['mcp-protocol-version'] !== negotiated)
            fail(`${x.request.method} carried headers ${JSON.stringify(x.reqHeaders)}`);
    }
    const during = await gauges(base);

    // -- publish ---------------------------------------------------------------------------
    // Per-stream order is publish order (design §4): when the last one (tools/list_changed)
    // is in, anything wrongly delivered from the earlier publishes is in too; then a quiet
    // period catches stragglers.
    t.stage = 'publish';
    const pubA = { uri: URI_A, _meta: { 'test/seq': 1, 'origin/rev': 'r1' } };
    const pubInDir = { uri: URI_IN_DIR, _meta: { 'test/seq': 4 } };
    await publish(base, { method: 'notifications/resources/updated', params: pubA });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER, _meta: { 'test/seq': 2 } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_PREFIX_TRAP, _meta: { 'test/seq': 3 } } });
    await publish(base, { method: 'notifications/resources/updated', params: pubInDir });
    await publish(base, { method: 'notifications/tools/list_changed' });

    t.stage = 'receive';
    const rawGet = () => get.sse ?? '';
    await waitUntil(
        () => received.some(n => n.method === 'notifications/tools/list_changed'),
        STEP_TIMEOUT_MS,
        'notifications/tools/list_changed on the session\'s GET stream'
    ).catch(e => {
        fail(`${e.message}; received so far: ${JSON.stringify(received)}; GET stream ${get.sseEnded ? `ended (${get.sseEnded})` : 'open'}, raw: ${JSON.stringify(short(rawGet(), 2000))}`);
    });
    await sleep(QUIET_MS);
    const got1 = JSON.stringify(received);
    const methods1 = received.map(n => `${n.method}${n.params?.uri ? ` ${n.params.uri}` : ''}`);
    const want1 = [`notifications/resources/updated ${URI_A}`, `notifications/resources/updated ${URI_IN_DIR}`, 'notifications/tools/list_changed'];
    if (JSON.stringify(methods1) !== JSON.stringify(want1))
        fail(`expected exactly ${JSON.stringify(want1)} in this order, got ${JSON.stringify(methods1)}: ${got1}`);
    // What the SDK handed to user code: uri and the publisher's _meta keys.
    const [updA, updDir] = received;
    if (updA.params.uri !== URI_A || updA.params._meta?.['test/seq'] !== 1 || updA.params._meta?.['origin/rev'] !== 'r1')
        fail(`resources/updated as delivered to the handler lost params/_meta: ${JSON.stringify(updA)} (published ${JSON.stringify(pubA)})`);
    if (updDir.params._meta?.['test/seq'] !== 4) fail(`sub-resource update delivered as ${JSON.stringify(updDir)}`);

    // Raw stream: exactly these three JSON-RPC notifications, params verbatim.
    const rawMsgs1 = sseDataMessages(rawGet());
    if (rawMsgs1.length !== 3) fail(`expected 3 data events on the GET stream, saw ${rawMsgs1.length}: ${JSON.stringify(short(rawGet(), 2000))}`);
    for (const m of rawMsgs1) {
        if (m.jsonrpc !== '2.0' || 'id' in m || Object.keys(m).some(k => !['jsonrpc', 'method', 'params'].includes(k)))
            fail(`GET stream carries a message that is not a plain JSON-RPC notification: ${JSON.stringify(m)}`);
    }
    checkVerbatim(rawMsgs1[0].params, pubA, 'resources/updated (a.txt)');
    checkVerbatim(rawMsgs1[1].params, pubInDir, 'resources/updated (dir/c.txt)');
    checkVerbatim(rawMsgs1[2].params, undefined, 'tools/list_changed');
    const subIdSeen = rawMsgs1.some(m => m.params?._meta?.[SUB_ID_KEY] !== undefined);
    checkEventLines(rawGet(), ' (the SDK ignores such events)');
    const idLines = /^id:/m.test(rawGet());

    // -- unsubscribe, then publish: only the marker and the still-subscribed dir may arrive ---
    t.stage = 'unsubscribe';
    const un = await withTimeout(client.unsubscribeResource({ uri: URI_A }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `resources/unsubscribe ${URI_A}`);
    if (Object.keys(un ?? {}).length !== 0) fail(`resources/unsubscribe returned ${JSON.stringify(un)}, expected {}`);
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 5 } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_IN_DIR, _meta: { 'test/seq': 6 } } });
    await publish(base, { method: 'notifications/prompts/list_changed' }); // the marker
    await waitUntil(
        () => received.some(n => n.method === 'notifications/prompts/list_changed'),
        STEP_TIMEOUT_MS,
        'notifications/prompts/list_changed (the marker after the post-unsubscribe publishes)'
    ).catch(e => {
        fail(`${e.message}; received so far: ${JSON.stringify(received)}; raw GET stream: ${JSON.stringify(short(rawGet(), 3000))}`);
    });
    await sleep(QUIET_MS);
    const after = received.slice(3);
    const methods2 = after.map(n => `${n.method}${n.params?.uri ? ` ${n.params.uri}` : ''}`);
    const want2 = [`notifications/resources/updated ${URI_IN_DIR}`, 'notifications/prompts/list_changed'];
    if (JSON.stringify(methods2) !== JSON.stringify(want2))
        fail(
            `after unsubscribing ${URI_A} expected exactly ${JSON.stringify(want2)}, got ${JSON.stringify(methods2)}: ${JSON.stringify(after)}` +
                (after.some(n => n.params?.uri === URI_A) ? ' — an update for the unsubscribed URI arrived' : '')
        );
    if (after[0].params._meta?.['test/seq'] !== 6) fail(`wrong dir update after unsubscribe: ${JSON.stringify(after[0])}`);

    // -- close: DELETE, then client.close() -------------------------------------------------
    t.stage = 'close';
    const errorsBeforeClose = t.clientErrors.length;
    await withTimeout(transport.terminateSession(), STEP_TIMEOUT_MS, 'transport.terminateSession() (DELETE /mcp)');
    const del = findExchange(x => x.method === 'DELETE');
    if (!del) fail('no DELETE was recorded');
    if (del.reqHeaders['mcp-session-id'] !== sessionId) fail(`DELETE carried ${JSON.stringify(del.reqHeaders)}`);
    if (del.status === 405) fail('DELETE /mcp answered 405 (design §2.2: DELETE ends the session)');
    if (del.status < 200 || del.status > 299) fail(`DELETE /mcp answered ${del.status} ${del.resBody ?? ''}`);
    // The session's GET stream must end with it.
    await waitUntil(() => get.sseEnded, STEP_TIMEOUT_MS, 'the server to end the session\'s GET stream after DELETE').catch(e => {
        fail(`${e.message}; raw GET stream: ${JSON.stringify(short(rawGet(), 2000))}`);
    });
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');

    // The deleted session id is unknown now: 404 (MCP 2025-11-25 transports; design §2.2).
    t.stage = 'stale session';
    for (const [method, body, accept] of [
        ['POST', JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'ping' }), 'application/json, text/event-stream'],
        ['GET', undefined, 'text/event-stream']
    ]) {
        const ac = new AbortController();
        const res = await withTimeout(
            fetch(mcpUrl, {
                method,
                signal: ac.signal,
                headers: {
                    accept,
                    'mcp-session-id': sessionId,
                    'mcp-protocol-version': negotiated,
                    ...(body ? { 'content-type': 'application/json' } : {})
                },
                body
            }),
            STEP_TIMEOUT_MS,
            `${method} /mcp with the deleted session id`
        );
        const text = (res.headers.get('content-type') ?? '').startsWith('text/event-stream') ? '(event stream)' : await res.text();
        ac.abort();
        if (res.status !== 404) fail(`${method} /mcp with the deleted session id answered ${res.status} ${short(text)}, expected 404`);
    }

    // -- gauges back to their starting values ---------------------------------------------
    t.stage = 'metrics';
    let last;
    const settled = async () => {
        last = await gauges(base);
        return Object.keys(before).every(k => NOT_CLIENT_STATE.has(k) || last[k] === before[k]);
    };
    await waitUntil(settled, STEP_TIMEOUT_MS, 'per-client gauges to return to their pre-test values', 50).catch(e => {
        const diff = Object.keys(before)
            .filter(k => !NOT_CLIENT_STATE.has(k) && last?.[k] !== before[k])
            .map(k => `${k}: before ${before[k]}, during ${during[k]}, now ${last?.[k]}`);
        fail(`${e.message}: ${diff.join('; ')}`);
    });
    const checked = Object.keys(before).filter(k => !NOT_CLIENT_STATE.has(k));
    const rose = Object.keys(during).filter(k => !NOT_CLIENT_STATE.has(k) && during[k] > (before[k] ?? 0));
    if (rose.length === 0) notes.push('no /metrics gauge counted the open session (e.g. a sessions gauge) — the return-to-zero check proves little');

    if (t.clientErrors.length > errorsBeforeClose)
        notes.push(`client.onerror after DELETE/close (expected: the aborted GET stream): ${t.clientErrors.slice(errorsBeforeClose).map(e => e.text).join(' | ')}`);
    if (errorsBeforeClose > 0) fail(`the SDK reported ${errorsBeforeClose} error(s) through client.onerror before the close`);

    if (process.env.SDKV1_VERBOSE) {
        rec.dump('SDK HTTP exchanges (SDKV1_VERBOSE)');
    }
    for (const n of [
        `GET stream ${idLines ? 'carries' : 'has no'} SSE id: lines${idLines ? ' (the SDK will reconnect with Last-Event-ID after a drop)' : ''}`,
        `server ${subIdSeen ? 'adds' : 'does not add'} _meta["${SUB_ID_KEY}"] on session notifications`,
        ...notes
    ])
        console.log(`${NAME}: note: ${n}`);
    console.log(
        `${NAME}: PASS — @modelcontextprotocol/sdk Client negotiated ${negotiated}, session ${JSON.stringify(sessionId)}, ` +
            `GET stream delivered 5/5 expected notifications and none of 3 filtered ones, DELETE ${del.status}, ` +
            `stale session 404, gauges back to start (checked ${checked.join(', ')}; rose during the session: ${rose.length ? rose.join(', ') : 'none'})`
    );
}

t.run(main);

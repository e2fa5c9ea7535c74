// Interop test: an official TypeScript SDK client in a 2025-era session with
// `mcpfan --upstream` in front of the official SDK 1.x example server (simpleStreamableHttp.js).
//
//   node session_2025.mjs http://127.0.0.1:MCPFAN_PORT v1|v2|v2-auto http://127.0.0.1:UPSTREAM_PORT UPSTREAM_STDOUT_LOG
//
// v1: @modelcontextprotocol/sdk@1.32.2 (Client + StreamableHTTPClientTransport); v2:
// @modelcontextprotocol/client@2.4.0 in its default 'legacy' negotiation mode (the plain 2025
// initialize); v2-auto: the same client in 'auto' mode, whose server/discover probe mcpfan
// forwards to the 2025-only upstream, and whose refusal makes the client fall back to
// initialize. All talk only to mcpfan. What is checked, in order:
//   1. initialize is answered by the upstream (its serverInfo, its own capabilities kept) with
//      mcpfan's capabilities merged in: resources.subscribe = true, which the example alone does
//      not declare (asked directly with a raw initialize first);
//   2. tools/call `greet` is answered by the upstream through mcpfan;
//   3. resources/subscribe (answered by mcpfan), a publish to mcpfan's /v1/publish, and the
//      client's handler receives notifications/resources/updated for that URI (and not for an
//      unsubscribed one); resources/unsubscribe stops it;
//   4. tools/call `start-notification-stream`: the upstream's own notifications/message (sent on
//      the session's GET stream, which mcpfan merges with its own) reach the client's handler;
//   5. close: DELETE (the upstream ends the session; mcpfan's session gauge returns to its value
//      before the test).
// The upstream's stdout log is read for one event: "Establishing new SSE stream for session
// <id>", i.e. mcpfan's leg of the GET stream reached the upstream (before it, the example drops
// the notifications of step 4, as it would for a direct client without a GET stream).

import fs from 'node:fs';
import { STEP_TIMEOUT_MS, createRecorder, createTest, fail, loopbackBaseArg, metric, publish, short, waitUntil, withTimeout } from '../lib/common.mjs';

const sdk = process.argv[3];
const upstreamBase = process.argv[4];
const upstreamLog = process.argv[5];
if (!['v1', 'v2', 'v2-auto'].includes(sdk) || !upstreamBase || !upstreamLog) {
    console.error('usage: node session_2025.mjs http://127.0.0.1:MCPFAN_PORT v1|v2|v2-auto http://127.0.0.1:UPSTREAM_PORT UPSTREAM_STDOUT_LOG');
    process.exit(2);
}
const NAME = `interop_proxy_sdk (SDK ${sdk}, 2025 session)`;
const URI_A = `file:///interop/proxy/${sdk}/a.txt`;
const URI_B = `file:///interop/proxy/${sdk}/b.txt`;
const URI_UNSUBSCRIBED = `file:///interop/proxy/${sdk}/never.txt`;
const STREAMED = 3; // start-notification-stream's count

// The two SDKs differ in imports, in how a notification handler is keyed (v1: a zod schema,
// v2: the method name), in the negotiation option and in callTool's arguments (v1 takes a result
// schema before the options); the rest of their client API is the same.
async function loadSdk() {
    if (sdk === 'v1') {
        const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        const types = await import('@modelcontextprotocol/sdk/types.js');
        return {
            Client,
            StreamableHTTPClientTransport,
            clientOptions: { capabilities: {} },
            handlerKeys: { updated: types.ResourceUpdatedNotificationSchema, message: types.LoggingMessageNotificationSchema },
            callTool: (client, params, options) => client.callTool(params, undefined, options)
        };
    }
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    return {
        Client,
        StreamableHTTPClientTransport,
        clientOptions: { capabilities: {}, versionNegotiation: sdk === 'v2' ? { mode: 'legacy' } : { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } },
        handlerKeys: { updated: 'notifications/resources/updated', message: 'notifications/message' },
        callTool: (client, params, options) => client.callTool(params, options)
    };
}

const rec = createRecorder();
const t = createTest(NAME, { report: () => rec.dump() });

// A raw initialize straight to the upstream, to know what it declares by itself; the session it
// opens is deleted again.
async function upstreamInitialize() {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const res = await withTimeout(
        fetch(`${upstreamBase}/mcp`, {
            method: 'POST',
            headers,
            body: JSON.stringify({
                jsonrpc: '2.0',
                id: 1,
                method: 'initialize',
                params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcpfan-interop-probe', version: '1.0.0' } }
            })
        }),
        STEP_TIMEOUT_MS,
        'a direct initialize to the upstream'
    );
    const text = await withTimeout(res.text(), STEP_TIMEOUT_MS, 'the upstream initialize body');
    const data = text.split('\n').filter(l => l.startsWith('data:') && l.length > 6).map(l => JSON.parse(l.slice(5)));
    const result = (data.length ? data : [JSON.parse(text)]).find(m => m.id === 1)?.result;
    if (res.status !== 200 || !result) fail(`direct initialize to the upstream answered ${res.status}: ${short(text)}`);
    const sid = res.headers.get('mcp-session-id');
    if (sid) {
        const del = await fetch(`${upstreamBase}/mcp`, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
        await del.text();
    }
    return result;
}

function uriOf(n) {
    return n.params?.uri;
}

async function main() {
    const base = loopbackBaseArg('session_2025.mjs');
    const { Client, StreamableHTTPClientTransport, clientOptions, handlerKeys, callTool } = await loadSdk();

    t.stage = 'upstream alone';
    const alone = await upstreamInitialize();
    if (alone.capabilities?.resources?.subscribe === true)
        fail(`the upstream declares resources.subscribe by itself (${JSON.stringify(alone.capabilities)}); step 1 would not show mcpfan's merge`);
    const sessionsBefore = await metric(base, 'mcpfan_sessions_active');
    const forwardedBefore = await metric(base, 'mcpfan_upstream_requests_total');

    // -- 1. initialize through mcpfan ---------------------------------------------------------
    t.stage = 'connect';
    const client = new Client({ name: `mcpfan-interop-proxy-sdk-${sdk}`, version: '1.0.0' }, clientOptions);
    client.onerror = t.onClientError;
    const updated = [];
    const messages = [];
    client.setNotificationHandler(handlerKeys.updated, n => void updated.push(n));
    client.setNotificationHandler(handlerKeys.message, n => void messages.push(n));
    // A long reconnection delay: a dropped GET stream shows in the wire log instead of being
    // papered over by the SDK's reconnect after 1 s.
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
        fetch: rec.fetch,
        reconnectionOptions: { initialReconnectionDelay: 60_000, maxReconnectionDelay: 60_000, reconnectionDelayGrowFactor: 1, maxRetries: 1 }
    });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect() (initialize through mcpfan)');
    if (sdk !== 'v1' && (client.getProtocolEra() !== 'legacy' || client.getNegotiatedProtocolVersion() !== '2025-11-25'))
        fail(`SDK ${sdk} negotiated ${client.getNegotiatedProtocolVersion()} (era ${client.getProtocolEra()}) with a 2025-only upstream, expected 2025-11-25 (legacy)`);
    const probe = rec.rpc('server/discover');
    if ((sdk === 'v2-auto') !== Boolean(probe)) fail(`SDK ${sdk}: server/discover probe ${probe ? 'sent' : 'not sent'}`);
    if (probe && (probe.status < 400 || probe.status >= 500))
        fail(`the server/discover probe through mcpfan answered ${probe.status} ${probe.resBody ?? ''}; the 2025-only upstream refuses it (4xx), and mcpfan must relay that`);
    const init = rec.rpc('initialize');
    const sessionId = init?.resHeaders?.['mcp-session-id'];
    if (!sessionId) fail(`initialize through mcpfan answered ${init?.status} without Mcp-Session-Id: ${JSON.stringify(init?.resHeaders)}`);
    const caps = client.getServerCapabilities() ?? {};
    if (caps.resources?.subscribe !== true) fail(`capabilities through mcpfan ${JSON.stringify(caps)} lack resources.subscribe = true (mcpfan's merge)`);
    for (const k of Object.keys(alone.capabilities ?? {})) {
        if (!(k in caps)) fail(`capability '${k}' of the upstream (${JSON.stringify(alone.capabilities)}) is missing through mcpfan: ${JSON.stringify(caps)}`);
    }
    if (caps.resources?.listChanged !== true || caps.tools?.listChanged !== true || caps.prompts?.listChanged !== true)
        fail(`capabilities through mcpfan ${JSON.stringify(caps)} lack the listChanged flags mcpfan adds`);
    const info = client.getServerVersion();
    if (info?.name !== alone.serverInfo?.name) fail(`serverInfo through mcpfan is ${JSON.stringify(info)}, the upstream's is ${JSON.stringify(alone.serverInfo)}`);

    // The SDK opens the GET stream after notifications/initialized's 202; mcpfan answers it and
    // opens its own leg to the upstream, whose log line says when that leg is in.
    t.stage = 'GET stream';
    await waitUntil(() => rec.find(x => x.method === 'GET')?.status !== undefined, STEP_TIMEOUT_MS, "the answer to the SDK's GET /mcp");
    const get = rec.find(x => x.method === 'GET');
    if (get.status !== 200 || !(get.resHeaders?.['content-type'] ?? '').startsWith('text/event-stream'))
        fail(`GET /mcp through mcpfan answered ${get.status} ${JSON.stringify(get.resHeaders)} ${get.resBody ?? ''}`);
    const legLine = `Establishing new SSE stream for session ${sessionId}`;
    await waitUntil(() => fs.readFileSync(upstreamLog, 'utf8').includes(legLine), STEP_TIMEOUT_MS, `the upstream's log line '${legLine}' (mcpfan's GET leg)`);

    // -- 2. a tool call, answered by the upstream -----------------------------------------------
    t.stage = 'tools/call greet';
    const greeting = await withTimeout(
        callTool(client, { name: 'greet', arguments: { name: `SDK ${sdk} via mcpfan` } }, { timeout: STEP_TIMEOUT_MS }),
        STEP_TIMEOUT_MS + 2000,
        'tools/call greet'
    );
    const greetText = greeting?.content?.[0]?.text;
    if (greetText !== `Hello, SDK ${sdk} via mcpfan!`) fail(`greet returned ${JSON.stringify(greeting)}`);

    // -- 3. subscribe (mcpfan), publish (mcpfan), receive -----------------------------------------
    t.stage = 'subscribe';
    for (const uri of [URI_A, URI_B]) {
        const r = await withTimeout(client.subscribeResource({ uri }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `resources/subscribe ${uri}`);
        if (Object.keys(r ?? {}).length !== 0) fail(`resources/subscribe ${uri} returned ${JSON.stringify(r)}, expected {}`);
    }
    t.stage = 'publish';
    // Per-stream order is publish order: once A's update is in, the unsubscribed URI's (published
    // first) would have arrived too.
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_UNSUBSCRIBED } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/rev': 7 } } });
    await waitUntil(() => updated.some(n => uriOf(n) === URI_A), STEP_TIMEOUT_MS, `notifications/resources/updated for ${URI_A}`).catch(e => {
        fail(`${e.message}; received: ${JSON.stringify(updated)}; GET stream raw: ${JSON.stringify(short(get.sse ?? '', 2000))}`);
    });
    if (updated.length !== 1 || updated[0].params?._meta?.['test/rev'] !== 7)
        fail(`expected exactly the update for ${URI_A} with _meta test/rev 7, got ${JSON.stringify(updated)}`);

    t.stage = 'unsubscribe';
    await withTimeout(client.unsubscribeResource({ uri: URI_A }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `resources/unsubscribe ${URI_A}`);
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/rev': 8 } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_B } });
    await waitUntil(() => updated.some(n => uriOf(n) === URI_B), STEP_TIMEOUT_MS, `notifications/resources/updated for ${URI_B}`);
    const uris = updated.map(uriOf);
    if (JSON.stringify(uris) !== JSON.stringify([URI_A, URI_B])) fail(`after unsubscribing ${URI_A}, expected updates [A, B], got ${JSON.stringify(uris)}`);

    // -- 4. the upstream's own notifications, on the merged GET stream ----------------------------
    t.stage = 'start-notification-stream';
    const started = await withTimeout(
        callTool(client, { name: 'start-notification-stream', arguments: { interval: 20, count: STREAMED } }, { timeout: STEP_TIMEOUT_MS }),
        STEP_TIMEOUT_MS + 2000,
        'tools/call start-notification-stream'
    );
    if (!started?.content?.[0]?.text?.startsWith('Started sending periodic notifications'))
        fail(`start-notification-stream returned ${JSON.stringify(started)}`);
    await waitUntil(() => messages.length >= STREAMED, STEP_TIMEOUT_MS, `${STREAMED} notifications/message from the upstream`).catch(e => {
        fail(`${e.message}; received ${JSON.stringify(messages)}; GET stream raw: ${JSON.stringify(short(get.sse ?? '', 2000))}`);
    });
    const texts = messages.map(n => String(n.params?.data ?? ''));
    for (let i = 1; i <= STREAMED; i++) {
        if (!texts[i - 1]?.startsWith(`Periodic notification #${i} `)) fail(`notifications/message in order #1..#${STREAMED} expected, got ${JSON.stringify(texts)}`);
    }
    const onGet = (get.sse ?? '').includes('Periodic notification #1 ');
    const forwarded = (await metric(base, 'mcpfan_upstream_requests_total')) - forwardedBefore;

    // -- 5. close: DELETE -----------------------------------------------------------------------
    t.stage = 'close';
    await withTimeout(transport.terminateSession(), STEP_TIMEOUT_MS, 'DELETE /mcp (terminateSession)');
    const del = rec.find(x => x.method === 'DELETE');
    if (del?.status !== 200) fail(`DELETE through mcpfan answered ${del?.status} ${del?.resBody ?? ''}`);
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');
    await waitUntil(async () => (await metric(base, 'mcpfan_sessions_active')) === sessionsBefore, STEP_TIMEOUT_MS, `mcpfan_sessions_active back to ${sessionsBefore}`);

    console.log(
        `${NAME}: PASS — upstream '${info.name}' answered initialize (mcpfan merged resources.subscribe) and greet; ` +
            `subscribe/publish/unsubscribe via mcpfan delivered [A, B]; ${STREAMED} upstream notifications/message arrived ` +
            `${onGet ? 'on the merged GET stream' : 'on a POST stream'}; ${forwarded} requests forwarded; DELETE 200`
    );
}

t.run(main);

// Interop test: the official TypeScript SDK v2 client (@modelcontextprotocol/client@2.4.0) in
// 2026-07-28 mode with `mcpfan --upstream` in front of a 2026 MCP server on the official SDK v2
// (../upstream_v2/server.mjs).
//
//   node listen_2026.mjs http://127.0.0.1:MCPFAN_PORT http://127.0.0.1:UPSTREAM_PORT
//
// The client talks only to mcpfan (versionNegotiation 'auto'). Checked:
//   1. the server/discover probe is answered by the upstream (its serverInfo) through mcpfan, and
//      the client settles on the modern era, 2026-07-28;
//   2. tools/call `echo` is answered by the upstream;
//   3. client.listen() for one URI is acknowledged with that filter, a publish to mcpfan's
//      /v1/publish for that URI reaches the client's handler tagged with the listen's
//      subscriptionId (one for another URI does not), and closing the listen ends mcpfan's
//      stream;
//   4. the upstream's GET /stats counts: the discover and the tool call reached it; no
//      subscriptions/listen did (mcpfan answered it).

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { STEP_TIMEOUT_MS, SUB_ID_KEY, createRecorder, createTest, fail, loopbackBaseArg, publish, short, waitForGauge, waitUntil, withTimeout } from '../lib/common.mjs';

const NAME = 'interop_proxy_sdk (SDK v2, 2026-07-28)';
const VERSION = '2026-07-28';
const URI_A = 'file:///interop/proxy/v2026/a.txt';
const URI_OTHER = 'file:///interop/proxy/v2026/other.txt';

const upstreamBase = process.argv[3];
if (!upstreamBase) {
    console.error('usage: node listen_2026.mjs http://127.0.0.1:MCPFAN_PORT http://127.0.0.1:UPSTREAM_PORT');
    process.exit(2);
}

const rec = createRecorder();
const t = createTest(NAME, { report: () => rec.dump() });

async function upstreamCounts() {
    const res = await withTimeout(fetch(`${upstreamBase}/stats`), STEP_TIMEOUT_MS, 'GET /stats of the upstream');
    const body = await withTimeout(res.json(), STEP_TIMEOUT_MS, 'the upstream /stats body');
    return body.requests ?? {};
}
const delta = (after, before, key) => (after[key] ?? 0) - (before[key] ?? 0);

async function main() {
    const base = loopbackBaseArg('listen_2026.mjs');
    const before = await upstreamCounts();

    // -- 1. connect: the discover probe goes through mcpfan to the upstream -----------------------
    t.stage = 'connect';
    const client = new Client(
        { name: 'mcpfan-interop-proxy-sdk-v2026', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } }
    );
    client.onerror = t.onClientError;
    const received = [];
    client.setNotificationHandler('notifications/resources/updated', n => void received.push(n));
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), { fetch: rec.fetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect() (server/discover through mcpfan)');
    if (client.getProtocolEra() !== 'modern' || client.getNegotiatedProtocolVersion() !== VERSION)
        fail(`negotiated ${client.getNegotiatedProtocolVersion()} (era ${client.getProtocolEra()}) through mcpfan, expected ${VERSION}`);
    const info = client.getServerVersion();
    if (info?.name !== 'upstream_v2') fail(`serverInfo through mcpfan is ${JSON.stringify(info)}, expected the upstream's (upstream_v2)`);
    const caps = client.getServerCapabilities() ?? {};
    if (caps.resources?.subscribe !== true || caps.tools?.listChanged !== true)
        fail(`capabilities through mcpfan ${JSON.stringify(caps)} lack resources.subscribe / tools.listChanged`);

    // -- 2. a tool call, answered by the upstream -----------------------------------------------
    t.stage = 'tools/call echo';
    const echoed = await withTimeout(
        client.callTool({ name: 'echo', arguments: { text: 'through mcpfan' } }, { timeout: STEP_TIMEOUT_MS }),
        STEP_TIMEOUT_MS + 2000,
        'tools/call echo'
    );
    if (echoed?.content?.[0]?.text !== 'through mcpfan') fail(`echo returned ${JSON.stringify(echoed)}`);

    // -- 3. listen (mcpfan), publish (mcpfan), receive ------------------------------------------
    t.stage = 'listen';
    const filter = { resourceSubscriptions: [URI_A] };
    const sub = await withTimeout(client.listen(filter, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.listen() acknowledgement');
    if (JSON.stringify(sub.honoredFilter?.resourceSubscriptions) !== JSON.stringify([URI_A]))
        fail(`acknowledged filter ${JSON.stringify(sub.honoredFilter)} != requested ${JSON.stringify(filter)}`);
    const listenEx = rec.rpc('subscriptions/listen');
    const listenId = listenEx?.request?.id;
    await waitForGauge(base, 'mcpfan_listen_streams_open', 1);

    t.stage = 'publish';
    // Per-stream order is publish order: once A's update is in, the other URI's would be too.
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/rev': 3 } } });
    await waitUntil(() => received.length > 0, STEP_TIMEOUT_MS, `notifications/resources/updated for ${URI_A} on the listen`).catch(e => {
        fail(`${e.message}; listen stream raw: ${JSON.stringify(short(listenEx?.sse ?? '', 2000))}`);
    });
    const got = received[0].params;
    if (received.length !== 1 || got?.uri !== URI_A || got?._meta?.[SUB_ID_KEY] !== listenId || got?._meta?.['test/rev'] !== 3)
        fail(`expected one update for ${URI_A} tagged ${SUB_ID_KEY}=${JSON.stringify(listenId)} with test/rev 3, got ${JSON.stringify(received)}`);

    t.stage = 'close';
    await withTimeout(sub.close(), STEP_TIMEOUT_MS, 'subscription.close()');
    await waitForGauge(base, 'mcpfan_listen_streams_open', 0);
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');

    // -- 4. what the upstream saw -------------------------------------------------------------------
    t.stage = 'upstream counts';
    const after = await upstreamCounts();
    const seen = {
        discover: delta(after, before, '2026 server/discover'),
        toolsCall: delta(after, before, '2026 tools/call'),
        listen: delta(after, before, '2026 subscriptions/listen')
    };
    if (seen.discover < 1 || seen.toolsCall !== 1 || seen.listen !== 0)
        fail(`the upstream saw ${JSON.stringify(seen)} (want discover >= 1, tools/call 1, subscriptions/listen 0); its /stats: ${JSON.stringify(after)}`);

    console.log(
        `${NAME}: PASS — discover and echo answered by '${info.name}' through mcpfan (${seen.discover} discover, 1 tools/call at the upstream); ` +
            `listen acknowledged and served by mcpfan (0 listens at the upstream); the publish for ${URI_A} arrived tagged ${JSON.stringify(listenId)}`
    );
}

t.run(main);

// Interop test: the official MCP TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0,
// the pinned packages of ../sdk_v2) over HTTPS, the test CA trusted through NODE_EXTRA_CA_CERTS
// (run.sh sets it; the SDK's fetch is Node's, which honours it).
//
//   node client.mjs direct https://localhost:PORT PUBLISH_BASE
//   node client.mjs proxy  https://localhost:PORT PUBLISH_BASE https://localhost:UPSTREAM_PORT
//
// direct: mcpfan with TLS answers the SDK's server/discover probe itself (serverInfo mcpfan,
//   2026-07-28), client.discover() again; client.listen() for one URI is acknowledged, a publish
//   for it (to PUBLISH_BASE, mcpfan's plaintext --publish-listen) arrives tagged with the
//   listen's subscriptionId, one for another URI does not; closing frees the stream.
// proxy: mcpfan with TLS and `--upstream https://localhost:UPSTREAM_PORT/mcp --upstream-ca-file
//   ca.pem` in front of ../upstream_v2 (SDK v2 server) served over HTTPS: the discover probe and
//   tools/call `echo` are answered by the upstream through mcpfan; the listen is served by mcpfan
//   (the upstream's GET /stats counts no subscriptions/listen) and receives a publish.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

import { STEP_TIMEOUT_MS, SUB_ID_KEY, checkDiscover, createRecorder, createTest, fail, metric, publish, short, sleep, waitForGauge, waitUntil, withTimeout, QUIET_MS } from '../lib/common.mjs';

// The SDK from ../sdk_v2/node_modules (this folder has no packages of its own): the file its
// package.json exports for `import`.
const sdkDir = new URL('../sdk_v2/node_modules/@modelcontextprotocol/client/', import.meta.url);
const sdkPkg = JSON.parse(readFileSync(new URL('package.json', sdkDir), 'utf8'));
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(new URL(sdkPkg.exports['.'].import.default, sdkDir).pathname).href);

const [mode, mcpBase, publishBase, upstreamBase] = process.argv.slice(2);
if (!['direct', 'proxy'].includes(mode) || !/^https:\/\/localhost:\d+$/.test(mcpBase ?? '') || !/^http:\/\/127\.0\.0\.1:\d+$/.test(publishBase ?? '') || (mode === 'proxy' && !upstreamBase)) {
    console.error('usage: node client.mjs direct|proxy https://localhost:PORT http://127.0.0.1:PUBLISH_PORT [https://localhost:UPSTREAM_PORT]');
    process.exit(2);
}
const NAME = `interop_sdk_v2_https (${mode})`;
const VERSION = '2026-07-28';
const URI_A = `file:///interop/https/${mode}/a.txt`;
const URI_OTHER = `file:///interop/https/${mode}/other.txt`;

const rec = createRecorder();
const t = createTest(NAME, { report: () => rec.dump() });

async function upstreamCounts() {
    const res = await withTimeout(fetch(`${upstreamBase}/stats`), STEP_TIMEOUT_MS, 'GET /stats of the upstream (HTTPS)');
    return (await withTimeout(res.json(), STEP_TIMEOUT_MS, 'the upstream /stats body')).requests ?? {};
}

async function main() {
    const before = mode === 'proxy' ? await upstreamCounts() : {};
    const upstreamRequests0 = mode === 'proxy' ? await metric(publishBase, 'mcpfan_upstream_requests_total') : 0;

    t.stage = 'connect over HTTPS';
    const client = new Client({ name: 'mcpfan-interop-sdk-v2-https', version: '1.0.0' }, { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } });
    client.onerror = t.onClientError;
    const received = [];
    client.setNotificationHandler('notifications/resources/updated', n => void received.push(n));
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', mcpBase), { fetch: rec.fetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `client.connect() to ${mcpBase}`);
    if (client.getProtocolEra() !== 'modern' || client.getNegotiatedProtocolVersion() !== VERSION)
        fail(`negotiated ${client.getNegotiatedProtocolVersion()} (era ${client.getProtocolEra()}), expected ${VERSION}`);
    const info = client.getServerVersion();
    const wantServer = mode === 'direct' ? 'mcpfan' : 'upstream_v2';
    if (info?.name !== wantServer) fail(`serverInfo is ${JSON.stringify(info)}, expected ${wantServer}`);

    if (mode === 'direct') {
        t.stage = 'server/discover';
        checkDiscover(client.getDiscoverResult(), 'probe discover result', [VERSION]);
        const d = await withTimeout(client.discover({ timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.discover()');
        checkDiscover(d, 'client.discover()', [VERSION]);
    } else {
        t.stage = 'tools/call echo through mcpfan';
        const echoed = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'over https twice' } }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'tools/call echo');
        if (echoed?.content?.[0]?.text !== 'over https twice') fail(`echo returned ${JSON.stringify(echoed)}`);
    }

    t.stage = 'listen';
    const sub = await withTimeout(client.listen({ resourceSubscriptions: [URI_A] }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.listen() acknowledgement');
    if (JSON.stringify(sub.honoredFilter?.resourceSubscriptions) !== JSON.stringify([URI_A])) fail(`acknowledged filter ${JSON.stringify(sub.honoredFilter)}`);
    const listenEx = rec.rpc('subscriptions/listen');
    const listenId = listenEx?.request?.id;
    if (listenEx?.status !== 200 || !(listenEx.resHeaders?.['content-type'] ?? '').startsWith('text/event-stream'))
        fail(`listen answered ${listenEx?.status} ${JSON.stringify(listenEx?.resHeaders)}`);
    await waitForGauge(publishBase, 'mcpfan_listen_streams_open', 1);

    t.stage = 'publish';
    // Per-stream order is publish order: once A's update is in, the other URI's would be too.
    await publish(publishBase, { method: 'notifications/resources/updated', params: { uri: URI_OTHER } });
    await publish(publishBase, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/rev': 7 } } });
    await waitUntil(() => received.length > 0, STEP_TIMEOUT_MS, `notifications/resources/updated for ${URI_A}`).catch(e =>
        fail(`${e.message}; listen stream raw: ${JSON.stringify(short(listenEx?.sse ?? '', 2000))}`)
    );
    await sleep(QUIET_MS);
    const got = received[0].params;
    if (received.length !== 1 || got?.uri !== URI_A || got?._meta?.[SUB_ID_KEY] !== listenId || got?._meta?.['test/rev'] !== 7)
        fail(`expected one update for ${URI_A} tagged ${SUB_ID_KEY}=${JSON.stringify(listenId)} with test/rev 7, got ${JSON.stringify(received)}`);

    t.stage = 'close';
    await withTimeout(sub.close(), STEP_TIMEOUT_MS, 'subscription.close()');
    await waitForGauge(publishBase, 'mcpfan_listen_streams_open', 0);
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');
    if (t.clientErrors.length > 0) fail(`the SDK reported ${t.clientErrors.length} error(s) through client.onerror`);

    let extra = '';
    if (mode === 'proxy') {
        t.stage = 'what the upstream saw';
        const after = await upstreamCounts();
        const d = k => (after[k] ?? 0) - (before[k] ?? 0);
        const seen = { discover: d('2026 server/discover'), toolsCall: d('2026 tools/call'), listen: d('2026 subscriptions/listen') };
        if (seen.discover < 1 || seen.toolsCall !== 1 || seen.listen !== 0)
            fail(`the upstream saw ${JSON.stringify(seen)} (want discover >= 1, tools/call 1, subscriptions/listen 0); its /stats: ${JSON.stringify(after)}`);
        const forwarded = (await metric(publishBase, 'mcpfan_upstream_requests_total')) - upstreamRequests0;
        if (forwarded < 2) fail(`mcpfan_upstream_requests_total moved by ${forwarded}, expected >= 2 (discover, tools/call)`);
        extra = `; discover and echo answered by upstream_v2 over HTTPS (${forwarded} forwarded), listen served by mcpfan`;
    }
    console.log(`${NAME}: PASS — SDK v2 over HTTPS negotiated ${VERSION} with ${info.name}; listen ${JSON.stringify(listenId)} got its one publish${extra}`);
}

t.run(main);

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
import { QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY, createRecorder, createTest, fail, loopbackBaseArg, short, sleep, waitUntil, withTimeout } from '../lib/common.mjs';
import { canon, checkDiscover, checkEventLines, collectNotifications, publish, waitForGauge } from '../lib/common.mjs';

const NAME = 'interop_sdk_v2';
const EXPECTED_VERSION = '2026-07-28';
const URI_A = 'file:///interop/a.txt';
const URI_OTHER = 'file:///interop/b.txt';
// Starts with URI_A, but URI_A does not end with '/', so it is not a sub-resource (design §4).
const URI_PREFIX_TRAP = 'file:///interop/a.txt.bak';

// Failure reporting, bounded waits, the recording fetch and the publish/metrics helpers are in
// ../lib/common.mjs; a failure prints the stage, the client.onerror reports and the wire log.
const rec = createRecorder();
const t = createTest(NAME, { report: () => rec.dump() });

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

// ---------------------------------------------------------------------------------------
// the test

async function main() {
    const base = loopbackBaseArg('listen.mjs');
    const mcpUrl = new URL('/mcp', base);

    // -- connect with version negotiation 'auto' ------------------------------------------
    t.stage = 'connect';
    const client = new Client(
        { name: 'mcpfan-interop-sdk-v2', version: '1.0.0' },
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } }
    );
    client.onerror = t.onClientError;

    const received = collectNotifications(client);

    const transport = new StreamableHTTPClientTransport(mcpUrl, { fetch: rec.fetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect()');

    const negotiated = client.getNegotiatedProtocolVersion();
    if (negotiated !== EXPECTED_VERSION || client.getProtocolEra() !== 'modern')
        fail(
            `negotiated protocol version is ${negotiated} (era ${client.getProtocolEra()}), expected ${EXPECTED_VERSION}. ` +
                `The SDK falls back to a 2025 'initialize' when the server/discover probe gets a result it cannot validate ` +
                `or an error other than -32022 (see FINDINGS.md §2)`
        );
    const probe = rec.find(x => x.request?.method === 'server/discover');
    if (!probe) fail('no server/discover probe was sent');
    if (probe.reqHeaders['mcp-protocol-version'] !== EXPECTED_VERSION || probe.reqHeaders['mcp-method'] !== 'server/discover')
        fail(`probe headers unexpected: ${JSON.stringify(probe.reqHeaders)}`);
    checkDiscover(client.getDiscoverResult(), 'probe discover result', [EXPECTED_VERSION, 'DRAFT-2026-v1']);
    const serverVersion = client.getServerVersion();
    if (serverVersion?.name !== 'mcpfan') fail(`client.getServerVersion() is ${JSON.stringify(serverVersion)}`);

    // -- explicit server/discover (numeric id; the SDK requires resultType here) -------------
    t.stage = 'discover';
    const discovered = await withTimeout(client.discover({ timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.discover()');
    checkDiscover(discovered, 'client.discover()', [EXPECTED_VERSION, 'DRAFT-2026-v1']);

    // -- open the listen -------------------------------------------------------------------
    t.stage = 'listen';
    const filter = { resourceSubscriptions: [URI_A], toolsListChanged: true };
    const sub = await withTimeout(client.listen(filter, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.listen() acknowledgement');
    let closedCause;
    sub.closed.then(c => {
        closedCause = c;
    });

    const listenEx = rec.find(x => x.request?.method === 'subscriptions/listen');
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
    t.stage = 'publish';
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 1 } } });
    await publish(base, { method: 'notifications/prompts/list_changed' });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER, _meta: { 'test/seq': 2 } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_PREFIX_TRAP, _meta: { 'test/seq': 3 } } });
    await publish(base, { method: 'notifications/tools/list_changed' });

    t.stage = 'receive';
    await waitUntil(
        () => received.some(n => n.method === 'notifications/tools/list_changed'),
        STEP_TIMEOUT_MS,
        `notifications/tools/list_changed on the listen stream (received so far: ${JSON.stringify(received)})`
    ).catch(e => {
        fail(`${e.message}; received so far: ${JSON.stringify(received)}; raw stream: ${JSON.stringify(listenEx.sse ?? '')}`);
    });
    await sleep(QUIET_MS);

    const expectedUpdated = { uri: URI_A, _meta: { [SUB_ID_KEY]: listenId, 'test/seq': 1 } };
    const expectedTools = { _meta: { [SUB_ID_KEY]: listenId } };
    const got = JSON.stringify(received);
    if (received.length !== 2) fail(`expected exactly 2 notifications (resources/updated for ${URI_A}, tools/list_changed), got ${received.length}: ${got}`);
    const [first, second] = received;
    if (first.method !== 'notifications/resources/updated' || second.method !== 'notifications/tools/list_changed')
        fail(`wrong notifications or order: ${got}`);
    if (canon(first.params) !== canon(expectedUpdated))
        fail(`resources/updated params ${JSON.stringify(first.params)} != expected ${JSON.stringify(expectedUpdated)} (params verbatim + subscriptionId, design §3)`);
    if (canon(second.params ?? {}) !== canon(expectedTools))
        fail(`tools/list_changed params ${JSON.stringify(second.params)} != expected ${JSON.stringify(expectedTools)}`);

    // Raw stream checks the SDK does not make itself.
    const raw = listenEx.sse ?? '';
    if (/^id:/m.test(raw)) fail(`listen stream carries 'id:' lines (design §2.1 forbids them; this SDK then reconnects with GET + Last-Event-ID): ${JSON.stringify(short(raw, 2000))}`);
    const dataLines = raw.split('\n').filter(l => l.startsWith('data:'));
    const firstMsg = dataLines.length > 0 ? JSON.parse(dataLines[0].slice(5)) : undefined;
    if (firstMsg?.method !== 'notifications/subscriptions/acknowledged')
        fail(`first event on the listen stream is not the acknowledgement: ${JSON.stringify(short(raw, 2000))}`);
    if (firstMsg.params?._meta?.[SUB_ID_KEY] !== listenId)
        fail(`ack subscriptionId ${JSON.stringify(firstMsg.params?._meta?.[SUB_ID_KEY])} != listen id ${JSON.stringify(listenId)}`);
    checkEventLines(raw);
    if (dataLines.length !== 3) fail(`expected 3 data events on the stream (ack + 2), saw ${dataLines.length}: ${JSON.stringify(short(raw, 2000))}`);

    // -- close the listen ------------------------------------------------------------------
    t.stage = 'close';
    await withTimeout(sub.close(), STEP_TIMEOUT_MS, 'subscription.close()');
    const cause = await withTimeout(sub.closed, STEP_TIMEOUT_MS, 'subscription.closed');
    if (cause !== 'local') fail(`subscription closed with cause '${cause}', expected 'local'`);
    if (closedCause !== undefined && closedCause !== 'local') fail(`closed cause ${closedCause}`);

    await waitForGauge(base, 'mcpfan_listen_streams_open', 0);
    await waitForGauge(base, 'mcpfan_subscriptions_active', 0);

    // The SDK always POSTs notifications/cancelled after aborting the stream; design §2.1 says 202.
    await waitUntil(
        () => rec.exchanges.some(x => x.request?.method === 'notifications/cancelled' && x.status !== undefined),
        STEP_TIMEOUT_MS,
        'the answer to the SDK\'s notifications/cancelled POST'
    );
    const cancelled = rec.find(x => x.request?.method === 'notifications/cancelled');
    if (cancelled.request.params?.requestId !== listenId) fail(`notifications/cancelled named ${JSON.stringify(cancelled.request.params)}`);
    if (cancelled.status !== 202) fail(`notifications/cancelled {requestId: ${JSON.stringify(listenId)}} answered ${cancelled.status}, expected 202 (design §2.1)`);

    // Nothing may arrive any more (the stream is gone).
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { 'test/seq': 4 } } });
    await sleep(QUIET_MS / 2);
    if (received.length !== 2) fail(`notifications arrived after close: ${JSON.stringify(received.slice(2))}`);

    t.stage = 'shutdown';
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');

    if (t.clientErrors.length > 0) fail(`the SDK reported ${t.clientErrors.length} error(s) through client.onerror`);

    if (process.env.SDKV2_VERBOSE) {
        rec.dump('SDK HTTP exchanges (SDKV2_VERBOSE)');
    }
    console.log(
        `interop_sdk_v2: PASS — @modelcontextprotocol/client negotiated ${negotiated} (auto), ` +
            `listen ${JSON.stringify(listenId)} acked ${JSON.stringify(sub.honoredFilter)}, ` +
            `received 2/2 expected notifications and none of 3 filtered ones, listen freed (mcpfan_listen_streams_open=0)`
    );
}

t.run(main);

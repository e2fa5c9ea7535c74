// Interop test: the official MCP TypeScript SDK v1 client's own reconnection against mcpfan's
// resumable 2025 sessions (docs/protocol.md "Resumable 2025 sessions").
//
//   node resume.mjs http://127.0.0.1:PORT
//
// The SDK talks to mcpfan through a small TCP relay that this script owns. After the session
// is subscribed and has received an update, the relay cuts every connection (the client's
// network drops) and holds new ones. While the client is away, updates are published straight
// to mcpfan. Then the relay lets connections through: the SDK reconnects its GET stream by
// itself (after its default 1 s) with `last-event-id`, and its notification handler must
// receive exactly the newest update per URI it missed, then live updates again. No mcpfan
// feature exists for the test: the drop is a real network drop.
//
// Exit 0 and one summary line on success; exit 1 with "interop_sdk_v1_resume: FAIL at stage
// '...': ..." otherwise (the wire log and client.onerror reports follow).

import net from 'node:net';

import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { newSdkClient } from './sdk_client.mjs';
import { QUIET_MS, STEP_TIMEOUT_MS, createRecorder, createTest, fail, loopbackBaseArg, metric, publish, sleep, waitUntil, withTimeout } from '../lib/common.mjs';

const NAME = 'interop_sdk_v1_resume';
const URI_A = 'file:///interop/v1/resume/a.txt';
const URI_B = 'file:///interop/v1/resume/b.txt';
const URI_OTHER = 'file:///interop/v1/resume/other.txt';
const EVENT_ID = /^[0-9a-f]{8}-(0|[1-9][0-9]*)$/;

// A TCP relay: listen on an ephemeral loopback port, forward each connection to `target`.
// cut() destroys every open pair; while held, new connections wait (paused) until release().
function startRelay(target) {
    const pairs = new Set();
    let held = [];
    let holding = false;
    const forward = client => {
        const upstream = net.connect(target.port, target.hostname);
        const pair = { client, upstream };
        pairs.add(pair);
        const end = () => {
            client.destroy();
            upstream.destroy();
            pairs.delete(pair);
        };
        client.on('error', end).on('close', end);
        upstream.on('error', end).on('close', end);
        client.pipe(upstream);
        upstream.pipe(client);
    };
    const server = net.createServer(client => {
        if (holding) {
            client.pause();
            client.on('error', () => client.destroy());
            held.push(client);
        } else {
            forward(client);
        }
    });
    return new Promise(resolve =>
        server.listen(0, '127.0.0.1', () =>
            resolve({
                url: `http://127.0.0.1:${server.address().port}`,
                cut() {
                    holding = true;
                    for (const p of [...pairs]) {
                        p.client.destroy();
                        p.upstream.destroy();
                    }
                    pairs.clear();
                },
                release() {
                    holding = false;
                    const waiting = held;
                    held = [];
                    for (const c of waiting) if (!c.destroyed) forward(c);
                },
                close() {
                    for (const p of pairs) {
                        p.client.destroy();
                        p.upstream.destroy();
                    }
                    for (const c of held) c.destroy();
                    server.close();
                }
            })
        )
    );
}

const rec = createRecorder();
let relay;
const t = createTest(NAME, { report: () => rec.dump(), cleanup: () => relay?.close() });

function describe(n) {
    return `${n.method}${n.params?.uri ? ` ${n.params.uri}` : ''}${n.params?._meta?.rev !== undefined ? ` rev ${n.params._meta.rev}` : ''}`;
}

async function main() {
    const base = loopbackBaseArg('resume.mjs');
    relay = await startRelay(new URL(base));

    t.stage = 'connect';
    const { client, received } = newSdkClient('mcpfan-interop-sdk-v1-resume', t.onClientError);
    // The SDK's default reconnection options (1 s, x1.5, 2 retries): its own behaviour is tested.
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', relay.url), { fetch: rec.fetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'client.connect()');
    await waitUntil(() => rec.find(x => x.method === 'GET')?.status === 200, STEP_TIMEOUT_MS, 'the session\'s GET stream (200)');
    for (const uri of [URI_A, URI_B]) {
        await withTimeout(client.subscribeResource({ uri }, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `resources/subscribe ${uri}`);
    }
    const firstGet = rec.find(x => x.method === 'GET');

    t.stage = 'live before the drop';
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { rev: 1 } } });
    await waitUntil(() => received.length === 1, STEP_TIMEOUT_MS, 'the first update');
    if (!/^id: /m.test(firstGet.sse ?? '')) fail(`the GET stream carries no SSE ids: ${JSON.stringify(firstGet.sse)}`);
    const lastIdBefore = [...(firstGet.sse ?? '').matchAll(/^id: (.*)$/gm)].pop()?.[1];
    if (!EVENT_ID.test(lastIdBefore ?? '')) fail(`unexpected event id ${JSON.stringify(lastIdBefore)}`);

    t.stage = 'drop';
    const parked0 = await metric(base, 'mcpfan_sessions_parked');
    const journaled0 = await metric(base, 'mcpfan_session_journaled_total');
    relay.cut();
    // mcpfan notices the closed connection and parks the session (keeps journaling for it).
    await waitUntil(async () => (await metric(base, 'mcpfan_sessions_parked')) === parked0 + 1, STEP_TIMEOUT_MS, 'mcpfan to park the session');

    t.stage = 'publish while away';
    for (const rev of [2, 3, 4]) await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_A, _meta: { rev } } });
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_OTHER, _meta: { rev: 1 } } });
    for (const rev of [1, 2]) await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_B, _meta: { rev } } });
    await waitUntil(async () => (await metric(base, 'mcpfan_session_journaled_total')) >= journaled0 + 5, STEP_TIMEOUT_MS, 'the updates to be journaled');

    t.stage = 'SDK reconnects';
    relay.release();
    await waitUntil(() => received.length >= 3, STEP_TIMEOUT_MS, 'the missed updates after the SDK\'s own reconnect').catch(e =>
        fail(`${e.message}; received: ${JSON.stringify(received.map(describe))}`)
    );
    await sleep(QUIET_MS);
    const missed = received.slice(1).map(describe);
    const want = [`notifications/resources/updated ${URI_A} rev 4`, `notifications/resources/updated ${URI_B} rev 2`];
    if (JSON.stringify(missed) !== JSON.stringify(want))
        fail(`after the reconnect expected exactly ${JSON.stringify(want)} (newest per URI, in order), got ${JSON.stringify(missed)}`);
    const resumes = rec.exchanges.filter(x => x.method === 'GET' && x !== firstGet);
    const resume = resumes.find(x => x.status === 200);
    if (!resume) fail(`no successful GET after the drop: ${JSON.stringify(resumes.map(x => x.status))}`);
    const lei = resume.reqHeaders['last-event-id'];
    if (lei !== lastIdBefore) fail(`the SDK resumed with last-event-id ${JSON.stringify(lei)}, expected the last id it saw, ${JSON.stringify(lastIdBefore)}`);

    t.stage = 'live after the resume';
    await publish(base, { method: 'notifications/resources/updated', params: { uri: URI_B, _meta: { rev: 3 } } });
    await waitUntil(() => received.length === 4, STEP_TIMEOUT_MS, 'a live update after the resume').catch(e =>
        fail(`${e.message}; received: ${JSON.stringify(received.map(describe))}`)
    );
    if (describe(received[3]) !== `notifications/resources/updated ${URI_B} rev 3`) fail(`live update arrived as ${describe(received[3])}`);
    if ((await metric(base, 'mcpfan_sessions_parked')) !== parked0) fail('the session is still parked after the resume');

    t.stage = 'close';
    await withTimeout(transport.terminateSession(), STEP_TIMEOUT_MS, 'transport.terminateSession() (DELETE /mcp)');
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'client.close()');
    const dropErrors = t.clientErrors.map(e => e.text);
    console.log(
        `${NAME}: PASS — the SDK's GET stream was cut; 3 updates of ${URI_A} and 2 of ${URI_B} (+1 unsubscribed) published meanwhile; ` +
            `the SDK reconnected by itself with last-event-id ${lei} and received exactly the newest of each (${want.length}), then live updates` +
            (dropErrors.length ? ` (client.onerror during the drop: ${dropErrors.length})` : '')
    );
}

t.run(main);

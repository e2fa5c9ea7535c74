// Many 2026-07-28 listens on one HTTP/2 connection, from Node's own HTTP/2 client (node:http2,
// Node built-ins only, no npm package):
//
//   node h2_listens.mjs MODE MCP_ORIGIN PUBLISH_BASE COUNT [CA_FILE]
//     MODE tls: MCP_ORIGIN https://localhost:PORT (h2 by ALPN; CA_FILE is trusted via `ca:`)
//     MODE h2c: MCP_ORIGIN http://127.0.0.1:PORT (cleartext, prior knowledge)
//     PUBLISH_BASE http://127.0.0.1:PORT: mcpfan's --publish-listen (POST /v1/publish, GET /metrics)
//
// 1. one http2.connect session; after mcpfan's SETTINGS (bounded wait; MAX_CONCURRENT_STREAMS >=
//    COUNT) it opens COUNT listens (POST /mcp), listen i with id "h2-listen-i" subscribed to its
//    own URI and to one URI all of them share, and waits for every acknowledgement;
// 2. publishes one update for the shared URI, then one for each listen's own URI (batches of
//    PUBLISH_BATCH per POST), and checks that every stream got exactly those two, in publish
//    order, each tagged with its own subscriptionId, and nothing else (a quiet period after);
//    mcpfan_deliveries_total moved by 2 x COUNT;
// 3. cancels the first half with stream.close(NGHTTP2_CANCEL) (RST_STREAM CANCEL) and waits
//    (bounded, polling /metrics) for mcpfan_listen_streams_open to drop to the other half;
// 4. publishes the shared URI once more: each stream still open gets it exactly once, and
//    mcpfan_deliveries_total moves by exactly the open half (nothing was written to a
//    cancelled stream);
// 5. the session is still the same one (no GOAWAY); ending it frees the rest
//    (mcpfan_listen_streams_open and mcpfan_h2_connections_open back to 0).
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';

import { createTest, fail, metric, sleep, waitForGauge, waitUntil, withTimeout, QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY } from '../lib/common.mjs';

const [mode, origin, publishBase, countArg, caFile] = process.argv.slice(2);
const COUNT = Number(countArg);
if (!['tls', 'h2c'].includes(mode) || !origin || !/^http:\/\/127\.0\.0\.1:\d+$/.test(publishBase ?? '') || !(COUNT > 1) || COUNT % 2 !== 0 || (mode === 'tls' && !caFile)) {
    console.error('usage: node h2_listens.mjs tls|h2c MCP_ORIGIN http://127.0.0.1:PUBLISH_PORT EVEN_COUNT [CA_FILE]');
    process.exit(2);
}
const NAME = `interop_node_h2 (${mode}, ${COUNT} listens)`;
const VERSION = '2026-07-28';
const SHARED_URI = 'file:///interop/h2/shared.txt';
const ownUri = i => `file:///interop/h2/own/${i}.txt`;
const listenId = i => `h2-listen-${i}`;
const PUBLISH_BATCH = 100;

let session = null;
let goaway = null;
const sessionErrors = [];
const listens = []; // {i, id, stream, status, contentType, messages, ended, error, cancelled}

const t = createTest(NAME, {
    report() {
        if (goaway) console.error(`--- GOAWAY from mcpfan: ${JSON.stringify(goaway)}`);
        if (sessionErrors.length) console.error(`--- session errors:\n  ${sessionErrors.join('\n  ')}`);
        const odd = listens.filter(l => l.error || l.status !== 200).slice(0, 10);
        for (const l of odd) console.error(`  listen ${l.id}: status ${l.status} error ${l.error} messages ${JSON.stringify(l.messages).slice(0, 500)}`);
    },
    cleanup() {
        session?.destroy();
    }
});

// --- the SSE body of one stream -> its JSON-RPC messages --------------------------------------
function readEvents(l) {
    let pending = '';
    l.stream.setEncoding('utf8');
    l.stream.on('data', chunk => {
        pending += chunk;
        let cut;
        while ((cut = pending.search(/\r?\n\r?\n/)) >= 0) {
            const event = pending.slice(0, cut);
            pending = pending.slice(cut).replace(/^\r?\n\r?\n/, '');
            const data = event
                .split(/\r?\n/)
                .filter(x => x.startsWith('data:'))
                .map(x => x.slice(5).trimStart())
                .join('\n');
            if (!data) continue; // a ": keepalive" comment
            try {
                l.messages.push(JSON.parse(data));
            } catch {
                l.error = `undecodable event data ${JSON.stringify(data.slice(0, 200))}`;
            }
        }
    });
}

function openListen(i) {
    const l = { i, id: listenId(i), stream: null, status: undefined, contentType: '', messages: [], ended: false, error: null, cancelled: false };
    l.stream = session.request({
        ':method': 'POST',
        ':path': '/mcp',
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': VERSION,
        'mcp-method': 'subscriptions/listen'
    });
    l.stream.on('response', h => {
        l.status = h[':status'];
        l.contentType = h['content-type'] ?? '';
    });
    l.stream.on('end', () => (l.ended = true));
    l.stream.on('close', () => (l.ended = true));
    l.stream.on('error', e => {
        if (!l.cancelled) l.error = `${e.code ?? e.name}: ${e.message}`;
    });
    readEvents(l);
    l.stream.end(
        JSON.stringify({
            jsonrpc: '2.0',
            id: l.id,
            method: 'subscriptions/listen',
            params: {
                _meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} },
                notifications: { resourceSubscriptions: [ownUri(i), SHARED_URI] }
            }
        })
    );
    return l;
}

// POST /v1/publish with several notifications; 202 {"accepted": n}.
async function publishAll(notifications) {
    const res = await withTimeout(
        fetch(`${publishBase}/v1/publish`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(notifications) }),
        STEP_TIMEOUT_MS,
        'POST /v1/publish'
    );
    const text = await withTimeout(res.text(), STEP_TIMEOUT_MS, 'POST /v1/publish body');
    if (res.status !== 202 || JSON.parse(text)?.accepted !== notifications.length)
        fail(`POST /v1/publish of ${notifications.length} answered ${res.status} ${text}, expected 202 {"accepted":${notifications.length}}`);
}
const update = (uri, seq) => ({ method: 'notifications/resources/updated', params: { uri, _meta: { 'interop/seq': seq } } });

// The i-th message of listen l is an update for `uri` with seq `seq`, tagged with l's id.
function checkUpdate(l, k, uri, seq) {
    const m = l.messages[k];
    const meta = m?.params?._meta ?? {};
    if (m?.method !== 'notifications/resources/updated' || m.params.uri !== uri || meta['interop/seq'] !== seq || meta[SUB_ID_KEY] !== l.id)
        fail(`listen ${l.id} message #${k} is ${JSON.stringify(m)}; expected resources/updated ${uri} seq ${seq} tagged ${SUB_ID_KEY}=${JSON.stringify(l.id)}`);
}

async function waitAll(pred, what) {
    await waitUntil(
        () => {
            const bad = listens.find(l => l.error);
            if (bad) fail(`listen ${bad.id}: ${bad.error}`);
            if (goaway) fail(`mcpfan sent GOAWAY ${JSON.stringify(goaway)}`);
            return listens.every(pred);
        },
        STEP_TIMEOUT_MS * 2,
        what,
        20
    ).catch(e => {
        const lagging = listens.filter(l => !pred(l));
        fail(`${e.message}: ${lagging.length} of ${listens.length} streams lag, e.g. ${lagging.slice(0, 3).map(l => `${l.id} status ${l.status} ended ${l.ended} messages ${JSON.stringify(l.messages)}`).join('; ')}`);
    });
}

async function main() {
    const started = Date.now();
    t.stage = 'connect';
    const options = mode === 'tls' ? { ca: readFileSync(caFile) } : {};
    session = http2.connect(origin, options);
    session.on('error', e => sessionErrors.push(`${e.code ?? e.name}: ${e.message}`));
    session.on('goaway', (code, lastStreamID, data) => (goaway = { code, lastStreamID, data: data?.toString() }));
    const settings = await withTimeout(new Promise(resolve => session.once('remoteSettings', resolve)), STEP_TIMEOUT_MS, "mcpfan's SETTINGS");
    if (mode === 'tls' && session.alpnProtocol !== 'h2') fail(`ALPN chose ${session.alpnProtocol}, expected h2`);
    if (!(settings.maxConcurrentStreams >= COUNT)) fail(`mcpfan's SETTINGS_MAX_CONCURRENT_STREAMS is ${settings.maxConcurrentStreams}, below ${COUNT}`);

    t.stage = `open ${COUNT} listens`;
    for (let i = 0; i < COUNT; ++i) listens.push(openListen(i));
    await waitAll(l => l.messages.length >= 1, `${COUNT} acknowledgements`);
    for (const l of listens) {
        if (l.status !== 200 || !l.contentType.startsWith('text/event-stream')) fail(`listen ${l.id} answered ${l.status} '${l.contentType}'`);
        const ack = l.messages[0];
        if (ack.method !== 'notifications/subscriptions/acknowledged' || ack.params?._meta?.[SUB_ID_KEY] !== l.id)
            fail(`listen ${l.id}: first message is ${JSON.stringify(ack)}, expected its acknowledgement`);
        const got = [...(ack.params?.notifications?.resourceSubscriptions ?? [])].sort();
        if (JSON.stringify(got) !== JSON.stringify([ownUri(l.i), SHARED_URI].sort())) fail(`listen ${l.id}: acknowledged ${JSON.stringify(ack.params)}`);
    }
    const ids = new Set(listens.map(l => l.stream.id));
    if (ids.size !== COUNT) fail(`expected ${COUNT} distinct stream ids on one session, got ${ids.size}`);
    await waitForGauge(publishBase, 'mcpfan_listen_streams_open', COUNT);
    const h2Open = await metric(publishBase, 'mcpfan_h2_connections_open');
    if (h2Open !== 1) fail(`mcpfan_h2_connections_open is ${h2Open} with one session open, expected 1`);
    console.log(`${NAME}: ${COUNT} listens acknowledged on one connection in ${Date.now() - started} ms`);

    t.stage = 'publish: the shared URI, then each own URI';
    const deliveries0 = await metric(publishBase, 'mcpfan_deliveries_total');
    await publishAll([update(SHARED_URI, 1)]);
    for (let i = 0; i < COUNT; i += PUBLISH_BATCH) {
        const batch = [];
        for (let j = i; j < Math.min(COUNT, i + PUBLISH_BATCH); ++j) batch.push(update(ownUri(j), 2));
        await publishAll(batch);
    }
    await waitAll(l => l.messages.length >= 3, 'the shared update and the own update on every stream');
    await sleep(QUIET_MS);
    for (const l of listens) {
        if (l.messages.length !== 3) fail(`listen ${l.id} got ${l.messages.length - 1} notifications, expected exactly 2: ${JSON.stringify(l.messages.slice(1))}`);
        checkUpdate(l, 1, SHARED_URI, 1);
        checkUpdate(l, 2, ownUri(l.i), 2);
    }
    await waitUntil(async () => (await metric(publishBase, 'mcpfan_deliveries_total')) - deliveries0 === 2 * COUNT, STEP_TIMEOUT_MS, `mcpfan_deliveries_total to move by ${2 * COUNT}`);

    t.stage = `cancel ${COUNT / 2} listens (RST_STREAM CANCEL)`;
    const half = COUNT / 2;
    for (const l of listens.slice(0, half)) {
        l.cancelled = true;
        l.stream.close(http2.constants.NGHTTP2_CANCEL);
    }
    await waitForGauge(publishBase, 'mcpfan_listen_streams_open', half);
    if (goaway) fail(`mcpfan sent GOAWAY after ${half} cancels: ${JSON.stringify(goaway)}`);

    t.stage = 'publish to the half still open';
    const deliveries1 = await metric(publishBase, 'mcpfan_deliveries_total');
    await publishAll([update(SHARED_URI, 3)]);
    const open = listens.slice(half);
    await waitAll(l => l.cancelled || l.messages.length >= 4, `the third update on the ${half} open streams`);
    await sleep(QUIET_MS);
    for (const l of open) {
        if (l.messages.length !== 4) fail(`listen ${l.id} (open) got ${l.messages.length - 1} notifications, expected 3`);
        checkUpdate(l, 3, SHARED_URI, 3);
    }
    for (const l of listens.slice(0, half)) if (l.messages.length !== 3) fail(`cancelled listen ${l.id} received ${JSON.stringify(l.messages.slice(3))}`);
    const moved = (await metric(publishBase, 'mcpfan_deliveries_total')) - deliveries1;
    if (moved !== half) fail(`mcpfan_deliveries_total moved by ${moved} for a publish matching ${half} open listens`);

    t.stage = 'close the session';
    if (session.destroyed || session.closed) fail('the session ended under the test');
    // destroy(): the connection ends with the listens on it (close() would wait for them to end).
    session.destroy();
    await waitForGauge(publishBase, 'mcpfan_listen_streams_open', 0);
    await waitForGauge(publishBase, 'mcpfan_h2_connections_open', 0);
    if (sessionErrors.length) fail(`session errors: ${sessionErrors.join('; ')}`);

    console.log(
        `${NAME}: PASS — ${COUNT} listens on one ${mode === 'tls' ? 'TLS (ALPN h2)' : 'h2c'} session, each got exactly its 2 notifications; ` +
            `${half} cancelled by RST_STREAM (mcpfan_listen_streams_open ${COUNT} -> ${half}), the next publish reached exactly the ${half} open ` +
            `(mcpfan_deliveries_total +${moved}); ${Date.now() - started} ms`
    );
}

t.run(main);

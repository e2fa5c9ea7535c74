// Interop test: the official MCP TypeScript SDK v2 client (@modelcontextprotocol/client, pinned
// in package.json) against nginx routing by Mcp-Method (tools/gateway): 2026 subscriptions/listen
// to a pool of two mcpfan nodes, everything else to the application server (../upstream_v2).
//
//   node gateway.mjs http://127.0.0.1:GATEWAY --mcpfan http://127.0.0.1:A --mcpfan http://127.0.0.1:B
//                    --app http://127.0.0.1:U --access-log FILE
//
// The clients know only nginx's URL. What the test checks:
//  - negotiation, tools/list and tools/call are answered by the application (serverInfo
//    upstream_v2, the echo tool's text) through nginx;
//  - two listens (two SDK clients) are answered by mcpfan through nginx, one on each node
//    (least_conn), with the acknowledged filter;
//  - a publish posted to EVERY node (no backplane: a listen lives on whichever node nginx
//    picked) reaches each client exactly once;
//  - a request whose Mcp-Method header says subscriptions/listen but whose body is a tools/call
//    is routed to mcpfan by the header and refused there with 400 -32020;
//  - closing the clients ends the streams on the nodes (nginx passes the close on);
//  - negatives, from three independent records: the application's per-method request counts
//    (no subscriptions/listen, exactly the one tools/call), every mcpfan node's
//    mcpfan_http_requests_total (nothing but what the test sent itself plus what nginx sent to
//    the mcpfan pool), and nginx's access log (pool and upstream address of every request).
//
// Exit 0 and one summary line on success; exit 1 with "interop_gateway: FAIL at stage ..." and
// the SDK wire logs otherwise.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { readFileSync } from 'node:fs';
import { QUIET_MS, STEP_TIMEOUT_MS, SUB_ID_KEY, TestFailure, createRecorder, createTest, fail, metric, publish, short, sleep, waitUntil, withTimeout } from '../lib/common.mjs';
import { collectNotifications } from '../lib/common.mjs';

const NAME = 'interop_gateway';
const VERSION = '2026-07-28';
const URI = 'test://static'; // the application's resource; its updates come from mcpfan

// ---------------------------------------------------------------------------------------
// arguments

function parseArgs() {
    const loopback = /^http:\/\/127\.0\.0\.1:\d+$/;
    const [gateway, ...rest] = process.argv.slice(2);
    const args = { gateway, mcpfan: [], app: undefined, accessLog: undefined };
    for (let i = 0; i < rest.length; i += 2) {
        const [flag, value] = [rest[i], rest[i + 1]];
        if (flag === '--mcpfan') args.mcpfan.push(value);
        else if (flag === '--app') args.app = value;
        else if (flag === '--access-log') args.accessLog = value;
        else args.bad = true;
    }
    const urls = [args.gateway, args.app, ...args.mcpfan];
    if (args.bad || args.mcpfan.length < 2 || !args.accessLog || !urls.every(u => loopback.test(u ?? ''))) {
        console.error('usage: node gateway.mjs http://127.0.0.1:GATEWAY --mcpfan URL --mcpfan URL [...] --app URL --access-log FILE (loopback only)');
        process.exit(2);
    }
    return args;
}

const args = parseArgs();
const recs = [createRecorder(), createRecorder()];
const t = createTest(NAME, { report: () => recs.forEach((r, i) => r.dump(`client ${i + 1}: SDK HTTP exchanges`)) });

// Every request the test itself sends to a node, so that the node's request counter can be
// split into "from the test" and "through nginx".
const nodes = args.mcpfan.map(base => ({ base, hostport: base.replace('http://', ''), own: 0 }));
async function nodeMetric(node, name) {
    node.own++;
    return metric(node.base, name);
}
async function nodeMetrics(name) {
    const out = [];
    for (const n of nodes) out.push(await nodeMetric(n, name));
    return out;
}
// Waits (bounded) until `ok(values per node)` holds for metric `name`.
async function waitNodes(name, ok, what) {
    let last;
    try {
        await waitUntil(async () => ok((last = await nodeMetrics(name))), STEP_TIMEOUT_MS, what, 50);
    } catch (e) {
        if (e instanceof TestFailure) fail(`${e.message}: ${name} per node ${JSON.stringify(last)}`);
        throw e;
    }
}
const sum = v => v.reduce((a, b) => a + b, 0);

async function appStats() {
    const res = await withTimeout(fetch(`${args.app}/stats`), STEP_TIMEOUT_MS, 'GET /stats (application)');
    if (res.status !== 200) fail(`application GET /stats answered ${res.status}`);
    return (await res.json()).requests;
}

// nginx's access log (log_format mcp_gateway): one record per finished request.
function accessLog() {
    let text;
    try {
        text = readFileSync(args.accessLog, 'utf8');
    } catch {
        return [];
    }
    return text
        .split('\n')
        .filter(Boolean)
        .map(line => {
            const m = /"(\S+) (\S+) [^"]*" (\d+) .* version="([^"]*)" method="([^"]*)" pool=(\S+) upstream=(.*) rt=/.exec(line);
            if (!m) fail(`unparsable nginx access log line: ${line}`);
            return { line, http: m[1], path: m[2], status: Number(m[3]), version: m[4], method: m[5], pool: m[6], upstream: m[7] };
        });
}

// ---------------------------------------------------------------------------------------

async function connectClient(i) {
    const client = new Client(
        { name: `mcpfan-interop-gateway-${i + 1}`, version: '1.0.0' },
        { versionNegotiation: { mode: 'auto', probe: { timeoutMs: STEP_TIMEOUT_MS } } }
    );
    client.onerror = t.onClientError;
    const received = collectNotifications(client);
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', args.gateway), { fetch: recs[i].fetch });
    await withTimeout(client.connect(transport, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `client ${i + 1} connect()`);
    if (client.getNegotiatedProtocolVersion() !== VERSION || client.getProtocolEra() !== 'modern')
        fail(`client ${i + 1} negotiated ${client.getNegotiatedProtocolVersion()} (era ${client.getProtocolEra()}), expected ${VERSION}`);
    // server/discover is not a listen: the application answers it.
    const info = client.getServerVersion();
    if (info?.name !== 'upstream_v2') fail(`client ${i + 1}: server/discover answered by ${JSON.stringify(info)}, expected the application (upstream_v2)`);
    if (client.getServerCapabilities()?.resources?.subscribe !== true)
        fail(`client ${i + 1}: the application does not advertise resources.subscribe: ${JSON.stringify(client.getServerCapabilities())}`);
    return { client, received };
}

async function listen(c, i) {
    const filter = { resourceSubscriptions: [URI] };
    const sub = await withTimeout(c.client.listen(filter, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, `client ${i + 1} listen() acknowledgement`);
    if (JSON.stringify(sub.honoredFilter) !== JSON.stringify(filter)) fail(`client ${i + 1}: acknowledged filter ${JSON.stringify(sub.honoredFilter)}, requested ${JSON.stringify(filter)}`);
    const ex = recs[i].rpc('subscriptions/listen');
    if (!ex) fail(`client ${i + 1}: no subscriptions/listen request recorded`);
    if (ex.reqHeaders['mcp-method'] !== 'subscriptions/listen' || ex.reqHeaders['mcp-protocol-version'] !== VERSION)
        fail(`client ${i + 1}: listen request headers ${JSON.stringify(ex.reqHeaders)} (nginx routes on them)`);
    const ct = ex.resHeaders?.['content-type'] ?? '';
    if (ex.status !== 200 || !ct.startsWith('text/event-stream')) fail(`client ${i + 1}: listen answered ${ex.status} '${ct}' through nginx`);
    return ex.request.id;
}

async function main() {
    // -- the application, through nginx ------------------------------------------------------
    t.stage = 'connect';
    const c1 = await connectClient(0);

    t.stage = 'tools';
    const tools = await withTimeout(c1.client.listTools(undefined, { timeout: STEP_TIMEOUT_MS }), STEP_TIMEOUT_MS + 2000, 'tools/list');
    const names = tools.tools.map(x => x.name).sort();
    if (JSON.stringify(names) !== JSON.stringify(['add', 'echo'])) fail(`tools/list through nginx: ${JSON.stringify(names)}, expected the application's [add, echo]`);
    const echoed = await withTimeout(
        c1.client.callTool({ name: 'echo', arguments: { text: 'routed by nginx' } }, { timeout: STEP_TIMEOUT_MS }),
        STEP_TIMEOUT_MS + 2000,
        'tools/call echo'
    );
    if (echoed.content?.[0]?.text !== 'routed by nginx') fail(`tools/call echo answered ${JSON.stringify(echoed)}`);

    // -- listens, through nginx, to the mcpfan pool ------------------------------------------
    t.stage = 'listen';
    const id1 = await listen(c1, 0);
    await waitNodes('mcpfan_listen_streams_open', v => sum(v) === 1, 'the first listen open on a node');
    const c2 = await connectClient(1);
    const id2 = await listen(c2, 1);
    // least_conn: the second stream goes to the node that holds none.
    await waitNodes('mcpfan_listen_streams_open', v => v.every(x => x === 1), 'one listen open on each node');

    // -- publish to every node ---------------------------------------------------------------
    t.stage = 'publish';
    for (const n of nodes) {
        n.own++;
        await publish(n.base, { method: 'notifications/resources/updated', params: { uri: URI, _meta: { 'test/seq': 1 } } });
    }
    t.stage = 'receive';
    const clients = [
        [c1, id1],
        [c2, id2]
    ];
    await waitUntil(() => clients.every(([c]) => c.received.length >= 1), STEP_TIMEOUT_MS, 'the update on both clients').catch(e => {
        fail(`${e.message}; received: ${JSON.stringify(clients.map(([c]) => c.received))}`);
    });
    await sleep(QUIET_MS);
    for (const [i, [c, id]] of clients.entries()) {
        const got = JSON.stringify(c.received);
        if (c.received.length !== 1) fail(`client ${i + 1} received ${c.received.length} notifications, expected exactly 1: ${got}`);
        const [n] = c.received;
        if (n.method !== 'notifications/resources/updated' || n.params?.uri !== URI || n.params?._meta?.[SUB_ID_KEY] !== id || n.params?._meta?.['test/seq'] !== 1)
            fail(`client ${i + 1} received ${got}, expected resources/updated for ${URI} with subscriptionId ${JSON.stringify(id)}`);
    }
    const deliveries = await nodeMetrics('mcpfan_deliveries_total');
    if (JSON.stringify(deliveries) !== '[1,1]') fail(`mcpfan_deliveries_total per node ${JSON.stringify(deliveries)}, expected [1,1]`);

    // -- the header routes, mcpfan checks it against the body --------------------------------
    t.stage = 'header/body mismatch';
    const smuggled = await withTimeout(
        fetch(`${args.gateway}/mcp`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'subscriptions/listen' },
            body: JSON.stringify({
                jsonrpc: '2.0',
                id: 99,
                method: 'tools/call',
                params: {
                    name: 'echo',
                    arguments: { text: 'smuggled' },
                    _meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} }
                }
            })
        }).then(async r => ({ status: r.status, text: await r.text() })),
        STEP_TIMEOUT_MS,
        'the mismatched POST'
    );
    let code;
    try {
        code = JSON.parse(smuggled.text).error?.code;
    } catch {
        code = undefined;
    }
    if (smuggled.status !== 400 || code !== -32020)
        fail(`a tools/call body under Mcp-Method: subscriptions/listen answered ${smuggled.status} ${short(smuggled.text)}, expected mcpfan's 400 -32020`);

    // -- close: nginx passes the client's close on to the node --------------------------------
    t.stage = 'close';
    for (const [c] of clients) await withTimeout(c.client.close(), STEP_TIMEOUT_MS, 'client.close()');
    await waitNodes('mcpfan_listen_streams_open', v => sum(v) === 0, 'the listen streams closed on the nodes');

    // -- negatives ---------------------------------------------------------------------------
    t.stage = 'nginx access log';
    // A stream's line is written when it ends; both have ended on the nodes by now.
    let log = [];
    await waitUntil(() => (log = accessLog()).filter(r => r.method === 'subscriptions/listen').length === 3, STEP_TIMEOUT_MS, 'the access log lines of both listens and the mismatched POST').catch(e =>
        fail(`${e.message}:\n${log.map(r => r.line).join('\n')}`)
    );
    const appAddr = args.app.replace('http://', '');
    for (const r of log) {
        const toMcpfan = r.pool === 'mcpfan';
        if (toMcpfan !== (r.method === 'subscriptions/listen' && r.http === 'POST' && r.version === VERSION))
            fail(`nginx routed this request to pool ${r.pool}: ${r.line}`);
        if (toMcpfan ? !nodes.some(n => n.hostport === r.upstream) : r.upstream !== appAddr) fail(`nginx sent this request to ${r.upstream}: ${r.line}`);
    }
    const listensPerNode = nodes.map(n => log.filter(r => r.upstream === n.hostport && r.status === 200).length);
    if (JSON.stringify(listensPerNode) !== '[1,1]') fail(`listen streams per node in the access log: ${JSON.stringify(listensPerNode)}, expected [1,1]`);

    t.stage = 'application saw no listen';
    const stats = await appStats();
    if (stats['2026 subscriptions/listen']) fail(`the application received ${stats['2026 subscriptions/listen']} subscriptions/listen: ${JSON.stringify(stats)}`);
    if (stats['2026 tools/call'] !== 1) fail(`the application received ${stats['2026 tools/call']} tools/call, expected exactly the one echo: ${JSON.stringify(stats)}`);

    t.stage = 'mcpfan saw nothing else';
    // The counter includes the scrape that reads it (counted in node.own).
    const viaNginx = [];
    for (const n of nodes) viaNginx.push((await nodeMetric(n, 'mcpfan_http_requests_total')) - n.own);
    const logged = nodes.map(n => log.filter(r => r.upstream === n.hostport).length);
    if (JSON.stringify(viaNginx) !== JSON.stringify(logged))
        fail(`requests the nodes received other than the test's own: ${JSON.stringify(viaNginx)}; nginx's log sent them ${JSON.stringify(logged)} (all subscriptions/listen)`);

    console.log(
        `${NAME}: OK: tools/call via nginx answered by the application; listens on ${nodes.map(n => n.hostport).join(' and ')}; ` +
            `one publish per node delivered once to each client; header/body mismatch refused -32020; ` +
            `application requests ${JSON.stringify(stats)}; mcpfan requests via nginx ${JSON.stringify(viaNginx)}`
    );
}

t.run(main);

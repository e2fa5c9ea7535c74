// A subscriptions/listen hub built the way the official TypeScript SDK v2 documents it:
// one McpServer factory, createMcpHandler() serving /mcp, toNodeHandler() mounting it on
// node:http, and the handler's event bus doing the fan-out. The only additions are what a
// benchmark needs: a POST /publish endpoint that takes the same body as mcpfan's
// /v1/publish and emits each notification on the SDK's bus, and a raised listen limit.
//
//   node hub.mjs [--max-subscriptions N]      (default 20000; the SDK's default is 1024)
//
// Listens on 127.0.0.1:0 and prints "sdkhub: listening on 127.0.0.1:PORT" on stderr.
// SIGTERM / SIGINT: closes every listen gracefully (the SDK writes the final result) and exits.

import http from 'node:http';
import { McpServer, createMcpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';

function argValue(name, fallback) {
    const i = process.argv.indexOf(name);
    return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const maxSubscriptions = Number(argValue('--max-subscriptions', process.env.SDKHUB_MAX_SUBSCRIPTIONS ?? '20000'));
const MAX_PUBLISH_BODY = 1 << 20; // 1 MiB, as mcpfan's --max-body default

// The per-request server factory: createMcpHandler calls it for every HTTP request (for a
// listen it only reads the capabilities and closes the instance again).
const factory = () =>
    new McpServer(
        { name: 'sdkhub', version: '0.0.0' },
        { capabilities: { resources: { subscribe: true, listChanged: true }, tools: { listChanged: true }, prompts: { listChanged: true } } }
    );

let errors = 0;
const handler = createMcpHandler(factory, {
    maxSubscriptions,
    onerror: (e) => {
        // Reporting only. Print the first few so a misconfigured client is visible.
        if (++errors <= 5) console.error(`sdkhub: ${e.message}`);
    }
});
const mcp = toNodeHandler(handler);

// ServerEvent kinds of the SDK's bus, by wire method.
const KIND = {
    'notifications/tools/list_changed': 'tools_list_changed',
    'notifications/prompts/list_changed': 'prompts_list_changed',
    'notifications/resources/list_changed': 'resources_list_changed',
    'notifications/resources/updated': 'resource_updated'
};

function reply(res, status, obj) {
    const body = JSON.stringify(obj);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
}

// POST /publish: {"method": ..., "params": {...}} or an array of them (mcpfan's /v1/publish
// body; "tenant" is accepted and ignored: the SDK has no tenants). Validates the whole body
// first, then publishes each notification on the handler's bus.
function publish(req, res) {
    const chunks = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c) => {
        size += c.length;
        if (size > MAX_PUBLISH_BODY) tooLarge = true;
        else chunks.push(c);
    });
    req.on('end', () => {
        if (tooLarge) return reply(res, 413, { error: 'body too large' });
        let body;
        try {
            body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
            return reply(res, 400, { error: 'malformed JSON' });
        }
        const list = Array.isArray(body) ? body : [body];
        const events = [];
        for (const n of list) {
            const kind = n !== null && typeof n === 'object' ? KIND[n.method] : undefined;
            if (kind === undefined) return reply(res, 400, { error: 'unknown method' });
            const params = n.params !== null && typeof n.params === 'object' ? n.params : undefined;
            if (kind === 'resource_updated') {
                if (typeof params?.uri !== 'string') return reply(res, 400, { error: 'missing params.uri' });
                events.push({ kind, uri: params.uri, params });
            } else {
                events.push(params === undefined ? { kind } : { kind, params });
            }
        }
        for (const e of events) handler.bus.publish(e);
        reply(res, 202, { accepted: events.length });
    });
}

const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/mcp') return void mcp(req, res);
    if (path === '/publish' && req.method === 'POST') return publish(req, res);
    if (path === '/healthz') {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        return void res.end('ok');
    }
    res.writeHead(404);
    res.end();
});
// Long-lived SSE responses: no request/idle timeouts, no connection cap.
server.requestTimeout = 0;
server.headersTimeout = 60_000;
server.keepAliveTimeout = 60_000;
server.maxHeadersCount = 100;

server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    console.error(`sdkhub: listening on 127.0.0.1:${port}`);
    console.error(`sdkhub: maxSubscriptions=${maxSubscriptions}`);
});

let stopping = false;
function stop(sig) {
    if (stopping) return;
    stopping = true;
    handler
        .close()
        .catch(() => {})
        .finally(() => {
            server.close();
            server.closeAllConnections?.();
            console.error(`sdkhub: stopped (${sig})`);
            process.exit(0);
        });
    setTimeout(() => process.exit(0), 3000).unref();
}
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

// upstream_v2: a small MCP server on the official TypeScript SDK v2 (@modelcontextprotocol/server
// 2.4.0), the "application server" of mcpfan's interop tests. See README.md in this folder.
//
//   node server.mjs [--port N] [--tls-cert F --tls-key F]
//                                   # loopback only; N = 0 (default): an ephemeral port;
//                                   # with the pair (PEM files): HTTPS (https.createServer)
//
// Prints `upstream_v2 listening on 127.0.0.1:PORT` on stdout once bound. Serves MCP at /mcp:
// 2026-07-28 per request (createMcpHandler, no legacy leg) and 2025-era sessions (a sessionful
// Streamable HTTP transport per session, chosen with the SDK's own isLegacyRequest). Also:
//   GET  /stats    {"requests": {"<era> <method>": count}}: every request /mcp received
//   POST /notify   {"uri": "..."} or {"kind": "tools_list_changed"|...}: a change event to the
//                  2026 listens and the 2025 sessions (subscribed URIs) this server holds (204)
//   GET  /healthz  200 ok
// Exits 0 on SIGTERM/SIGINT.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import {
    McpServer, createMcpHandler, isLegacyRequest, hostHeaderValidationResponse, localhostAllowedHostnames,
    WebStandardStreamableHTTPServerTransport
} from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

const portArg = process.argv.indexOf('--port');
const PORT = portArg > 0 ? Number(process.argv[portArg + 1]) : 0;
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
    console.error('usage: node server.mjs [--port N]');
    process.exit(2);
}
const argOf = name => (process.argv.indexOf(name) > 0 ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const TLS_CERT = argOf('--tls-cert');
const TLS_KEY = argOf('--tls-key');
if (!TLS_CERT !== !TLS_KEY) {
    console.error('usage: --tls-cert F and --tls-key F go together');
    process.exit(2);
}

// One definition for both eras (the SDK builds one instance per 2026 request, one per 2025 session).
// A 2025 session also answers resources/subscribe and unsubscribe (the URIs go to `subs`); in
// 2026-07-28 the SDK's handler serves subscriptions/listen itself.
function newServer(ctx, subs) {
    const server = new McpServer(
        { name: 'upstream_v2', version: '1.0.0' },
        // subscribe: in a gateway deployment mcpfan serves the listens this server advertises.
        { capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { subscribe: true, listChanged: true } } }
    );
    server.registerTool('echo', { description: 'Returns its text argument', inputSchema: z.object({ text: z.string() }) },
        async ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerTool('add', { description: 'Adds two numbers', inputSchema: z.object({ a: z.number(), b: z.number() }) },
        async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } }));
    server.registerResource('static', 'test://static', { title: 'A static text resource', mimeType: 'text/plain' },
        async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'static content' }] }));
    server.registerPrompt('greeting', { description: 'Greets a name', argsSchema: z.object({ name: z.string() }) },
        ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] }));
    if (subs) {
        server.server.setRequestHandler('resources/subscribe', req => (subs.add(req.params.uri), {}));
        server.server.setRequestHandler('resources/unsubscribe', req => (subs.delete(req.params.uri), {}));
    }
    return server;
}

const onerror = e => console.error(`upstream_v2: ${e?.message ?? e}`);
const modern = createMcpHandler(newServer, { legacy: 'reject', onerror });

// 2025-era sessions: Mcp-Session-Id -> {transport, server, subs}. An `initialize` without a
// session opens one.
const sessions = new Map();
const jsonError = (status, message) =>
    Response.json({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }, { status });

async function legacy(request, body) {
    const sid = request.headers.get('mcp-session-id');
    if (sid) {
        const s = sessions.get(sid);
        return s ? s.transport.handleRequest(request, { parsedBody: body }) : jsonError(404, 'Session not found');
    }
    if (request.method !== 'POST' || body?.method !== 'initialize') return jsonError(400, 'No session: initialize first');
    const s = { subs: new Set() };
    s.server = newServer({ era: 'legacy' }, s.subs);
    s.transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: id => sessions.set(id, s),
        onsessionclosed: id => sessions.delete(id)
    });
    s.transport.onclose = () => s.transport.sessionId && sessions.delete(s.transport.sessionId);
    await s.server.connect(s.transport);
    return s.transport.handleRequest(request, { parsedBody: body });
}

// What /mcp received, per era and JSON-RPC method (GET/DELETE: the HTTP method).
const counts = {};
async function route(request) {
    const rejected = hostHeaderValidationResponse(request, localhostAllowedHostnames());
    if (rejected) return rejected;
    let body;
    if (request.method === 'POST') body = await request.clone().json().catch(() => undefined);
    const era = (await isLegacyRequest(request, body)) ? '2025' : '2026';
    for (const m of Array.isArray(body) ? body : [body]) {
        const key = `${era} ${m?.method ?? (m ? 'response' : request.method)}`;
        counts[key] = (counts[key] ?? 0) + 1;
    }
    return era === '2025' ? legacy(request, body) : modern.fetch(request, { parsedBody: body });
}
const mcp = toNodeHandler({ fetch: route }, { onerror });

async function notify(req, res) {
    let e;
    try {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        e = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
        e = undefined;
    }
    const send = { tools_list_changed: 'sendToolListChanged', prompts_list_changed: 'sendPromptListChanged', resources_list_changed: 'sendResourceListChanged' };
    if (typeof e?.uri === 'string') {
        modern.notify.resourceUpdated(e.uri);
        for (const s of sessions.values()) if (s.subs.has(e.uri)) await s.server.server.sendResourceUpdated({ uri: e.uri }).catch(onerror);
    } else if (send[e?.kind]) {
        modern.bus.publish({ kind: e.kind });
        for (const s of sessions.values()) s.server[send[e.kind]]();
    } else return void res.writeHead(400).end('expected {"uri": "..."} or {"kind": "..._list_changed"}\n');
    res.writeHead(204).end();
}

const handler = (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/mcp') return void mcp(req, res);
    if (path === '/notify' && req.method === 'POST') return void notify(req, res);
    if (path === '/stats' && req.method === 'GET') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ requests: counts }));
    if (path === '/healthz') return void res.writeHead(200).end('ok\n');
    res.writeHead(404).end();
};
const httpServer = TLS_CERT
    ? https.createServer({ cert: readFileSync(TLS_CERT), key: readFileSync(TLS_KEY) }, handler)
    : http.createServer(handler);
httpServer.listen(PORT, '127.0.0.1', () => console.log(`upstream_v2 listening on 127.0.0.1:${httpServer.address().port}`));

async function stop() {
    await modern.close().catch(onerror);
    for (const s of sessions.values()) await s.transport.close().catch(onerror);
    httpServer.closeAllConnections();
    httpServer.close(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

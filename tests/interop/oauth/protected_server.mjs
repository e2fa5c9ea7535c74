// protected_server.mjs: an MCP server on the official TypeScript SDK 1.32.2 (2025-era sessions
// over Streamable HTTP) protected by OAuth with the SDK's own resource-server helpers:
// requireBearerAuth (401/403 with WWW-Authenticate: Bearer ... resource_metadata="...") and
// mcpAuthMetadataRouter (RFC 9728 protected resource metadata naming the issuer as its
// authorization server). Access tokens are JWTs verified against the issuer's JWKS (jose):
// signature, typ at+jwt, iss, exp, aud, and scope mcp:tools (403 without).
//
//   node protected_server.mjs --issuer http://127.0.0.1:PORT [--audience-file F]
//
// Loopback only, an ephemeral port. Prints `protected_server listening on 127.0.0.1:PORT` on
// stdout once bound; logs on stderr; exits 0 on SIGTERM/SIGINT.
// Accepted audiences: its own http://127.0.0.1:PORT/mcp, and every line of F (read again for
// each token; a test writes the URL of a proxy in front of this server there once it knows it).
// Serves:
//   /mcp                                          MCP (tools echo and whoami, resources/subscribe)
//   /.well-known/oauth-protected-resource/mcp     RFC 9728 metadata (resource = its /mcp URL)
//   POST /notify {"uri": U}                       notifications/resources/updated for U to every
//                                                 session subscribed to U (unauthenticated: a
//                                                 test hook); 200 {"sent": N}
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import express from 'express';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { mcpAuthMetadataRouter, getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { InsufficientScopeError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { isInitializeRequest, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const argOf = name => (process.argv.indexOf(name) > 0 ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const ISSUER = argOf('--issuer');
const AUDIENCE_FILE = argOf('--audience-file');
if (!ISSUER || !/^http:\/\/127\.0\.0\.1:\d+$/.test(ISSUER)) {
    console.error('usage: node protected_server.mjs --issuer http://127.0.0.1:PORT [--audience-file F]');
    process.exit(2);
}
const log = msg => console.error(`protected_server: ${msg}`);

// The issuer's metadata (RFC 8414 is not served by oidc-provider: OIDC discovery).
const conf = await (await fetch(`${ISSUER}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(10_000) })).json();
if (conf.issuer !== ISSUER) throw new Error(`issuer mismatch: ${conf.issuer}`);
const jwks = createRemoteJWKSet(new URL(conf.jwks_uri), { timeoutDuration: 5000 });

const app = express();
const httpServer = await new Promise(resolve => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
});
const PORT = httpServer.address().port;
const MCP_URL = new URL(`http://127.0.0.1:${PORT}/mcp`);

function audiences() {
    const list = [MCP_URL.href];
    if (AUDIENCE_FILE) {
        try {
            list.push(...readFileSync(AUDIENCE_FILE, 'utf8').split('\n').map(l => l.trim()).filter(Boolean));
        } catch {
            // not written yet
        }
    }
    return list;
}

const verifier = {
    async verifyAccessToken(token) {
        let payload;
        try {
            ({ payload } = await jwtVerify(token, jwks, { issuer: ISSUER, audience: audiences(), typ: 'at+jwt' }));
        } catch (e) {
            log(`token refused: ${e.code ?? ''} ${e.message}`);
            throw new InvalidTokenError(`token refused: ${e.message}`);
        }
        const scopes = String(payload.scope ?? '').split(' ').filter(Boolean);
        // Checked here rather than by requireBearerAuth's requiredScopes, which would name only
        // mcp:tools in the challenge (scope="..."), and the SDK client asks for what the
        // challenge names before the metadata's scopes_supported (SEP-835).
        if (!scopes.includes('mcp:tools')) throw new InsufficientScopeError('mcp:tools required');
        return {
            token,
            clientId: payload.client_id,
            scopes,
            expiresAt: payload.exp,
            resource: new URL([].concat(payload.aud)[0]),
            extra: { sub: payload.sub, org_id: payload.org_id }
        };
    }
};

app.use(mcpAuthMetadataRouter({
    oauthMetadata: conf,
    resourceServerUrl: MCP_URL,
    scopesSupported: ['mcp:listen', 'mcp:tools'],
    resourceName: 'mcpfan OAuth interop test server'
}));
const bearer = requireBearerAuth({
    verifier,
    resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(MCP_URL)
});

// Mcp-Session-Id -> {transport, server, subs}
const sessions = new Map();

function newServer(subs) {
    const server = new McpServer(
        { name: 'protected_server', version: '1.0.0' },
        { capabilities: { tools: {}, resources: { subscribe: true } } }
    );
    server.registerTool('echo', { description: 'Returns its text argument', inputSchema: { text: z.string() } },
        async ({ text }) => ({ content: [{ type: 'text', text }] }));
    server.registerTool('whoami', { description: 'The access token\'s subject, client and org_id' },
        async extra => ({ content: [{ type: 'text', text: JSON.stringify({ clientId: extra.authInfo?.clientId, ...extra.authInfo?.extra }) }] }));
    server.registerResource('static', 'test://static', { mimeType: 'text/plain' },
        async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'static content' }] }));
    server.server.setRequestHandler(SubscribeRequestSchema, req => (subs.add(req.params.uri), {}));
    server.server.setRequestHandler(UnsubscribeRequestSchema, req => (subs.delete(req.params.uri), {}));
    return server;
}

app.post('/notify', express.json(), async (req, res) => {
    let sent = 0;
    for (const s of sessions.values()) {
        if (s.subs.has(req.body?.uri)) {
            await s.server.server.sendResourceUpdated({ uri: req.body.uri });
            sent++;
        }
    }
    res.json({ sent });
});

app.all('/mcp', bearer, express.json(), async (req, res) => {
    try {
        const sid = req.headers['mcp-session-id'];
        if (sid) {
            const s = sessions.get(sid);
            if (!s) return void res.status(404).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Session not found' } });
            return void (await s.transport.handleRequest(req, res, req.body));
        }
        if (req.method !== 'POST' || !isInitializeRequest(req.body)) {
            return void res.status(400).json({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'No session: initialize first' } });
        }
        const subs = new Set();
        const server = newServer(subs);
        const transport = new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => sessions.set(id, { transport, server, subs })
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
        log(`session for ${req.auth?.clientId} (org_id ${req.auth?.extra?.org_id})`);
    } catch (e) {
        log(`/mcp: ${e?.stack ?? e}`);
        if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', id: null, error: { code: -32603, message: String(e?.message ?? e) } });
    }
});

const stop = sig => {
    log(`${sig}: stopping`);
    httpServer.close();
    httpServer.closeAllConnections();
    process.exit(0);
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
process.stdout.write(`protected_server listening on 127.0.0.1:${PORT}\n`);

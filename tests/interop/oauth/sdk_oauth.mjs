// sdk_oauth.mjs: the official TypeScript SDK 1.32.2 client's OAuth flow, headless, against an
// MCP server protected by the provider of this folder (provider.mjs), directly or through mcpfan.
//
//   node sdk_oauth.mjs MCP_URL --notify-url URL                  # directly: protected_server.mjs
//   node sdk_oauth.mjs MCP_URL --publish-url URL --publish-key K # through mcpfan (--upstream)
//
// 1. connect() to MCP_URL gets 401 with WWW-Authenticate: Bearer resource_metadata="..." (a URL
//    /.well-known/oauth-protected-resource[/...] on MCP_URL's origin); the
//    SDK's auth() reads the protected resource metadata it names, discovers the issuer (OIDC
//    discovery), registers a client dynamically, and starts an authorization code flow with
//    PKCE and the resource parameter; redirectToAuthorization() below follows the provider's
//    redirects headlessly (keeping its cookies: the provider signs "alice" in and consents by
//    itself) up to the redirect URI and keeps the code; finishAuth(code) gets the token.
// 2. A second connect() with the token: initialize, a 2025-era session.
// 3. Checks the access token: a JWT whose aud is MCP_URL (the URL this client uses), org_id acme.
// 4. Calls the tool `echo`, and `whoami` (the token reached the upstream: its client id).
// 5. resources/subscribe to a fresh URI, then makes the change known: POST {uri} to
//    --notify-url (protected_server.mjs), or POST /v1/publish to --publish-url with
//    Authorization: Bearer K (mcpfan; the key's tenant must be the token's org_id, acme); the
//    notification must arrive (bounded).
// Exit 0 on success; on failure the stage, the client's errors and every HTTP exchange.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createRecorder, createTest, fail, STEP_TIMEOUT_MS, waitUntil, withTimeout } from '../lib/common.mjs';

const NAME = 'sdk_oauth';
const USAGE = 'usage: node sdk_oauth.mjs http://127.0.0.1:PORT/mcp (--notify-url URL | --publish-url URL --publish-key KEY)';
const MCP_URL = process.argv[2];
const argOf = name => (process.argv.indexOf(name) > 0 ? process.argv[process.argv.indexOf(name) + 1] : undefined);
const NOTIFY_URL = argOf('--notify-url');
const PUBLISH_URL = argOf('--publish-url');
const PUBLISH_KEY = argOf('--publish-key');
if (!MCP_URL || !/^http:\/\/127\.0\.0\.1:\d+\/mcp$/.test(MCP_URL) || !NOTIFY_URL === !PUBLISH_URL || (PUBLISH_URL && !PUBLISH_KEY)) {
    console.error(USAGE);
    process.exit(2);
}
const EXPECTED_ORG = 'acme';
// Never contacted: the headless browser stops at the redirect to it and takes the code.
const REDIRECT_URL = 'http://127.0.0.1:9/oauth/callback';
const MAX_REDIRECTS = 10;

const rec = createRecorder();
const authLog = [];
const test = createTest(NAME, {
    report: () => {
        console.error('--- headless authorization (fetches of the browser):');
        for (const l of authLog) console.error(`  ${l}`);
        rec.dump();
    }
});

// The browser: GET the authorization URL, follow redirects (manual, so that the redirect to
// REDIRECT_URL is seen and not followed), keep cookies (name=value, sent back to the provider).
async function headlessAuthorize(authorizationUrl) {
    const jar = new Map();
    let url = new URL(authorizationUrl);
    const issuerOrigin = url.origin;
    for (let hop = 0; hop < MAX_REDIRECTS; hop++) {
        if (url.origin !== issuerOrigin) fail(`the authorization flow left the provider for ${url.href}`);
        const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
        const res = await withTimeout(
            fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} }),
            STEP_TIMEOUT_MS,
            `GET ${url.href}`
        );
        for (const sc of res.headers.getSetCookie()) {
            const [pair] = sc.split(';');
            const eq = pair.indexOf('=');
            const k = pair.slice(0, eq).trim();
            const v = pair.slice(eq + 1).trim();
            if (v === '' || /expires=Thu, 01 Jan 1970/i.test(sc)) jar.delete(k);
            else jar.set(k, v);
        }
        const location = res.headers.get('location');
        authLog.push(`GET ${url.href} -> ${res.status}${location ? ` Location: ${location}` : ''}`);
        if (res.status < 300 || res.status > 399 || !location) {
            fail(`the provider answered ${res.status} without a redirect at ${url.href}: ${(await res.text()).slice(0, 800)}`);
        }
        await res.body?.cancel();
        const next = new URL(location, url);
        if (next.href.startsWith(REDIRECT_URL)) {
            const p = next.searchParams;
            if (p.get('error')) fail(`authorization error: ${p.get('error')} ${p.get('error_description') ?? ''}`);
            if (!p.get('code')) fail(`redirect without a code: ${next.href}`);
            if (p.get('iss') && p.get('iss') !== issuerOrigin) fail(`iss ${p.get('iss')} in the redirect, expected ${issuerOrigin}`);
            return p.get('code');
        }
        url = next;
    }
    fail(`no redirect to ${REDIRECT_URL} within ${MAX_REDIRECTS} hops`);
}

// An OAuthClientProvider kept in memory; redirectToAuthorization() runs the headless browser.
class HeadlessOAuthProvider {
    code = undefined;
    authorizationUrl = undefined;
    #client = undefined;
    #tokens = undefined;
    #verifier = undefined;
    get redirectUrl() {
        return REDIRECT_URL;
    }
    get clientMetadata() {
        return {
            client_name: 'mcpfan OAuth interop test (SDK 1.32.2)',
            redirect_uris: [REDIRECT_URL],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }
    clientInformation() {
        return this.#client;
    }
    saveClientInformation(info) {
        this.#client = info;
    }
    tokens() {
        return this.#tokens;
    }
    saveTokens(tokens) {
        this.#tokens = tokens;
    }
    saveCodeVerifier(v) {
        this.#verifier = v;
    }
    codeVerifier() {
        if (!this.#verifier) throw new Error('no code verifier saved');
        return this.#verifier;
    }
    async redirectToAuthorization(url) {
        this.authorizationUrl = new URL(url);
        this.code = await headlessAuthorize(url);
    }
}

test.run(async () => {
    const auth = new HeadlessOAuthProvider();

    test.stage = 'connect without a token (401, discovery, registration, authorization)';
    const first = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: auth, fetch: rec.fetch });
    const c1 = new Client({ name: 'sdk-oauth-interop', version: '1.0.0' });
    c1.onerror = test.onClientError;
    let refused;
    try {
        await withTimeout(c1.connect(first), STEP_TIMEOUT_MS * 3, 'first connect');
    } catch (e) {
        refused = e;
    }
    if (!(refused instanceof UnauthorizedError)) fail(`the first connect should end in UnauthorizedError (authorization needed), got ${refused?.stack ?? 'success'}`);
    const challenge = rec.exchanges.find(x => x.status === 401);
    if (!challenge) fail('no 401 answer seen');
    const wwwAuth = challenge.resHeaders['www-authenticate'] ?? '';
    const rm = /resource_metadata="([^"]+)"/.exec(wwwAuth);
    if (!/^Bearer\b/i.test(wwwAuth) || !rm) fail(`401 without WWW-Authenticate: Bearer resource_metadata="...": '${wwwAuth}'`);
    // The metadata of the server the client talks to (mcpfan's own, when in front).
    const rmUrl = URL.parse(rm[1]);
    if (rmUrl?.origin !== new URL(MCP_URL).origin || !rmUrl.pathname.startsWith('/.well-known/oauth-protected-resource'))
        fail(`resource_metadata="${rm[1]}" is not ${new URL(MCP_URL).origin}/.well-known/oauth-protected-resource[...]`);
    if (!rec.exchanges.some(x => x.url === rm[1] && x.status === 200)) fail(`the SDK did not fetch ${rm[1]} (200)`);
    if (!auth.code) fail('no authorization code was obtained');
    const a = auth.authorizationUrl;
    if (a.searchParams.get('code_challenge_method') !== 'S256' || !a.searchParams.get('code_challenge')) fail(`authorization request without PKCE S256: ${a.href}`);
    if (a.searchParams.get('resource') !== MCP_URL) fail(`authorization request resource ${a.searchParams.get('resource')}, expected ${MCP_URL}: ${a.href}`);
    await first.close().catch(() => {});

    test.stage = 'token request (finishAuth)';
    await withTimeout(first.finishAuth(auth.code), STEP_TIMEOUT_MS, 'finishAuth');
    const token = auth.tokens()?.access_token;
    if (!token) fail('no access token saved');
    let claims;
    try {
        if (decodeProtectedHeader(token).typ !== 'at+jwt') fail(`access token typ ${decodeProtectedHeader(token).typ}, expected at+jwt`);
        claims = decodeJwt(token);
    } catch (e) {
        fail(`the access token is not a JWT: ${e.message}: ${token}`);
    }
    if ([].concat(claims.aud)[0] !== MCP_URL) fail(`token aud ${JSON.stringify(claims.aud)}, expected ${MCP_URL}`);
    if (claims.org_id !== EXPECTED_ORG) fail(`token org_id ${claims.org_id}, expected ${EXPECTED_ORG}`);
    if (claims.sub !== 'alice') fail(`token sub ${claims.sub}, expected alice`);
    const scopes = String(claims.scope ?? '').split(' ');
    for (const s of ['mcp:listen', 'mcp:tools']) if (!scopes.includes(s)) fail(`token scope '${claims.scope}' lacks ${s}`);

    test.stage = 'connect with the token';
    const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: auth, fetch: rec.fetch });
    const client = new Client({ name: 'sdk-oauth-interop', version: '1.0.0' });
    client.onerror = test.onClientError;
    const received = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, n => void received.push(n));
    await withTimeout(client.connect(transport), STEP_TIMEOUT_MS, 'connect with the token');

    test.stage = 'tools/call';
    const echo = await withTimeout(client.callTool({ name: 'echo', arguments: { text: 'through OAuth' } }), STEP_TIMEOUT_MS, 'tools/call echo');
    if (echo.content?.[0]?.text !== 'through OAuth') fail(`echo answered ${JSON.stringify(echo)}`);
    const who = await withTimeout(client.callTool({ name: 'whoami', arguments: {} }), STEP_TIMEOUT_MS, 'tools/call whoami');
    const whoText = JSON.parse(who.content?.[0]?.text ?? '{}');
    if (whoText.clientId !== claims.client_id || whoText.org_id !== EXPECTED_ORG) fail(`whoami answered ${JSON.stringify(who)}, expected client ${claims.client_id}, org_id ${EXPECTED_ORG}`);

    test.stage = 'resources/subscribe and a change';
    const uri = `test://oauth/${Date.now()}-${Math.random().toString(36).slice(2)}`;
    await withTimeout(client.subscribeResource({ uri }), STEP_TIMEOUT_MS, 'resources/subscribe');
    // The GET stream carries the notification: the SDK opens it after initialize; wait for it.
    await waitUntil(() => rec.exchanges.some(x => x.method === 'GET' && x.status === 200), STEP_TIMEOUT_MS, 'the session\'s GET stream open');
    if (NOTIFY_URL) {
        const res = await withTimeout(fetch(NOTIFY_URL, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri }) }), STEP_TIMEOUT_MS, 'POST notify');
        const body = await res.json();
        if (body.sent !== 1) fail(`POST ${NOTIFY_URL} answered ${JSON.stringify(body)}, expected {"sent":1}`);
    } else {
        const res = await withTimeout(
            fetch(PUBLISH_URL, {
                method: 'POST',
                headers: { 'content-type': 'application/json', authorization: `Bearer ${PUBLISH_KEY}` },
                body: JSON.stringify({ method: 'notifications/resources/updated', params: { uri } })
            }),
            STEP_TIMEOUT_MS,
            'POST /v1/publish'
        );
        const text = await res.text();
        if (res.status !== 202 || JSON.parse(text).accepted !== 1) fail(`POST ${PUBLISH_URL} answered ${res.status} ${text}, expected 202 {"accepted":1}`);
    }
    await waitUntil(() => received.some(n => n.params?.uri === uri), STEP_TIMEOUT_MS, `notifications/resources/updated for ${uri}`);

    test.stage = 'close';
    await withTimeout(client.close(), STEP_TIMEOUT_MS, 'close');
    console.log(`${NAME}: PASS (${MCP_URL}: 401 -> discovery -> registration -> PKCE code -> token for ${claims.client_id}/${claims.sub}; tool call; a change notified)`);
});

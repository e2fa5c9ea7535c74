// provider.mjs: a real, certified OpenID provider (oidc-provider, pinned in package-lock.json)
// for mcpfan's OAuth tests. Loopback only. See README.md in this folder.
//
//   node provider.mjs --port N --keys KEYS.json [--resource URL]... [--opaque-resource URL]...
//                     [--ttl S]
//       Serves the provider on 127.0.0.1:N (N = 0: a free port, chosen before the issuer is
//       built) with issuer http://127.0.0.1:PORT. Prints exactly one line on stdout,
//       `READY http://127.0.0.1:PORT`, once listening; logs go to stderr. Exits 0 on
//       SIGTERM/SIGINT. KEYS.json: a private JWKS ({"keys": [...]}, made by --make-keys); the
//       first key signs (its alg, else derived from its type). Key rotation: stop the process
//       and start it again on the same --port with another file.
//       --resource URL (repeatable): a resource (RFC 8707) tokens may be issued for; access
//       tokens for it are JWTs (RFC 9068) with aud = URL. The first is the default when a
//       client names none. Without any --resource (and --opaque-resource): every
//       http://127.0.0.1:*, http://localhost:* or http://[::1]:* URL is accepted as a resource
//       (no default), for tests whose server port is known only later.
//       --opaque-resource URL (repeatable): the same, but its access tokens are opaque
//       (introspectable at /token/introspection; the provider refuses to introspect JWTs).
//       --ttl S: access token lifetime in seconds (default 600).
//   node provider.mjs --make-keys OUT.json [--kid K] [--alg RS256|PS256|ES256|EdDSA] [--keep OLD.json]
//       Writes a new private JWKS with one signing key (default alg RS256, kid random); with
//       --keep, the keys of OLD.json follow it (still published in the JWKS, no longer signing:
//       a rotation with overlap).
//
// Configuration: scopes openid, offline_access, mcp:listen, mcp:tools; grants
// authorization_code (PKCE S256 required for every client), refresh_token, client_credentials;
// introspection, revocation, dynamic client registration (open, no initial access token);
// no devInteractions: GET /interaction/UID signs the fixed account "alice" in without a page,
// and consent is given automatically (loadExistingGrant), so a headless client that follows
// redirects and keeps cookies gets a code. Access tokens carry `org_id`: the client's
// `org_id` metadata, else "acme".
//
// Static clients (token_endpoint_auth_method client_secret_basic; client_secret_post is
// accepted too):
//   svc-acme      secret svc-acme-secret-0123456789      org_id acme     scope openid mcp:listen mcp:tools
//   svc-beta      secret svc-beta-secret-0123456789      org_id beta     scope openid mcp:listen mcp:tools
//   svc-badorg    secret svc-badorg-secret-0123456789    org_id bad/org  scope openid mcp:listen mcp:tools
//   svc-nolisten  secret svc-nolisten-secret-0123456789  org_id acme     scope mcp:tools (asking for
//                 mcp:listen is refused: invalid_scope)
// all with grant_types [client_credentials], no redirect URIs.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';

const USAGE = `usage: node provider.mjs --port N --keys KEYS.json [--resource URL]... [--opaque-resource URL]... [--ttl S]
       node provider.mjs --make-keys OUT.json [--kid K] [--alg RS256|PS256|ES256|EdDSA] [--keep OLD.json]`;

function usage(msg) {
    if (msg) console.error(`provider: ${msg}`);
    console.error(USAGE);
    process.exit(2);
}

// argv: {name: [values]} for --name VALUE pairs.
function parseArgs(argv) {
    const out = {};
    for (let i = 0; i < argv.length; i += 2) {
        const name = argv[i];
        if (!name.startsWith('--') || i + 1 >= argv.length) usage(`bad argument '${name}'`);
        (out[name.slice(2)] ??= []).push(argv[i + 1]);
    }
    return out;
}
const args = parseArgs(process.argv.slice(2));
const one = name => (args[name] ? args[name][args[name].length - 1] : undefined);
const known = new Set(['port', 'keys', 'resource', 'opaque-resource', 'ttl', 'make-keys', 'kid', 'alg', 'keep']);
for (const k of Object.keys(args)) if (!known.has(k)) usage(`unknown option --${k}`);

// ------------------------------------------------------------------------------ --make-keys
const ALGS = {
    RS256: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    PS256: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    ES256: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    EdDSA: () => generateKeyPairSync('ed25519')
};

if (one('make-keys')) {
    const alg = one('alg') ?? 'RS256';
    if (!ALGS[alg]) usage(`--alg must be one of ${Object.keys(ALGS).join(', ')}`);
    const { privateKey } = ALGS[alg]();
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: one('kid') ?? randomUUID(), alg, use: 'sig' };
    let kept = [];
    if (one('keep')) {
        try {
            kept = JSON.parse(readFileSync(one('keep'), 'utf8')).keys;
        } catch (e) {
            usage(`cannot read --keep ${one('keep')}: ${e.message}`);
        }
    }
    writeFileSync(one('make-keys'), JSON.stringify({ keys: [jwk, ...kept] }, null, 2) + '\n', { mode: 0o600 });
    process.exit(0);
}

// ------------------------------------------------------------------------------ provider
// Imported here, so that --make-keys needs no installed package.
const { default: Provider, errors: oidcErrors } = await import('oidc-provider');
const PORT = Number(one('port') ?? 'x');
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) usage('--port N required (0: a free port)');
if (!one('keys')) usage('--keys KEYS.json required');
const TTL = Number(one('ttl') ?? 600);
if (!Number.isInteger(TTL) || TTL <= 0) usage('--ttl must be a positive number of seconds');

let jwks;
try {
    jwks = JSON.parse(readFileSync(one('keys'), 'utf8'));
} catch (e) {
    usage(`cannot read --keys ${one('keys')}: ${e.message}`);
}
if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0 || !jwks.keys[0].d) usage('--keys must hold a private JWKS {"keys": [...]}');
const algOf = k => k.alg ?? (k.kty === 'RSA' ? 'RS256' : k.kty === 'EC' ? 'ES256' : k.kty === 'OKP' ? 'EdDSA' : undefined);
const SIGN_ALG = algOf(jwks.keys[0]);
if (!SIGN_ALG) usage('cannot tell the first key\'s alg');

const JWT_RESOURCES = args.resource ?? [];
const OPAQUE_RESOURCES = args['opaque-resource'] ?? [];
const ANY_LOOPBACK = JWT_RESOURCES.length === 0 && OPAQUE_RESOURCES.length === 0;
const RESOURCE_SCOPE = 'mcp:listen mcp:tools';
// mcp:* are static scopes as well, so that a client's `scope` metadata limits them (oidc-provider
// checks a client's allowed scopes against the static ones only).
const STATIC_SCOPES = ['openid', 'offline_access', 'mcp:listen', 'mcp:tools'];

function resourceFormat(resource) {
    if (JWT_RESOURCES.includes(resource)) return 'jwt';
    if (OPAQUE_RESOURCES.includes(resource)) return 'opaque';
    if (ANY_LOOPBACK) {
        const u = URL.parse(resource);
        if (u && u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) && !u.hash) return 'jwt';
    }
    return undefined;
}

const log = msg => console.error(`provider: ${msg}`);

// The port first (so --port 0 yields the issuer), then the provider.
const server = http.createServer();
server.on('error', e => {
    log(`listen: ${e.message}`);
    process.exit(1);
});
await new Promise(resolve => server.listen(PORT, '127.0.0.1', resolve));
const port = server.address().port;
const ISSUER = `http://127.0.0.1:${port}`;

const staticClient = (id, orgId, scope) => ({
    client_id: id,
    client_secret: `${id}-secret-0123456789`,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
    scope,
    org_id: orgId
});

const configuration = {
    clients: [
        staticClient('svc-acme', 'acme', 'openid mcp:listen mcp:tools'),
        staticClient('svc-beta', 'beta', 'openid mcp:listen mcp:tools'),
        staticClient('svc-badorg', 'bad/org', 'openid mcp:listen mcp:tools'),
        staticClient('svc-nolisten', 'acme', 'mcp:tools')
    ],
    jwks,
    scopes: STATIC_SCOPES,
    extraClientMetadata: { properties: ['org_id'] },
    clientDefaults: {
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: SIGN_ALG
    },
    cookies: { keys: ['mcpfan-oauth-fixture-cookie-key-not-secret'] },
    pkce: { required: () => true },
    features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        introspection: { enabled: true },
        revocation: { enabled: true },
        registration: { enabled: true },
        resourceIndicators: {
            enabled: true,
            defaultResource: async (_ctx, _client, oneOf) => oneOf ?? JWT_RESOURCES[0] ?? OPAQUE_RESOURCES[0],
            useGrantedResource: async () => true,
            getResourceServerInfo: async (_ctx, resource) => {
                const format = resourceFormat(resource);
                if (!format) throw new oidcErrors.InvalidTarget(`resource ${resource} is not served by this provider`);
                return {
                    scope: RESOURCE_SCOPE,
                    audience: resource,
                    accessTokenTTL: TTL,
                    accessTokenFormat: format,
                    ...(format === 'jwt' ? { jwt: { sign: { alg: SIGN_ALG } } } : {})
                };
            }
        }
    },
    // Auto-consent: every scope and resource scope the request asks for is granted to the
    // signed-in account (no consent page).
    loadExistingGrant: async ctx => {
        const { client, session, params } = ctx.oidc;
        if (!session?.accountId) return undefined;
        const grantId = ctx.oidc.result?.consent?.grantId || session.grantIdFor(client.clientId);
        const grant = (grantId && (await ctx.oidc.provider.Grant.find(grantId))) ||
            new ctx.oidc.provider.Grant({ accountId: session.accountId, clientId: client.clientId });
        const requested = String(params.scope ?? '').split(' ').filter(Boolean);
        // Every scope here is a static one (configuration.scopes), which the consent prompt
        // checks as OIDC scopes too; the resource scopes go to the resource's grant.
        grant.addOIDCScope(requested.filter(s => STATIC_SCOPES.includes(s)).join(' '));
        const resources = params.resource ? [].concat(params.resource) : [];
        for (const r of resources) {
            if (resourceFormat(r)) grant.addResourceScope(r, requested.filter(s => RESOURCE_SCOPE.split(' ').includes(s)).join(' '));
        }
        await grant.save();
        return grant;
    },
    findAccount: async (_ctx, sub) => ({
        accountId: sub,
        claims: async () => ({ sub, org_id: 'acme' })
    }),
    extraTokenClaims: async (ctx, token) => {
        const client = ctx?.oidc?.client ?? (token.clientId ? await ctx.oidc.provider.Client.find(token.clientId) : undefined);
        return { org_id: client?.org_id ?? 'acme' };
    },
    ttl: {
        AccessToken: () => TTL,
        ClientCredentials: () => TTL,
        AuthorizationCode: () => 60,
        IdToken: () => 3600,
        RefreshToken: () => 3600,
        Interaction: () => 600,
        Session: () => 3600,
        Grant: () => 3600
    },
    renderError: async (ctx, out, error) => {
        log(`error page: ${JSON.stringify(out)} ${error?.stack ?? ''}`);
        ctx.type = 'json';
        ctx.body = out;
    }
};

const provider = new Provider(ISSUER, configuration);
for (const ev of ['server_error', 'grant.error', 'authorization.error', 'introspection.error', 'registration_create.error', 'revocation.error']) {
    provider.on(ev, (ctx, err) => log(`${ev}: ${err?.name ?? ''} ${err?.message ?? err} ${err?.error_description ?? ''}`));
}
provider.on('grant.success', ctx => log(`token issued to ${ctx.oidc.client?.clientId}`));

// GET /interaction/UID: no page; signs alice in, and (should a consent prompt still come)
// grants what the prompt lists missing.
async function interaction(req, res) {
    try {
        const details = await provider.interactionDetails(req, res);
        const { prompt, params, session } = details;
        let result;
        if (prompt.name === 'login') {
            result = { login: { accountId: 'alice' } };
        } else if (prompt.name === 'consent') {
            const grant = details.grantId
                ? await provider.Grant.find(details.grantId)
                : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
            const d = prompt.details;
            if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
            if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
            for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
            result = { consent: { grantId: await grant.save() } };
        } else {
            throw new Error(`unexpected prompt ${prompt.name}`);
        }
        log(`interaction ${prompt.name} for ${params.client_id}: done headlessly`);
        await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    } catch (e) {
        log(`interaction failed: ${e?.stack ?? e}`);
        if (!res.headersSent) {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(`interaction failed: ${e?.message ?? e}\n`);
        }
    }
}

const callback = provider.callback();
const ISSUER_HOST = new URL(ISSUER).host;
server.on('request', (req, res) => {
    // oidc-provider builds its endpoint URLs (discovery, redirects) from the request's Host;
    // every request here is for the issuer, so a client that sends a Host without the port
    // (the C++ test harness sends "Host: 127.0.0.1") still gets the issuer's URLs.
    req.headers.host = ISSUER_HOST;
    if (req.method === 'GET' && req.url.startsWith('/interaction/')) return void interaction(req, res);
    return callback(req, res);
});

const stop = sig => {
    log(`${sig}: stopping`);
    server.close();
    server.closeAllConnections();
    process.exit(0);
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

log(`issuer ${ISSUER}, signing alg ${SIGN_ALG}, kid ${jwks.keys[0].kid ?? '(none)'}, resources ${ANY_LOOPBACK ? 'any loopback URL' : [...JWT_RESOURCES, ...OPAQUE_RESOURCES.map(r => `${r} (opaque)`)].join(' ')}`);
process.stdout.write(`READY ${ISSUER}\n`);

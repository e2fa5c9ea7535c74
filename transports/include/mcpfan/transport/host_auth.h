#pragma once
/**
 * A host's own client authentication (docs/embedding.md): ServerConfig::auth.authenticate_client maps a
 * request's credentials to a tenant and the resource URI prefixes it may subscribe to, in
 * place of mcpfan's JWT verifier. It cannot be combined with jwt_secret_file or
 * jwt_public_key_file (Server::start() refuses, -32602).
 *
 * When it is called: wherever a JWT would be verified without it.
 *   - HTTP: each request to /mcp that mcpfan serves itself, with the Authorization header
 *     value ("" when there is none): every POST once its JSON-RPC body decodes, and the GET
 *     and DELETE of a 2025 session. With ServerConfig::upstream.url, requests forwarded to the
 *     upstream are the upstream's to authenticate (only listens, held sessions and
 *     initialize are asked). Not /healthz, /metrics, /status or /v1/publish (their own rules;
 *     /metrics and /status go to loopback peers and "*" publisher keys, as with tokens).
 *   - Stdio (Server::attach_stdio) and Unix (ServerConfig::listen.unix_path) clients: each request
 *     that carries a credential in params._meta["mcpfan/authorization"], and, while the
 *     connection is bound to no tenant yet, its requests without one (with ""). So an
 *     attached client is no longer trusted as tenant "default": a host that trusts the
 *     children it attached grants them on ClientTransport::Stdio whatever they send. A
 *     connection bound to one tenant (by a first grant, or by unix_tenant) that is granted
 *     another later is refused (-32031, "bound to tenant ...").
 *
 * Thread affinity: called on the server's worker threads, concurrently from several of them:
 * the callable must be thread-safe. It runs on a worker's event loop, so it must not block
 * for long (every connection of that worker waits meanwhile): look the credential up in
 * memory; anything slow (a remote introspection) belongs in a cache the host fills from its
 * own threads. It may not call back into the Server (start, stop, reload, attach_stdio;
 * Hub::publish() is thread-safe and allowed, though rarely useful here).
 *
 * Lifetimes: the views in ClientCredentials are valid only during the call (copy what you
 * keep). The callable (and whatever it refers to) must stay valid until Server::stop()
 * returns; the Server keeps its own copy of the std::function.
 *
 * Outcomes, worded and counted like the JWT verifier's:
 *   - ClientGrant: the client speaks for `tenant` (1..64 characters of [A-Za-z0-9._-], the
 *     rule of the JWT `tenant` claim), acquired in the tenant table like a token's tenant (a
 *     full table: 503); `uri_prefixes` restricts its resource URIs like a token's `uris`
 *     claim (a URI outside them: 403, JSON-RPC -32602; an empty vector allows none;
 *     nullopt allows every URI).
 *   - ClientDenial: 401 with `message` (and the WWW-Authenticate Bearer challenge; a stdio
 *     client gets JSON-RPC -32030), counted in
 *     mcpfan_auth_failures_total{scope="client",reason="rejected"}.
 *   - A grant with an invalid tenant name, or an exception thrown by the callable: 500 with
 *     JSON-RPC -32603 (stdio: the -32603 error), counted with reason="host_error" (an
 *     exception also in mcpfan_callback_exceptions_total); the server goes on serving.
 */
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mcpfan {

/** How the client reached the server. */
enum class ClientTransport {
  Http,   // a request on the HTTP listener (/mcp)
  Stdio,  // a stdio-framed client the host attached (Server::attach_stdio)
  Unix,   // a stdio-framed client of the Unix socket (ServerConfig::listen.unix_path)
};

/** What a request presents. Views valid only during the authenticator's call. */
struct ClientCredentials {
  /** The HTTP Authorization header value, or a stdio client's params._meta credential; "" when none. */
  std::string_view authorization;
  ClientTransport transport = ClientTransport::Http;
};

/** Accepted: the tenant the client speaks for, and the URI prefixes it may subscribe to. */
struct ClientGrant {
  std::string tenant;                                     // 1..64 characters of [A-Za-z0-9._-]
  std::optional<std::vector<std::string>> uri_prefixes;  // nullopt: any URI; empty: none
  std::string subject{};  // the principal (as a token's `sub`): a task polled for it is its alone (poll-to-push)
};

/** Refused: `message` is shown to the client (401) and must not contain secrets. */
struct ClientDenial {
  std::string message;
};

/** See the top of this header: thread-safe, non-blocking, valid until Server::stop() returns. */
using ClientAuthenticator = std::function<std::variant<ClientGrant, ClientDenial>(const ClientCredentials&)>;

}  // namespace mcpfan

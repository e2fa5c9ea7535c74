#pragma once
// The transport-neutral half of serving an MCP client (HTTP, stdio, and later the NATS and
// upstream paths): who is asking (credentials to tenant), whether a listen or a session URI
// is admitted (token URI prefixes, tenant ceilings, per-client bounds), the subscription
// filter of a 2025 session, and how every refusal is worded. Each transport only renders a
// Refusal its own way (an HTTP status and body, or a JSON-RPC error line).
//
// Thread-safety: ClientCore is shared by every worker and may be called from any thread;
// it holds only immutable configuration and thread-safe tables (Limits, TenantTable,
// AuthCounters, the swappable client keys, the host's authenticator, itself thread-safe by
// contract: mcpfan/transport/host_auth.h). Lifetime: owned by the Server's state, outlives every worker.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mcp/auth.h"
#include "mcp/limits.h"
#include "mcp/messages.h"
#include "mcp/swappable.h"
#include "mcp/task_owners.h"
#include "mcp/usage.h"
#include "mcpfan/shard.h"
#include "mcpfan/tenants.h"
#include "mcpfan/transport/host_auth.h"
#include "oauth/agent.h"

namespace mcpfan::detail {

/** Who is asking: the tenant a client speaks for and, with client auth on, its token's identity. */
struct Caller {
  TenantId tenant = kDefaultTenant;
  std::optional<ClientIdentity> identity;  // set when client auth is configured
  [[nodiscard]] bool may_subscribe(std::string_view uri) const { return !identity || identity->uri_allowed(uri); }
};

/** A refused client request, worded once for every transport. */
struct Refusal {
  int rpc_code = 0;
  std::string message;
  int http_status = 400;                 // what the HTTP transport answers with
  std::optional<AuthFailure> auth;       // a 401: its WWW-Authenticate challenge depends on the failure
  bool retry_after = false;              // a limit: worth retrying (HTTP Retry-After: 1)
  std::string data{};                    // the JSON-RPC error's data (JSON text), if any
};

/** What a request brings back after waiting for the OAuth agent (HttpRequest::waited, Exchange::suspend). */
struct AuthWait {
  bool keys_refetched = false;                      // the JWKS was fetched again: a kid still unknown is final
  std::optional<oauth::Introspected> introspected;  // the agent's verdict on the request's token
  std::optional<oauth::Authorized> authorized{};    // the application's answer (--authorize-url)
};

/**
 * verify() cannot decide on this loop turn: `start` queues the question to the OAuth agent,
 * whose thread calls `done` with what the request waits for (the caller posts it to its loop).
 * TooSoon (keys): decide now as if the keys were fetched again; Full: 503.
 */
struct AuthPending {
  std::function<oauth::Agent::Wait(std::function<void(AuthWait)> done)> start;
};

/** A listen admitted: what the shard needs, the acknowledgement, and the usage it holds until it ends. */
struct ListenGrant {
  ListenPlan plan;
  StreamUsage usage;
};

class ClientCore {
 public:
  /** `max_uris_per_listen` and `max_listens_per_connection` word the per-client refusals. */
  /** `auth` is read per verification: a reload (SIGHUP) swaps in new keys without a restart. */
  /** `host`, when not empty, replaces `auth` (Server::start refuses both); it is never swapped. */
  ClientCore(TenantTable& tenants, Limits& limits, const Swappable<ClientAuth>& auth, const ClientAuthenticator& host,
             AuthCounters& counters, std::size_t max_uris_per_listen, std::size_t max_listens_per_connection) noexcept
      : tenants_(tenants), limits_(limits), auth_(auth), host_(host), counters_(counters),
        max_uris_(max_uris_per_listen), max_listens_(max_listens_per_connection) {}

  /** Whether clients authenticate (tokens or the host's callback); a reload never changes it (Server::reload refuses
   * that). */
  [[nodiscard]] bool auth_enabled() const {
    return host_auth() || (oauth_ && oauth_->tokens()) || auth_.load()->enabled();
  }
  /**
   * The OAuth agent (--oauth-issuer, --authorize-url), or null; set once by the server before
   * any client.
   */
  void set_oauth(oauth::Agent* agent) noexcept { oauth_ = agent; }
  [[nodiscard]] oauth::Agent* oauth() const noexcept { return oauth_; }
  /** Whether the host's own authenticator decides (ServerConfig::auth.authenticate_client). */
  [[nodiscard]] bool host_auth() const noexcept { return static_cast<bool>(host_); }
  [[nodiscard]] TenantTable& tenants() noexcept { return tenants_; }
  [[nodiscard]] Limits& limits() noexcept { return limits_; }
  [[nodiscard]] AuthCounters& counters() noexcept { return counters_; }

  struct Verified {
    ClientIdentity identity;
    TenantId tenant;
    TenantRef ref;  // the tenant's entry, acquired: only an authenticated client creates one
  };
  /**
   * Verifies a credential: "Bearer <jwt>" (an Authorization header, or a stdio client's
   * `_meta` value), or a bare token when `bare_token_ok`; with the host's authenticator, its
   * answer for (credential, transport) instead. Counts a failure by its reason. A full tenant
   * table refuses a valid token or grant (503, Limit::Tenants). Never throws what the host's
   * callable throws: that is a 500 (-32603).
   *
   * The order tokens are tried in (docs/security.md "Which method takes a token"): the host's
   * authenticator alone when set; else a JWT whose `iss` is --oauth-issuer goes to the OAuth
   * verifier, another JWT to the static keys (--jwt-*-file) when configured, and what is left
   * to introspection when configured; else it is refused, worded by the method it came closest
   * to. AuthPending: the OAuth agent must be asked first (the request waits, then calls again
   * with `waited`).
   */
  [[nodiscard]] std::variant<Verified, Refusal, AuthPending> verify(std::string_view credential, bool bare_token_ok,
                                                                    ClientTransport transport,
                                                                    const AuthWait* waited = nullptr);
  /**
   * --authorize-url: narrows `spec` (a listen's, or a resources/subscribe's one URI) to what
   * the application allows `caller` to watch. monostate: go on with what is left of `spec`;
   * AuthPending: ask first (then again with `waited`); a refusal: 403 when nothing is
   * allowed, 503 when the application did not answer (fail closed). Without it: monostate.
   */
  [[nodiscard]] std::variant<std::monostate, Refusal, AuthPending> authorize(const Caller& caller,
                                                                             std::string_view method, ListenSpec& spec,
                                                                             const AuthWait* waited);
  /** A caller whose OAuth token lacks --oauth-listen-scope: the 403 insufficient_scope refusal (counted). */
  [[nodiscard]] std::optional<Refusal> check_listen_scope(const Caller& caller);
  /** A stdio client that must authenticate and sent no token (counted as missing). */
  [[nodiscard]] Refusal credentials_required();
  /** A token for another tenant than the one the connection is bound to (counted). */
  [[nodiscard]] Refusal wrong_tenant(TenantId bound);

  /** The refusal for `limit` hit by a client of `tenant`: a tenant or server ceiling, or the client's own table. */
  [[nodiscard]] Refusal refusal(Limit limit, TenantId tenant) const;
  /** The first URI the caller's token does not cover, counted and worded (403, -32602). */
  [[nodiscard]] std::optional<Refusal> check_uris(const Caller& caller, const std::vector<std::string>& uris);
  [[nodiscard]] std::optional<Refusal> check_uri(const Caller& caller, const std::string& uri);

  /**
   * Admits a listen: task notifications only for a client that declared the Tasks extension
   * on this request (`declares_tasks`; else -32021), every URI allowed for the caller, then
   * one stream and its subscriptions (URIs and task ids) within the tenant's ceilings. `spec`
   * is consumed only when admitted. A task id that names a task polled here for another
   * principal (set_task_owners) is left out: not agreed, not acknowledged, never delivered.
   */
  [[nodiscard]] std::variant<ListenGrant, Refusal> admit_listen(const Caller& caller, ListenSpec& spec,
                                                                std::string_view id, bool declares_tasks);
  /**
   * Right after `sub` was subscribed with `filter` on `shard`: the newest kept state of each
   * task it names goes to it alone (TaskStates), behind the acknowledgement.
   */
  void replay_task_states(Shard& shard, SubId sub, const Filter& filter);
  /** Where task states are kept (the hub's); set once by the server before any client. */
  void set_task_states(TaskStates* states) noexcept { task_states_ = states; }
  /**
   * Poll-to-push's owners of the tasks it polls (--upstream-task-poll); set once by the server
   * before any client. With it, a listen's task ids that name another principal's task are
   * left out of what it agrees to (mcp/task_owners.h).
   */
  void set_task_owners(TaskOwners* owners) noexcept { task_owners_ = owners; }
  [[nodiscard]] TaskOwners* task_owners() noexcept { return task_owners_; }

  /** A 2025 session's subscription: its URIs and every list_changed kind (sessions get them all). */
  [[nodiscard]] static Filter session_filter(TenantId tenant, const SessionUris& uris);

 private:
  TenantTable& tenants_;
  Limits& limits_;
  /** The host's answer, as a verified identity or a refusal (host_auth.h: the outcomes). */
  [[nodiscard]] std::variant<ClientIdentity, Refusal> ask_host(std::string_view credential, ClientTransport transport);
  [[nodiscard]] Refusal host_error(std::string message);
  /** The OAuth leg of verify(): a JWT of the issuer, or introspection. */
  [[nodiscard]] std::variant<ClientIdentity, Refusal, AuthPending> verify_oauth(std::string_view token, bool ours,
                                                                                const AuthWait* waited);
  [[nodiscard]] Refusal auth_refusal(AuthFailure kind, std::string message);

  const Swappable<ClientAuth>& auth_;
  const ClientAuthenticator& host_;  // ServerState::config's: fixed once the server exists
  AuthCounters& counters_;
  std::size_t max_uris_;
  std::size_t max_listens_;
  TaskStates* task_states_ = nullptr;
  TaskOwners* task_owners_ = nullptr;
  oauth::Agent* oauth_ = nullptr;
};

}  // namespace mcpfan::detail

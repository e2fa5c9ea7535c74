#pragma once
// The OAuth agent (docs/security.md "OAuth"): what an OAuth resource server must ask other
// services, asked from one thread of its own so that no worker loop ever waits on the network.
//   - The issuer's metadata (RFC 8414, then OpenID Connect discovery) and its JWKS: fetched at
//     start, refreshed every --oauth-jwks-refresh-s (sooner when the answer's Cache-Control
//     max-age says so), and fetched again when a token names a key id the set lacks, at most
//     once per --oauth-jwks-min-refresh-s, so a stream of bogus kids cannot make mcpfan hammer
//     the authorization server. A failed fetch keeps the keys it had (rotation never needs a
//     restart, an outage never drops keys that still verify) and is counted and logged.
//   - RFC 7662 introspection of tokens that are not the issuer's JWTs, verdicts cached (bounded,
//     never past the token's exp).
//   - The application's --authorize-url (oauth/authorize.h): one call per distinct question in
//     flight, answers cached (bounded, for the answer's ttlMs), each call within
//     --authorize-timeout-ms. It works with any client authentication, OAuth or not.
// Workers read the keys and the caches directly (keys(): an atomic snapshot; the caches: a
// mutex held for a look-up); what must be fetched is queued to the agent with a callback,
// which runs on the agent's thread once the answer (or the failure) is there; the caller
// posts it on to its own loop. Every wait is bounded: --oauth-max-waiting callbacks at once
// (more are refused: the request gets 503), each fetch by --oauth-fetch-timeout-ms.
//
// Thread affinity: start()/stop() from the controlling thread; every other method from any
// thread. Callbacks run on the agent's thread and must not block. Lifetime: stop() before
// destruction; callbacks not yet run are run (with a failure) by stop().
#include <uv.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "mcpfan/result.h"
#include "mcpfan/transport/server_config.h"
#include "oauth/access_token.h"
#include "oauth/authorize.h"
#include "oauth/expiring_cache.h"
#include "oauth/jwks.h"

namespace mcpfan::detail::tls {
class ClientContext;
}
namespace mcpfan::detail::log {
class Logger;
}

namespace mcpfan::detail::oauth {

class Fetcher;

/** What the agent counts; written by it and the workers, read by /metrics (relaxed). */
struct AgentCounters {
  std::atomic<std::uint64_t> jwks_fetches{0};            // JWKS answers taken (a key set installed)
  std::atomic<std::uint64_t> jwks_failures{0};           // discovery or JWKS fetches that failed
  std::atomic<std::uint64_t> unknown_kid_refetches{0};   // fetches asked for by a token's unknown kid
  std::atomic<std::uint64_t> unknown_kid_limited{0};     // unknown kids not refetched: within the min refresh
  std::atomic<std::int64_t> keys{0};                     // keys held now (gauge)
  std::atomic<std::uint64_t> token_cache_hits{0};        // JWTs found verified in the token cache
  std::atomic<std::uint64_t> token_cache_misses{0};      // JWTs verified (not in it)
  std::atomic<std::uint64_t> introspections{0};          // introspection requests sent
  std::atomic<std::uint64_t> introspection_failures{0};  // ... that failed (no verdict: 503 to the client)
  std::atomic<std::uint64_t> introspection_hits{0};      // verdicts served from the cache
  std::atomic<std::uint64_t> introspection_misses{0};    // tokens not in the cache
  std::atomic<std::uint64_t> authorize_calls{0};         // questions POSTed to --authorize-url
  std::atomic<std::uint64_t> authorize_failures{0};      // ... that got no usable answer (the request failed closed)
  std::atomic<std::uint64_t> authorize_hits{0};          // answers served from the cache
  std::atomic<std::uint64_t> authorize_misses{0};        // questions not in the cache
  std::atomic<std::int64_t> waiting{0};                  // callbacks waiting now (gauge)
  std::atomic<std::uint64_t> waiting_refused{0};         // refused: --oauth-max-waiting were waiting
};

/** A verdict the agent reached about a token by introspection. */
struct Introspected {
  bool ok = false;  // false: the endpoint could not be asked (an outage): 503, not 401
  TokenVerdict verdict{TokenError{TokenFailure::Malformed, ""}};
  std::string error{};  // !ok: what failed
};

/** The application's answer to a question, or why there is none. */
struct Authorized {
  bool ok = false;  // false: no usable answer (down, timed out, an error status, a malformed answer): fail closed
  AuthorizeAnswer answer{};
  std::string error{};
};

class Agent {
 public:
  /**
   * Checks the OAuth and --authorize-url settings of `c` (URLs https or loopback http, files
   * readable); null when neither is configured.
   */
  [[nodiscard]] static Result<std::unique_ptr<Agent>> make(const ServerConfig& c, std::string default_resource);
  ~Agent();
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /** Starts the thread (logging to `logger`); discovery and the first JWKS fetch begin at once. */
  void start(log::Logger* logger);
  /** Ends what is in flight (callbacks run with failures) and joins the thread. Idempotent. */
  void stop();

  // ---- any thread ----
  /** The issuer's keys now, or null before the first JWKS was fetched. */
  [[nodiscard]] std::shared_ptr<const KeySet> keys() const;
  [[nodiscard]] const TokenPolicy& policy() const noexcept { return policy_; }
  [[nodiscard]] const std::string& issuer() const noexcept { return policy_.issuer; }
  [[nodiscard]] const std::string& resource() const noexcept { return resource_; }
  [[nodiscard]] const std::string& listen_scope() const noexcept { return listen_scope_; }
  /** Where that document is served: the resource's origin, /.well-known/oauth-protected-resource, its path. */
  [[nodiscard]] const std::string& metadata_url() const noexcept { return metadata_url_; }
  /** The protected resource metadata document (RFC 9728) this server serves. */
  [[nodiscard]] const std::string& resource_metadata() const noexcept { return metadata_json_; }
  [[nodiscard]] bool introspection() const noexcept { return !introspection_url_.empty(); }
  /** --oauth-issuer is set: access tokens are this agent's to judge (else it serves --authorize-url only). */
  [[nodiscard]] bool tokens() const noexcept { return !policy_.issuer.empty(); }
  /** --authorize-url is set. */
  [[nodiscard]] bool authorizes() const noexcept { return !authorize_url_.empty(); }
  /** The JWKS is loaded, or not needed (readiness). */
  [[nodiscard]] bool ready() const noexcept { return !tokens() || keys() != nullptr; }
  /** Why the last fetch failed ("" after a success): for /healthz and logs. */
  [[nodiscard]] std::string last_error() const;
  [[nodiscard]] AgentCounters& counters() noexcept { return counters_; }
  [[nodiscard]] const AgentCounters& counters() const noexcept { return counters_; }

  enum class Wait : std::uint8_t {
    Queued,   // `then` will run on the agent's thread
    TooSoon,  // (keys) an unknown kid fetched the JWKS less than --oauth-jwks-min-refresh-s ago: the kid is unknown
    Full,     // --oauth-max-waiting callbacks are waiting: refused (503)
  };
  /**
   * A token named a key id keys() lacks (or no keys are loaded yet): fetch the JWKS again,
   * unless an unknown kid did within the min refresh (TooSoon); `then` runs once the fetch in
   * flight ends, whatever its outcome (the caller looks at keys() again). Without keys it
   * waits for the fetch under way, or is told at once when none is.
   */
  [[nodiscard]] Wait refetch_keys(std::function<void()> then);
  /** The claims of a JWT verified before (--oauth-token-cache), if kept and not past its exp. */
  [[nodiscard]] std::optional<AccessClaims> verified_token(std::string_view token, std::int64_t now_s);
  /** Remembers a JWT just verified, until min(its exp, now + --oauth-token-cache-s). */
  void keep_verified_token(std::string_view token, const AccessClaims& claims, std::int64_t now_s);
  /** A cached verdict for `token`, if one is kept and its token has not expired. */
  [[nodiscard]] std::optional<TokenVerdict> cached_introspection(const std::string& token, std::int64_t now_s);
  /** Introspects `token` (one request per distinct token in flight); `then` gets the verdict. */
  [[nodiscard]] Wait introspect(std::string token, std::function<void(Introspected)> then);
  /** A kept answer to `question` (authorize_question()'s text), if its ttlMs has not passed. */
  [[nodiscard]] std::optional<AuthorizeAnswer> cached_authorization(const std::string& question);
  /** Asks --authorize-url (one call per distinct question in flight); `then` gets the answer. */
  [[nodiscard]] Wait authorize(std::string question, std::function<void(Authorized)> then);

 private:
  Agent() = default;
  void run();
  void on_inbox();
  void post(std::function<void()> fn);  // runs fn on the agent's thread
  void begin_discovery();
  void discover_from(std::vector<std::string> urls, std::size_t i, std::string tried);
  void fetch_jwks();
  void jwks_done(std::string error);
  void schedule_refresh(std::uint64_t in_ms);
  void send_introspection(const std::string& token);
  void introspection_done(const std::string& token, Introspected verdict);
  void keep_verdict(const std::string& token, const TokenVerdict& v, std::int64_t now_s);
  void send_authorize(const std::string& question);
  void authorize_done(const std::string& question, Authorized answer);
  bool take_waiter();  // counts a waiter in; false (counted) when full
  void release_waiters(std::size_t n);

  // Settings (immutable after make()).
  TokenPolicy policy_;
  std::string resource_;
  std::string listen_scope_;
  std::string metadata_json_;
  std::string metadata_url_;
  std::string jwks_url_;  // configured; else discovered
  std::string introspection_url_;
  std::string introspection_basic_;  // "Basic base64(id:secret)"; empty: none
  std::shared_ptr<tls::ClientContext> tls_;
  std::uint64_t fetch_timeout_ms_ = 5000;
  std::size_t max_document_bytes_ = 256 * 1024;
  std::uint64_t refresh_ms_ = 300'000;
  std::uint64_t min_refresh_ms_ = 10'000;
  std::int64_t introspection_cache_s_ = 60;
  std::int64_t max_waiting_ = 10000;
  std::string authorize_url_;
  std::uint64_t authorize_timeout_ms_ = 2000;
  std::uint64_t authorize_max_ttl_ms_ = 60000;

  AgentCounters counters_;
  mutable std::mutex keys_mu_;
  std::shared_ptr<const KeySet> keys_;
  std::string last_error_;  // keys_mu_

  // The agent's thread and loop.
  std::thread thread_;
  uv_loop_t loop_{};
  uv_async_t inbox_async_{};
  uv_timer_t refresh_timer_{};
  std::unique_ptr<Fetcher> fetcher_;            // the authorization server's
  std::unique_ptr<Fetcher> authorize_fetcher_;  // the application's (its own timeout)
  std::mutex inbox_mu_;
  std::vector<std::function<void()>> inbox_;  // inbox_mu_
  bool stopping_ = false;                     // inbox_mu_
  bool started_ = false;
  log::Logger* logger_ = nullptr;

  // Agent-thread state.
  std::string discovered_jwks_url_;
  bool jwks_in_flight_ = false;
  std::atomic<std::uint64_t> last_refetch_ms_{0};  // steady clock: the last fetch for an unknown kid (0: none)
  std::atomic<bool> refetching_{false};            // that fetch is under way: later unknown kids wait for it
  std::vector<std::function<void()>> key_waiters_;
  std::unordered_map<std::string, std::vector<std::function<void(Introspected)>>> introspecting_;
  std::unordered_map<std::string, std::vector<std::function<void(Authorized)>>> authorizing_;

  // Any thread: token digest → verdict (unix seconds), question → answer (steady-clock ms).
  ExpiringCache<TokenVerdict> verdicts_;
  ExpiringCache<AccessClaims> verified_;  // JWTs whose signature and claims passed (unix seconds)
  std::int64_t token_cache_s_ = 60;
  ExpiringCache<AuthorizeAnswer> answers_;
};

}  // namespace mcpfan::detail::oauth

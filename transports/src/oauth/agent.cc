#include "oauth/agent.h"

#include <openssl/evp.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "mcp/auth.h"
#include "oauth/fetch.h"
#include "oauth/metadata.h"
#include "server/log.h"
#include "tls/context.h"

namespace mcpfan::detail::oauth {

namespace {

std::uint64_t steady_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A URL the agent fetches: https, or http to a loopback address (tests, a local authorization server).
std::optional<Error> check_url(std::string_view flag, const std::string& url) {
  auto t = parse_fetch_url(url);
  if (!t) return Error{rpc_code::kInvalidParams, std::string(flag) + ": " + t.error().message};
  if (!t.value().https && !is_loopback_url(url)) {
    return Error{rpc_code::kInvalidParams,
                 std::string(flag) + " " + url + ": must be https:// (plain http only on a loopback address)"};
  }
  return std::nullopt;
}

std::string base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(n < 0 ? 0 : static_cast<std::size_t>(n));
  return out;
}

// The cache is keyed by the token's SHA-256: a fixed 32 bytes whatever the token's size.
std::string digest(std::string_view token) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(token.data(), token.size(), md, &len, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(md), len);
}

// application/x-www-form-urlencoded (RFC 7662 §2.1's request body).
std::string form_escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : s) {
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
        ch == '_' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Agent>> Agent::make(const ServerConfig& c, std::string default_resource) {
  const OAuthConfig& o = c.oauth;
  const AuthorizeConfig& az = c.authorize;
  if (o.issuer.empty()) {
    bool other = !o.jwks_url.empty() || !o.introspection_url.empty() || !o.tenant_claim.empty() || !o.tenant.empty() ||
                 !o.listen_scope.empty() || !o.audiences.empty();
    if (other) {
      return Error{rpc_code::kInvalidParams, "the --oauth-* settings need --oauth-issuer (the authorization server)"};
    }
    if (az.url.empty()) return std::unique_ptr<Agent>();
  }
  std::unique_ptr<Agent> a(new Agent());
  if (!az.url.empty()) {
    if (auto e = check_url("--authorize-url", az.url)) return *e;
    a->authorize_url_ = az.url;
    a->authorize_timeout_ms_ = az.timeout_ms;
    a->answers_.set_max(az.cache_entries);
    a->authorize_max_ttl_ms_ = az.max_ttl_ms;
  }
  tls::ClientSettings ts;
  ts.ca_file = o.ca_file;
  std::string err;
  a->tls_ = tls::ClientContext::load(ts, err);
  if (!a->tls_) return Error{rpc_code::kInvalidParams, "--oauth-ca-file: " + err};
  a->fetch_timeout_ms_ = o.fetch_timeout_ms;
  a->max_document_bytes_ = o.max_document_bytes;
  a->max_waiting_ = static_cast<std::int64_t>(o.max_waiting);
  if (o.issuer.empty()) return a;  // --authorize-url alone
  if (auto e = check_url("--oauth-issuer", o.issuer)) return *e;
  if (!o.jwks_url.empty())
    if (auto e = check_url("--oauth-jwks-url", o.jwks_url)) return *e;
  if (!o.introspection_url.empty())
    if (auto e = check_url("--oauth-introspection-url", o.introspection_url)) return *e;
  if (o.tenant_claim.empty() == o.tenant.empty()) {
    return Error{rpc_code::kInvalidParams,
                 "--oauth-issuer needs exactly one of --oauth-tenant-claim NAME and --oauth-tenant NAME"};
  }
  if (!o.tenant.empty() && !valid_tenant_name(o.tenant)) {
    return Error{rpc_code::kInvalidParams,
                 "--oauth-tenant " + o.tenant + ": a tenant name is 1-64 characters of [A-Za-z0-9._-]"};
  }
  a->resource_ = o.resource.empty() ? std::move(default_resource) : o.resource;
  a->listen_scope_ = o.listen_scope;
  a->policy_.issuer = o.issuer;
  a->policy_.audiences = o.audiences.empty() ? std::vector<std::string>{a->resource_} : o.audiences;
  a->policy_.leeway_s = o.leeway_s;
  a->policy_.tenant_claim = o.tenant_claim;
  a->policy_.fixed_tenant = o.tenant;
  a->policy_.uris_claim = o.uris_claim;
  a->jwks_url_ = o.jwks_url;
  a->introspection_url_ = o.introspection_url;
  if (!o.introspection_credentials_file.empty()) {
    std::ifstream in(o.introspection_credentials_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string creds = ss.str();
    while (!creds.empty() && (creds.back() == '\n' || creds.back() == '\r' || creds.back() == ' ')) creds.pop_back();
    if (!in || creds.find(':') == std::string::npos || creds.front() == ':') {
      return Error{rpc_code::kInvalidParams, "--oauth-introspection-credentials-file " +
                                                 o.introspection_credentials_file +
                                                 ": expected one line \"client_id:client_secret\""};
    }
    a->introspection_basic_ = "Basic " + base64(creds);
  }
  a->refresh_ms_ = o.jwks_refresh_s * 1000;
  a->min_refresh_ms_ = o.jwks_min_refresh_s * 1000;
  a->verdicts_.set_max(o.introspection_cache);
  a->verified_.set_max(o.token_cache);
  a->token_cache_s_ = static_cast<std::int64_t>(o.token_cache_s);
  a->introspection_cache_s_ = static_cast<std::int64_t>(o.introspection_cache_s);
  std::vector<std::string> scopes = o.scopes;
  if (scopes.empty() && !o.listen_scope.empty()) scopes.push_back(o.listen_scope);
  a->metadata_json_ = protected_resource_metadata(a->resource_, {o.issuer}, scopes);
  // RFC 9728 §3.1: the well-known segment goes between the host and the resource's path.
  auto target = parse_fetch_url(a->resource_);
  if (!target) return Error{rpc_code::kInvalidParams, "--oauth-resource: " + target.error().message};
  std::string path = target.value().path == "/" ? std::string() : target.value().path;
  a->metadata_url_ = (target.value().https ? "https://" : "http://") + target.value().authority +
                     "/.well-known/oauth-protected-resource" + path;
  return a;
}

Agent::~Agent() {
  stop();
}

void Agent::start(log::Logger* logger) {
  if (started_) return;
  started_ = true;
  logger_ = logger;
  uv_loop_init(&loop_);
  uv_async_init(&loop_, &inbox_async_, [](uv_async_t* h) { static_cast<Agent*>(h->data)->on_inbox(); });
  inbox_async_.data = this;
  uv_timer_init(&loop_, &refresh_timer_);
  refresh_timer_.data = this;
  FetchLimits l;
  l.timeout_ms = fetch_timeout_ms_;
  l.max_body_bytes = max_document_bytes_;
  fetcher_ = std::make_unique<Fetcher>(&loop_, tls_, l);
  l.timeout_ms = authorize_timeout_ms_;
  authorize_fetcher_ = std::make_unique<Fetcher>(&loop_, tls_, l);
  thread_ = std::thread([this] { run(); });
  if (tokens()) post([this] { begin_discovery(); });
}

void Agent::run() {
  log::Bind logging(logger_);
  uv_run(&loop_, UV_RUN_DEFAULT);
}

void Agent::stop() {
  if (!started_) return;
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  uv_async_send(&inbox_async_);  // on_inbox() sees stopping_: fails the waiters, closes the handles
  if (thread_.joinable()) thread_.join();
  uv_loop_close(&loop_);
}

void Agent::post(std::function<void()> fn) {
  {
    std::lock_guard lock(inbox_mu_);
    if (stopping_) return;
    inbox_.push_back(std::move(fn));
  }
  uv_async_send(&inbox_async_);
}

void Agent::on_inbox() {
  std::vector<std::function<void()>> batch;
  bool stopping;
  {
    std::lock_guard lock(inbox_mu_);
    batch.swap(inbox_);
    stopping = stopping_;
  }
  for (auto& fn : batch) {
    // No exception may leave a libuv callback (allocation failures: the question is lost, its
    // request ends at its request timeout with a 503).
    try {
      fn();
    } catch (const std::exception& e) {
      log::line(LogLevel::Error, "oauth_agent_exception", std::string("the OAuth agent failed a task: ") + e.what());
    }
  }
  if (!stopping) return;
  // Every waiter hears once: the keys' waiters look at keys() again; introspections fail.
  fetcher_->close();  // its callbacks (failures) run now: jwks_done(), introspection_done(), authorize_done()
  authorize_fetcher_->close();
  auto waiters = std::move(key_waiters_);
  for (auto& w : waiters) w();
  release_waiters(waiters.size());
  auto pending = std::move(introspecting_);
  for (auto& [token, list] : pending) {
    for (auto& w : list) w(Introspected{false, TokenError{TokenFailure::Malformed, ""}, "shutting down"});
    release_waiters(list.size());
  }
  auto asked = std::move(authorizing_);
  for (auto& [question, list] : asked) {
    for (auto& w : list) w(Authorized{false, {}, "shutting down"});
    release_waiters(list.size());
  }
  uv_timer_stop(&refresh_timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(&refresh_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&inbox_async_), nullptr);
  // The pools close their handles in the loop's next turns; uv_run returns once they have.
}

std::shared_ptr<const KeySet> Agent::keys() const {
  std::lock_guard lock(keys_mu_);
  return keys_;
}

std::string Agent::last_error() const {
  std::lock_guard lock(keys_mu_);
  return last_error_;
}

bool Agent::take_waiter() {
  if (counters_.waiting.fetch_add(1, std::memory_order_relaxed) >= max_waiting_) {
    counters_.waiting.fetch_sub(1, std::memory_order_relaxed);
    counters_.waiting_refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void Agent::release_waiters(std::size_t n) {
  counters_.waiting.fetch_sub(static_cast<std::int64_t>(n), std::memory_order_relaxed);
}

// ---- keys ----

void Agent::begin_discovery() {
  if (!jwks_url_.empty()) return fetch_jwks();
  if (jwks_in_flight_) return;
  jwks_in_flight_ = true;
  discover_from(discovery_urls(policy_.issuer), 0, {});
}

void Agent::discover_from(std::vector<std::string> urls, std::size_t i, std::string tried) {
  // Each well-known URL in turn (RFC 8414 first, then OpenID Connect): the first document whose
  // issuer is ours names the JWKS.
  if (i >= urls.size()) {
    jwks_in_flight_ = false;
    return jwks_done("discovery failed: " + tried);
  }
  std::string url = urls[i];
  fetcher_->request(url, {}, {}, {}, [this, urls = std::move(urls), i, tried = std::move(tried)](Fetched f) mutable {
    std::string why;
    if (!f.ok) {
      why = f.error;
    } else if (f.status != 200) {
      why = "HTTP " + std::to_string(f.status);
    } else if (auto md = parse_server_metadata(f.body, policy_.issuer); !md) {
      why = md.error().message;
    } else if (auto e = check_url("the discovered jwks_uri", md.value().jwks_uri)) {
      why = e->message;
    } else {
      discovered_jwks_url_ = md.value().jwks_uri;
      jwks_in_flight_ = false;
      return fetch_jwks();
    }
    if (!tried.empty()) tried += "; ";
    tried += urls[i] + ": " + why;
    discover_from(std::move(urls), i + 1, std::move(tried));
  });
}

void Agent::fetch_jwks() {
  if (jwks_in_flight_) return;
  const std::string& url = jwks_url_.empty() ? discovered_jwks_url_ : jwks_url_;
  if (url.empty()) return begin_discovery();  // discovery failed before: try it again
  jwks_in_flight_ = true;
  fetcher_->request(url, {}, {}, {}, [this, url](Fetched f) {
    jwks_in_flight_ = false;
    if (!f.ok) return jwks_done(url + ": " + f.error);
    if (f.status != 200) return jwks_done(url + ": HTTP " + std::to_string(f.status));
    auto set = KeySet::parse(f.body);
    if (!set) return jwks_done(url + ": " + set.error().message);
    auto keys = std::make_shared<const KeySet>(std::move(set.value()));
    counters_.keys.store(static_cast<std::int64_t>(keys->size()), std::memory_order_relaxed);
    counters_.jwks_fetches.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard lock(keys_mu_);
      keys_ = std::move(keys);
      last_error_.clear();
    }
    std::uint64_t next = refresh_ms_;
    if (const std::string* cc = proxy::find_header(f.headers, "cache-control")) {
      if (auto age = cache_max_age(*cc)) next = std::min(next, std::max(*age * 1000, min_refresh_ms_));
    }
    jwks_done({});
    schedule_refresh(next);
  });
}

void Agent::jwks_done(std::string error) {
  if (!error.empty()) {
    counters_.jwks_failures.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Warn, "oauth_jwks_failed", "the authorization server's keys were not fetched: " + error);
    {
      std::lock_guard lock(keys_mu_);
      last_error_ = error;
    }
    // Without keys the server refuses every token: try again soon; with keys, at the next refresh.
    schedule_refresh(keys() ? refresh_ms_ : min_refresh_ms_);
  }
  refetching_.store(false, std::memory_order_release);
  auto waiters = std::move(key_waiters_);
  key_waiters_.clear();
  for (auto& w : waiters) w();
  release_waiters(waiters.size());
}

void Agent::schedule_refresh(std::uint64_t in_ms) {
  uv_timer_start(
      &refresh_timer_, [](uv_timer_t* t) { static_cast<Agent*>(t->data)->fetch_jwks(); }, in_ms, 0);
}

Agent::Wait Agent::refetch_keys(std::function<void()> then) {
  if (keys() && !refetching_.load(std::memory_order_acquire)) {
    // One fetch for unknown kids per min refresh, whoever asks first: a stream of bogus kids
    // costs the authorization server one request per interval.
    std::uint64_t now = steady_ms();
    std::uint64_t last = last_refetch_ms_.load(std::memory_order_relaxed);
    if ((last != 0 && now - last < min_refresh_ms_) ||
        !last_refetch_ms_.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
      counters_.unknown_kid_limited.fetch_add(1, std::memory_order_relaxed);
      return Wait::TooSoon;
    }
    if (!take_waiter()) return Wait::Full;
    refetching_.store(true, std::memory_order_release);
    counters_.unknown_kid_refetches.fetch_add(1, std::memory_order_relaxed);
    post([this, then = std::move(then)]() mutable {
      key_waiters_.push_back(std::move(then));
      if (!jwks_in_flight_) fetch_jwks();  // else the fetch under way answers it
    });
    return Wait::Queued;
  }
  // No keys yet, or a refetch under way: wait for the fetch in flight, if there is one.
  if (!take_waiter()) return Wait::Full;
  post([this, then = std::move(then)]() mutable {
    key_waiters_.push_back(std::move(then));
    if (!jwks_in_flight_) jwks_done({});  // nothing is being fetched: decide with what is held
  });
  return Wait::Queued;
}

// ---- introspection ----

std::optional<AccessClaims> Agent::verified_token(std::string_view token, std::int64_t now_s) {
  auto kept = verified_.get(digest(token), now_s);
  (kept ? counters_.token_cache_hits : counters_.token_cache_misses).fetch_add(1, std::memory_order_relaxed);
  return kept;
}

void Agent::keep_verified_token(std::string_view token, const AccessClaims& claims, std::int64_t now_s) {
  std::int64_t until = now_s + token_cache_s_;
  if (claims.exp != 0) until = std::min(until, claims.exp);
  if (until > now_s) verified_.put(digest(token), claims, until);
}

std::optional<TokenVerdict> Agent::cached_introspection(const std::string& token, std::int64_t now_s) {
  auto kept = verdicts_.get(digest(token), now_s);
  (kept ? counters_.introspection_hits : counters_.introspection_misses).fetch_add(1, std::memory_order_relaxed);
  return kept;
}

void Agent::keep_verdict(const std::string& token, const TokenVerdict& v, std::int64_t now_s) {
  std::int64_t until = now_s + introspection_cache_s_;
  if (const auto* claims = std::get_if<AccessClaims>(&v)) {
    if (claims->exp != 0) until = std::min(until, claims->exp);  // never past the token's expiry
  } else {
    until = now_s + std::min<std::int64_t>(introspection_cache_s_, 10);  // a refusal is asked again soon
  }
  if (until > now_s) verdicts_.put(digest(token), v, until);
}

Agent::Wait Agent::introspect(std::string token, std::function<void(Introspected)> then) {
  if (!take_waiter()) return Wait::Full;
  post([this, token = std::move(token), then = std::move(then)]() mutable {
    auto& list = introspecting_[token];
    list.push_back(std::move(then));
    if (list.size() == 1) send_introspection(token);  // one request per distinct token in flight
  });
  return Wait::Queued;
}

void Agent::send_introspection(const std::string& token) {
  counters_.introspections.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::pair<std::string, std::string>> headers;
  if (!introspection_basic_.empty()) headers.emplace_back("Authorization", introspection_basic_);
  std::string body = "token=" + form_escape(token) + "&token_type_hint=access_token";
  fetcher_->request(introspection_url_, "application/x-www-form-urlencoded", std::move(body), std::move(headers),
                    [this, token](Fetched f) {
                      Introspected r;
                      if (!f.ok) {
                        r.error = introspection_url_ + ": " + f.error;
                      } else if (f.status != 200) {
                        r.error = introspection_url_ + ": HTTP " + std::to_string(f.status);
                      } else {
                        r.ok = true;
                        r.verdict = read_introspection(f.body, policy_, unix_now());
                      }
                      introspection_done(token, std::move(r));
                    });
}

void Agent::introspection_done(const std::string& token, Introspected verdict) {
  if (verdict.ok) {
    keep_verdict(token, verdict.verdict, unix_now());
  } else {
    counters_.introspection_failures.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Warn, "oauth_introspection_failed", "a token was not introspected: " + verdict.error);
  }
  auto node = introspecting_.extract(token);
  if (node.empty()) return;
  for (auto& w : node.mapped()) w(verdict);
  release_waiters(node.mapped().size());
}

// ---- --authorize-url ----

std::optional<AuthorizeAnswer> Agent::cached_authorization(const std::string& question) {
  auto kept = answers_.get(question, static_cast<std::int64_t>(steady_ms()));
  (kept ? counters_.authorize_hits : counters_.authorize_misses).fetch_add(1, std::memory_order_relaxed);
  return kept;
}

Agent::Wait Agent::authorize(std::string question, std::function<void(Authorized)> then) {
  if (!take_waiter()) return Wait::Full;
  post([this, question = std::move(question), then = std::move(then)]() mutable {
    auto& list = authorizing_[question];
    list.push_back(std::move(then));
    if (list.size() == 1) send_authorize(question);  // one call per distinct question in flight
  });
  return Wait::Queued;
}

void Agent::send_authorize(const std::string& question) {
  counters_.authorize_calls.fetch_add(1, std::memory_order_relaxed);
  authorize_fetcher_->request(authorize_url_, "application/json", question, {}, [this, question](Fetched f) {
    Authorized r;
    if (!f.ok) {
      r.error = f.error;
    } else if (f.status != 200) {
      r.error = "HTTP " + std::to_string(f.status);
    } else if (auto answer = read_authorize_answer(f.body); !answer) {
      r.error = answer.error().message;
    } else {
      r.ok = true;
      r.answer = std::move(answer.value());
    }
    authorize_done(question, std::move(r));
  });
}

void Agent::authorize_done(const std::string& question, Authorized answer) {
  if (!answer.ok) {
    counters_.authorize_failures.fetch_add(1, std::memory_order_relaxed);
    answer.error = authorize_url_ + ": " + answer.error;
    log::line(LogLevel::Warn, "authorize_failed", "the application's authorization did not answer: " + answer.error);
  } else if (std::uint64_t ttl = std::min(answer.answer.ttl_ms, authorize_max_ttl_ms_); ttl > 0) {
    answers_.put(question, answer.answer, static_cast<std::int64_t>(steady_ms() + ttl));
  }
  auto node = authorizing_.extract(question);
  if (node.empty()) return;
  for (auto& w : node.mapped()) w(answer);
  release_waiters(node.mapped().size());
}

}  // namespace mcpfan::detail::oauth

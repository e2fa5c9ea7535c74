#include "http/router.h"

#include <strings.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <ctime>

#include "mcp/auth.h"
#include "http/http_conn.h"
#include "server/server_state.h"
#include "mcp/limits.h"
#include "mcp/messages.h"
#include "mcpfan/json_text.h"
#include "mcp/sessions.h"
#include "server/worker.h"

namespace mcpfan::detail {

namespace {

bool ieq_prefix(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool is_json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view media = trim(ct.substr(0, semi));
  return media.size() == 16 && ieq_prefix(media, "application/json");
}

// A missing Accept means "anything"; otherwise one of the types we answer with must fit.
bool accepts_mcp(std::string_view accept) {
  if (accept.empty()) return true;
  for (std::string_view t : {"application/json", "text/event-stream", "*/*", "application/*", "text/*"}) {
    for (std::size_t i = 0; i + t.size() <= accept.size(); ++i) {
      if (strncasecmp(accept.data() + i, t.data(), t.size()) == 0) return true;
    }
  }
  return false;
}

// Default allow-list: browsers on this machine only (DNS-rebinding protection).
bool default_origin_ok(std::string_view origin) {
  std::string_view rest;
  if (ieq_prefix(origin, "http://")) rest = origin.substr(7);
  else if (ieq_prefix(origin, "https://")) rest = origin.substr(8);
  else return false;
  for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
    if (ieq_prefix(rest, host)) {
      std::string_view after = rest.substr(host.size());
      if (after.empty()) return true;
      if (after[0] != ':' || after.size() == 1) return false;
      for (char c : after.substr(1)) {
        if (c < '0' || c > '9') return false;
      }
      return true;
    }
  }
  return false;
}

bool origin_allowed(const ServerConfig& cfg, std::string_view origin) {
  if (origin.empty()) return true;  // not a browser: Origin is what a rebinding page cannot hide
  if (cfg.allow_origins.empty()) return default_origin_ok(origin);
  for (const std::string& o : cfg.allow_origins) {
    if (o == "*" || (o.size() == origin.size() && strncasecmp(o.data(), origin.data(), o.size()) == 0)) return true;
  }
  return false;
}

// The host part of a Host header: "127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "[::1]".
std::string_view host_part(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  return host.substr(0, host.find(':'));
}

bool host_allowed(const ServerConfig& cfg, std::string_view host_header) {
  if (host_header.empty()) return true;  // HTTP/1.0: nothing a rebinding page could set
  std::string_view h = host_part(host_header);
  auto eq = [](std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
  };
  if (cfg.allow_hosts.empty()) {
    bool loopback_listener = cfg.host.rfind("127.", 0) == 0 || cfg.host == "::1";
    if (!loopback_listener) return true;  // --insecure without --allow-host: the operator chose an open listener
    return eq(h, "localhost") || eq(h, "127.0.0.1") || eq(h, "[::1]") || eq(h, cfg.host) ||
           (cfg.host == "::1" && eq(h, "[::1]"));
  }
  for (const std::string& a : cfg.allow_hosts) {
    if (a == "*" || eq(a, h) || eq(a, host_header)) return true;
  }
  return false;
}


void count_rpc_limit(Worker& w, const RpcRequest& r, TenantId tenant = Limits::kNoTenant) {
  if (r.limit_hit == RpcLimitHit::UriLength) w.limits().hit(Limit::UriLength, tenant);
  else if (r.limit_hit == RpcLimitHit::UrisPerListen) w.limits().hit(Limit::UrisPerListen, tenant);
}

void rpc_error(HttpConn& c, std::string_view id, int code, std::string message, std::string_view data = {}) {
  // Malformed requests are HTTP errors; well-formed but refused requests are JSON-RPC
  // answers. A notification (no id) gets no JSON-RPC answer, so a refused one is a 400.
  bool answerable = !id.empty() && (code == rpc_code::kMethodNotFound || code == rpc_code::kInvalidParams);
  int status = answerable ? 200 : 400;
  c.respond(status, "application/json", rpc_error_json(id, Error{code, std::move(message)}, data));
}

// ---- who is asking (issue 5) ----

// An auth error message inside a quoted WWW-Authenticate parameter.
std::string quoted_safe(std::string_view s) {
  std::string out;
  for (char ch : s) out += (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '\'' : ch;
  return out;
}

// A request refused by a limit: 429 (503 when the tenant table is full), with a JSON-RPC
// error when it was a request, so SDK clients surface the message.
void respond_limited(HttpConn& c, std::string_view id, Limit l, TenantId tenant) {
  Worker& w = c.worker();
  std::string msg = w.limits().refusal_message(l, w.hub().tenants().name(tenant));
  // A ceiling in all (the server's, not the tenant's) is 503, like a full tenant table.
  int status = (l == Limit::Tenants || l == Limit::IdleSessions) ? 503 : 429;
  std::string body = id.empty() ? json_error_body(msg) : rpc_error_json(id, Error{rpc_code::kLimitExceeded, msg});
  c.respond(status, "application/json", body, "Retry-After: 1\r\n");
}

struct Caller {
  TenantId tenant = kDefaultTenant;
  std::optional<ClientIdentity> identity;  // set when client auth is configured
  [[nodiscard]] bool may_subscribe(std::string_view uri) const { return !identity || identity->uri_allowed(uri); }
};

// With client auth configured a valid bearer token names the tenant; without, every
// client is tenant "default". Answers 401/429/503 itself and returns nullopt when refused.
std::optional<Caller> authenticate(HttpConn& c, const HttpRequest& req, std::string_view id = {}) {
  Worker& w = c.worker();
  ServerState& st = w.state();
  Caller caller;
  TenantRef ref;  // none for the default tenant, which is never reclaimed
  if (st.client_auth.enabled()) {
    AuthResult res = st.client_auth.verify_bearer(req.authorization, static_cast<std::int64_t>(std::time(nullptr)));
    if (auto* e = std::get_if<AuthError>(&res)) {
      st.auth_counters.client[static_cast<std::size_t>(e->kind)].fetch_add(1, std::memory_order_relaxed);
      // RFC 6750 §3: no error code when no credentials were sent at all.
      std::string challenge = "WWW-Authenticate: Bearer realm=\"mcpfan\"";
      if (e->kind != AuthFailure::Missing) {
        challenge += ", error=\"invalid_token\", error_description=\"" + quoted_safe(e->message) + "\"";
      }
      c.respond(401, "application/json", json_error_body(e->message), challenge + "\r\n");
      return std::nullopt;
    }
    caller.identity = std::move(std::get<ClientIdentity>(res));
    // Only an authenticated client creates a tenant entry; the connection keeps it alive.
    std::optional<TenantId> t = w.hub().tenants().acquire(caller.identity->tenant);
    if (!t) {
      w.limits().hit(Limit::Tenants);
      respond_limited(c, id, Limit::Tenants, Limits::kNoTenant);
      return std::nullopt;
    }
    caller.tenant = *t;
    ref = TenantRef(w.hub().tenants(), *t);
  }
  if (auto refused = c.bind_tenant(caller.tenant, std::move(ref))) {
    respond_limited(c, id, *refused, caller.tenant);
    return std::nullopt;
  }
  return caller;
}

void respond_forbidden_uri(HttpConn& c, std::string_view id, std::string_view uri) {
  c.worker().state().auth_counters.client_forbidden_uri.fetch_add(1, std::memory_order_relaxed);
  std::string msg = "resource URI not allowed for this token: " + std::string(uri);
  c.respond(403, "application/json", rpc_error_json(id, Error{rpc_code::kInvalidParams, msg}));
}

void respond_discover(HttpConn& c, const RpcRequest& r, std::string_view version) {
  std::string headers = "MCP-Protocol-Version: ";
  headers += version;
  headers += "\r\n";
  c.respond(200, "application/json", rpc_result_json(r.id, discover_result()), headers);
}

void start_listen(HttpConn& c, RpcRequest& r, const Caller& caller) {
  if (!r.has_id) {
    rpc_error(c, {}, rpc_code::kInvalidRequest, "subscriptions/listen must be a request with an id");
    return;
  }
  for (const std::string& uri : r.listen.resource_uris) {
    if (!caller.may_subscribe(uri)) return respond_forbidden_uri(c, r.id, uri);
  }
  Limits& limits = c.worker().limits();
  auto subs = static_cast<std::int64_t>(r.listen.resource_uris.size());
  if (!limits.acquire(caller.tenant, Resource::Streams)) {
    return respond_limited(c, r.id, Limit::StreamsPerTenant, caller.tenant);
  }
  if (!limits.acquire(caller.tenant, Resource::Subscriptions, subs)) {
    limits.release(caller.tenant, Resource::Streams);
    return respond_limited(c, r.id, Limit::SubscriptionsPerTenant, caller.tenant);
  }
  c.hold_stream_usage(caller.tenant, subs);
  ListenPlan plan = plan_listen(std::move(r.listen), caller.tenant, r.id);
  c.begin_listen(plan.filter, std::move(r.id), sse_event(plan.ack));
}

// design §2.1: the envelope's version decides; 2026-07-28 requests must mirror it (and the
// method) in headers, draft requests may omit them but must not contradict them.
bool check_version(HttpConn& c, const HttpRequest& req, const RpcRequest& r, std::string& version) {
  const std::string& body_v = r.meta_version;
  const std::string& head_v = req.protocol_version;
  if (body_v.empty()) {
    if (head_v == kRev2026 || head_v == kDraft2026) {
      rpc_error(c, r.id, rpc_code::kHeaderMismatch,
                "MCP-Protocol-Version header says " + head_v + " but params._meta has no io.modelcontextprotocol/protocolVersion");
      return false;
    }
    rpc_error(c, r.id, rpc_code::kUnsupportedVersion,
              head_v.empty() ? "missing protocol version: send params._meta io.modelcontextprotocol/protocolVersion"
                             : "unsupported protocol version " + head_v,
              unsupported_version_data(head_v));
    return false;
  }
  if (!is_2026_version(body_v)) {
    rpc_error(c, r.id, rpc_code::kUnsupportedVersion, "unsupported protocol version " + body_v,
              unsupported_version_data(body_v));
    return false;
  }
  bool strict = body_v == kRev2026;
  if ((strict || !head_v.empty()) && head_v != body_v) {
    rpc_error(c, r.id, rpc_code::kHeaderMismatch,
              head_v.empty() ? "missing MCP-Protocol-Version header (must be " + body_v + ")"
                             : "MCP-Protocol-Version header " + head_v + " does not match params._meta version " + body_v);
    return false;
  }
  if (r.has_id && (strict || !req.mcp_method.empty()) && req.mcp_method != r.method) {
    rpc_error(c, r.id, rpc_code::kHeaderMismatch,
              req.mcp_method.empty() ? "missing Mcp-Method header (must be " + r.method + ")"
                                     : "Mcp-Method header " + req.mcp_method + " does not match method " + r.method);
    return false;
  }
  version = body_v;
  return true;
}

// ---- 2025-era sessions (design §2.2) ----

void respond_result(HttpConn& c, const RpcRequest& r, std::string_view result, std::string_view headers = {}) {
  c.respond(200, "application/json", rpc_result_json(r.id, result), headers);
}

void session_not_found(HttpConn& c, std::string_view id) {
  c.respond(404, "application/json",
            rpc_error_json(id, Error{-32001, "session not found: it ended or expired; send initialize for a new one"}));
}

// Changes a session's URI set, and the subscription of its GET stream if one is open. The
// change reaches the stream's worker through its shard inbox, in order with publishes, so
// a publish sent after the client saw `{}` is matched against the new set.
// Returns the limit that refused a new URI (the session's own URI count, or the tenant's
// subscription ceiling); nothing changes then.
std::optional<Limit> change_session_uri(Worker& w, const std::shared_ptr<Session>& s, const std::string& uri, bool add) {
  int owner;
  {
    std::lock_guard lock(w.sessions().mutex());
    auto& uris = s->uris;
    auto it = uris.find(uri);
    if (add && it == uris.end()) {
      if (uris.size() >= w.config().max_uris_per_listen) {
        w.limits().hit(Limit::UrisPerListen, s->tenant);
        return Limit::UrisPerListen;
      }
      if (!w.limits().acquire(s->tenant, Resource::Subscriptions)) return Limit::SubscriptionsPerTenant;
      uris.insert(uri);
    }
    if (!add && it != uris.end()) {
      uris.erase(it);
      w.limits().release(s->tenant, Resource::Subscriptions);
    }
    owner = s->owner;
  }
  if (owner < 0) return std::nullopt;  // applied when a GET stream opens
  Shard& shard = w.hub().shard(static_cast<std::size_t>(owner));
  SessionRegistry* reg = &w.sessions();
  shard.post_task([reg, s, owner, uri, add, &shard] {
    SubId sub;
    {
      std::lock_guard lock(reg->mutex());
      if (s->owner != owner || !s->conn) return;  // the stream closed meanwhile
      sub = s->sub;
    }
    if (add) shard.add_uri(sub, s->tenant, uri);
    else shard.remove_uri(sub, s->tenant, uri);
  });
  return std::nullopt;
}

void handle_initialize(HttpConn& c, const RpcRequest& r, const Caller& caller) {
  if (!r.has_id) {
    rpc_error(c, {}, rpc_code::kInvalidRequest, "initialize must be a request with an id");
    return;
  }
  Worker& w = c.worker();
  std::string_view version = negotiate_2025(r.init_version);
  std::optional<Limit> refused;
  auto s = w.sessions().create(caller.tenant, std::string(version), uv_now(w.loop()), refused);
  if (!s) return respond_limited(c, r.id, *refused, caller.tenant);
  if (!w.limits().acquire(caller.tenant, Resource::Streams)) {
    (void)w.sessions().erase(s->id);
    return respond_limited(c, r.id, Limit::StreamsPerTenant, caller.tenant);
  }
  s->limits = &w.limits();  // the session now holds that stream, until it is destroyed
  // ... and its own reference on the tenant: a session outlives the connection that made it.
  if (caller.tenant != kDefaultTenant && w.hub().tenants().retain(caller.tenant)) {
    s->tenant_ref = TenantRef(w.hub().tenants(), caller.tenant);
  }
  respond_result(c, r, initialize_result(version), "Mcp-Session-Id: " + s->id + "\r\n");
}

// The session named by the request, if it exists and belongs to the caller's tenant: another
// tenant's session is answered as if it did not exist.
std::shared_ptr<Session> find_session(HttpConn& c, const HttpRequest& req, const Caller& caller) {
  Worker& w = c.worker();
  auto s = w.sessions().find(req.session_id, uv_now(w.loop()));
  if (s && s->tenant != caller.tenant) {
    w.state().auth_counters.client_wrong_tenant.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  return s;
}

void handle_session_post(HttpConn& c, HttpRequest& req, const RpcRequest& r, const Caller& caller) {
  Worker& w = c.worker();
  if (!req.protocol_version.empty() && !is_2025_version(req.protocol_version)) {
    rpc_error(c, r.id, rpc_code::kInvalidRequest, "unsupported MCP-Protocol-Version " + req.protocol_version + " for a session");
    return;
  }
  auto s = find_session(c, req, caller);
  if (!s) return session_not_found(c, r.id);
  const std::string& m = r.method;
  if (!r.has_id) {
    c.respond(202, {}, {});  // notifications/initialized and the like
  } else if (m == "ping" || m == "logging/setLevel") {
    respond_result(c, r, "{}");
  } else if (m == "resources/subscribe" || m == "resources/unsubscribe") {
    bool add = m == "resources/subscribe";
    if (add && !caller.may_subscribe(r.uri)) return respond_forbidden_uri(c, r.id, r.uri);
    if (auto refused = change_session_uri(w, s, r.uri, add)) {
      if (*refused != Limit::UrisPerListen) return respond_limited(c, r.id, *refused, s->tenant);
      return rpc_error(c, r.id, rpc_code::kInvalidParams, per_client_refusal(*refused, w.config().max_uris_per_listen));
    }
    respond_result(c, r, "{}");
  } else if (m == "initialize") {
    rpc_error(c, r.id, rpc_code::kInvalidRequest, "this session is already initialized");
  } else {
    rpc_error(c, r.id, rpc_code::kMethodNotFound,
              "method not found: " + m + " (a notification tier: mcpfan serves ping, logging/setLevel, "
              "resources/subscribe and resources/unsubscribe in a session)");
  }
}

void handle_mcp_get(HttpConn& c, HttpRequest& req) {
  Worker& w = c.worker();
  auto caller = authenticate(c, req);
  if (!caller) return;
  if (req.session_id.empty()) {
    c.respond(400, "application/json",
              json_error_body("GET /mcp needs an Mcp-Session-Id header (send initialize first); "
                              "2026-07-28 clients use POST subscriptions/listen"));
    return;
  }
  if (!req.accept.empty() && req.accept.find("text/event-stream") == std::string::npos && req.accept.find("*/*") == std::string::npos) {
    c.respond(406, "application/json", json_error_body("Accept must allow text/event-stream"));
    return;
  }
  auto s = find_session(c, req, *caller);
  if (!s) return session_not_found(c, {});
  std::lock_guard lock(w.sessions().mutex());
  if (s->ended) return session_not_found(c, {});
  if (s->owner >= 0) {
    c.respond(409, "application/json", json_error_body("this session already has an open stream"));
    return;
  }
  c.begin_session_stream(s);
}

void handle_mcp_delete(HttpConn& c, HttpRequest& req) {
  Worker& w = c.worker();
  auto caller = authenticate(c, req);
  if (!caller) return;
  if (req.session_id.empty() || !find_session(c, req, *caller)) {
    c.respond(404, "application/json", json_error_body("no such session"));
    return;
  }
  auto s = w.sessions().erase(req.session_id);
  if (!s) {
    c.respond(404, "application/json", json_error_body("no such session"));
    return;
  }
  int owner;
  {
    std::lock_guard lock(w.sessions().mutex());
    owner = s->owner;
  }
  if (owner >= 0) {
    SessionRegistry* reg = &w.sessions();
    w.hub().shard(static_cast<std::size_t>(owner)).post_task([reg, s, owner] {
      HttpConn* conn;
      {
        std::lock_guard lock(reg->mutex());
        conn = s->owner == owner ? s->conn : nullptr;
      }
      if (conn) conn->finish_stream();  // only this worker closes its connections: still alive
    });
  }
  c.respond(200, {}, {});
}

void handle_mcp_post(HttpConn& c, HttpRequest& req) {
  Worker& w = c.worker();
  if (!accepts_mcp(req.accept)) {
    c.respond(406, "application/json", json_error_body("Accept must allow application/json or text/event-stream"));
    return;
  }
  if (!is_json_content_type(req.content_type)) {
    c.respond(415, "application/json", json_error_body("Content-Type must be application/json"));
    return;
  }
  RpcRequest r = w.rpc_decoder().decode(req.body);
  if (r.error) {
    count_rpc_limit(w, r);
    rpc_error(c, r.id, r.error->code, r.error->message);
    return;
  }
  auto caller = authenticate(c, req, r.id);
  if (!caller) return;
  // Which era: a 2026 envelope (or header) wins; else a session; else a new session.
  bool era_2026 = !r.meta_version.empty() || is_2026_version(req.protocol_version);
  if (!era_2026 && !req.session_id.empty()) return handle_session_post(c, req, r, *caller);
  if (!era_2026 && r.method == "initialize") return handle_initialize(c, r, *caller);
  std::string version;
  if (!check_version(c, req, r, version)) return;

  if (r.method == "server/discover") {
    if (!r.has_id) return c.respond(202, {}, {});
    respond_discover(c, r, version);
  } else if (r.method == "subscriptions/listen") {
    start_listen(c, r, *caller);
  } else if (r.method == "ping" && r.has_id) {
    c.respond(200, "application/json", rpc_result_json(r.id, R"({"resultType":"complete"})"));
  } else if (!r.has_id) {
    // Notifications are answered 202. Over HTTP a listen is cancelled by closing its stream
    // (the SDK POSTs notifications/cancelled only after that). The POST ends nothing:
    // requests carry no client identity, and every SDK client names its first listen
    // "listen:0", so acting on it would end other clients' listens.
    c.respond(202, {}, {});
  } else {
    rpc_error(c, r.id, rpc_code::kMethodNotFound,
              "method not found: " + r.method + " (mcpfan serves server/discover, subscriptions/listen and ping)");
  }
}

void handle_publish(HttpConn& c, HttpRequest& req) {
  Worker& w = c.worker();
  if (!is_json_content_type(req.content_type)) {
    c.respond(415, "application/json", json_error_body("Content-Type must be application/json"));
    return;
  }
  ServerState& st = w.state();
  std::optional<std::string> forced;  // the tenant a bound key publishes to
  std::size_t bucket = 0;
  if (st.publisher_keys.enabled()) {
    auto grant = st.publisher_keys.lookup_bearer(req.authorization);
    if (!grant) {
      bool sent = !req.authorization.empty();
      (sent ? st.auth_counters.publisher_unknown_key : st.auth_counters.publisher_missing).fetch_add(1, std::memory_order_relaxed);
      std::string challenge = "WWW-Authenticate: Bearer realm=\"mcpfan-publish\"";
      if (sent) challenge += ", error=\"invalid_token\"";
      c.respond(401, "application/json",
                json_error_body(sent ? "unknown publisher key" : "publishing needs Authorization: Bearer <publisher key>"),
                challenge + "\r\n");
      return;
    }
    bucket = grant->key_index;
    if (!grant->any_tenant) forced = grant->tenant;
  }
  auto decoded = w.publish_decoder().decode(req.body, w.hub().tenants(),
                                            forced ? std::optional<std::string_view>(*forced) : std::nullopt);
  if (!decoded) {
    bool forbidden = decoded.error().code == rpc_code::kForbidden;
    if (forbidden) st.auth_counters.publisher_forbidden_tenant.fetch_add(1, std::memory_order_relaxed);
    c.respond(forbidden ? 403 : 400, "application/json", json_error_body(decoded.error().message));
    return;
  }
  std::vector<PayloadRef>& payloads = decoded.value().payloads;
  const std::size_t accepted = decoded.value().accepted;
  if (st.publish_rate.enabled() && accepted > 0) {
    auto now_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
    if (auto wait = st.publish_rate.take(bucket, static_cast<double>(accepted), now_ns)) {
      std::optional<TenantId> tenant = forced ? w.hub().tenants().find(*forced) : std::nullopt;
      w.limits().hit(Limit::PublishRate, tenant.value_or(Limits::kNoTenant));
      std::string msg = std::isinf(*wait)
                            ? "a publish of " + std::to_string(accepted) + " notifications exceeds the burst of " +
                                  std::to_string(static_cast<long long>(st.publish_rate.burst()))
                            : "publish rate limit exceeded; retry in " + std::to_string(*wait) + " s";
      long long retry = std::isinf(*wait) ? 1 : std::max(1LL, static_cast<long long>(std::ceil(*wait)));
      c.respond(429, "application/json", json_error_body(msg), "Retry-After: " + std::to_string(retry) + "\r\n");
      return;
    }
  }
  if (!w.hub().publish(payloads)) {
    c.respond(503, "application/json", json_error_body("the server is shutting down; nothing was published"));
    return;
  }
  w.hub().count_no_audience(accepted - payloads.size());
  c.respond(202, "application/json", R"({"accepted":)" + std::to_string(accepted) + "}");
}

}  // namespace

void route_request(HttpConn& c, HttpRequest& req) {
  std::string_view url = req.url;
  std::string_view path = url.substr(0, url.find('?'));
  auto method = static_cast<http_method>(req.method);
  if (!host_allowed(c.worker().config(), req.host)) {
    c.respond(403, "application/json", json_error_body("Host " + req.host + " is not allowed (DNS-rebinding protection)"));
    return;
  }
  if (!origin_allowed(c.worker().config(), req.origin)) {
    c.respond(403, "application/json", json_error_body("Origin " + req.origin + " is not allowed"));
    return;
  }
  auto only = [&](http_method m, const char* allow) {
    if (method == m) return true;
    c.respond(405, "application/json", json_error_body(std::string("method not allowed; use ") + allow),
              std::string("Allow: ") + allow + "\r\n");
    return false;
  };
  if (path == "/mcp") {
    if (method == HTTP_POST) handle_mcp_post(c, req);
    else if (method == HTTP_GET) handle_mcp_get(c, req);
    else if (method == HTTP_DELETE) handle_mcp_delete(c, req);
    else only(HTTP_POST, "POST, GET, DELETE");
  } else if (path == "/v1/publish") {
    if (only(HTTP_POST, "POST")) handle_publish(c, req);
  } else if (path == "/healthz") {
    if (only(HTTP_GET, "GET")) c.respond(200, "text/plain", "ok\n");
  } else if (path == "/metrics") {
    if (!only(HTTP_GET, "GET")) return;
    // Tenant names are in there: with auth configured, only this host or a key for any
    // tenant may read them.
    ServerState& st = c.worker().state();
    bool auth_on = st.client_auth.enabled() || st.publisher_keys.enabled();
    if (auth_on && !c.peer_is_loopback()) {
      auto grant = st.publisher_keys.lookup_bearer(req.authorization);
      if (!grant || !grant->any_tenant) {
        c.respond(403, "application/json", json_error_body("/metrics is served to loopback peers and to publisher keys for \"*\""));
        return;
      }
    }
    c.respond(200, "text/plain; version=0.0.4", c.worker().metrics_text());
  } else {
    c.respond(404, "application/json", json_error_body("no such path: " + std::string(path)));
  }
}

}  // namespace mcpfan::detail

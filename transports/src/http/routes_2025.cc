#include "http/exchange.h"
#include "http/routes.h"
#include "http/session_park.h"
#include "mcp/messages.h"
#include "mcp/protocol.h"
#include "mcp/sessions.h"
#include "server/loop_context.h"

// 2025-era Streamable HTTP sessions (design §2.2): initialize, requests within a session,
// the session's GET stream, and DELETE. Sessions are shared by every worker; see
// mcp/sessions.h for what each lock guards.
namespace mcpfan::detail {

namespace {

void session_not_found(Exchange& c, std::string_view id) {
  c.respond(404, "application/json",
            rpc_error_json(id, Error{-32001, "session not found: it ended or expired; send initialize for a new one"}));
}

// Changes a session's URI set, and the subscription of its GET stream if one is open. The
// change reaches the stream's worker through its shard inbox, in order with publishes, so
// a publish sent after the client saw `{}` is matched against the new set.
// Returns the limit that refused a new URI (the session's own URI count, or the tenant's
// subscription ceiling); nothing changes then.
std::optional<Limit> change_session_uri(LoopContext& w, const std::shared_ptr<Session>& s, const std::string& uri,
                                        bool add) {
  int owner;
  {
    std::lock_guard lock(s->mu);
    if (add) {
      if (auto refused = s->uris.add(uri)) return refused;
    } else {
      s->uris.remove(uri);
    }
    owner = s->owner;
  }
  if (owner < 0) return std::nullopt;  // applied when a GET stream opens
  auto shard_index = static_cast<std::size_t>(owner);
  Shard& shard = w.hub().shard(shard_index);
  // The client is answered before the owner loop adds the URI: name that loop in the routing
  // table now, so a publish sent after the answer is posted there (behind this change).
  LocalInterest* interest = w.hub().interest();
  if (add && interest) interest->reserve(shard_index, s->tenant, Kind::ResourceUpdated, uri);
  shard.post_task([s, owner, uri, add, &shard, interest, shard_index] {
    SubId sub{};
    bool open;
    {
      std::lock_guard lock(s->mu);
      open = s->owner == owner;  // its GET stream or parked stream is still here
      sub = s->sub;
    }
    if (open) {
      if (add) shard.add_uri(sub, s->tenant, uri);
      else shard.remove_uri(sub, s->tenant, uri);
    }
    if (add && interest)
      interest->unreserve(shard_index, s->tenant, Kind::ResourceUpdated, uri);  // the key holds it now
  });
  return std::nullopt;
}

// The session named by the request, if it exists and belongs to the caller's tenant: another
// tenant's session is answered as if it did not exist.
std::shared_ptr<Session> find_session(Exchange& c, const HttpRequest& req, const Caller& caller) {
  LoopContext& w = c.context();
  auto s = w.sessions().find(req.session_id, uv_now(w.loop()));
  if (s && s->tenant != caller.tenant) {
    w.clients().counters().client_wrong_tenant.fetch_add(1, std::memory_order_relaxed);
    log_auth_failure("client", "wrong_tenant", "a session used with another tenant's token");
    return nullptr;
  }
  return s;
}

}  // namespace

std::variant<std::shared_ptr<Session>, Refusal> open_session(LoopContext& w, const Caller& caller, std::string version,
                                                            std::string id) {
  ClientCore& core = w.clients();
  // A session holds one stream from here to its end, and its own reference on the tenant:
  // it outlives the connection that made it.
  StreamUsage usage;
  if (auto refused = StreamUsage::acquire(core.limits(), caller.tenant, 0, usage))
    return core.refusal(*refused, caller.tenant);
  TenantRef ref;
  if (caller.tenant != kDefaultTenant && core.tenants().retain(caller.tenant))
    ref = TenantRef(core.tenants(), caller.tenant);
  std::optional<Limit> refused;
  auto s = w.sessions().create(caller.tenant, std::move(version), uv_now(w.loop()), std::move(ref), std::move(usage),
                               refused, std::move(id));
  if (s) return s;
  if (refused) return core.refusal(*refused, caller.tenant);
  Refusal taken;
  taken.rpc_code = rpc_code::kInvalidRequest;
  taken.message = "a session with this id exists already";
  taken.http_status = 409;
  return taken;
}

void handle_initialize(Exchange& c, const RpcRequest& r, const Caller& caller) {
  if (!r.has_id) {
    rpc_error(c, {}, rpc_code::kInvalidRequest, "initialize must be a request with an id");
    return;
  }
  std::string_view version = negotiate_2025(r.init_version);
  auto opened = open_session(c.context(), caller, std::string(version), {});
  if (auto* refused = std::get_if<Refusal>(&opened)) return respond_refusal(c, r.id, *refused);
  respond_result(c, r, initialize_result(version), {{"Mcp-Session-Id", std::get<0>(opened)->id}});
}

std::optional<Refusal> apply_subscription(LoopContext& w, const std::shared_ptr<Session>& s, const RpcRequest& r,
                                          const Caller& caller) {
  const McpMethod* m = find_mcp_method(r.method);
  bool add = m && m->role == MethodRole::Subscribe;
  if (add) {
    if (auto refused = w.clients().check_listen_scope(caller)) return refused;
    if (auto refused = w.clients().check_uri(caller, r.uri)) return refused;
  }
  if (auto refused = change_session_uri(w, s, r.uri, add)) return w.clients().refusal(*refused, s->tenant);
  return std::nullopt;
}

std::shared_ptr<Session> caller_session(Exchange& c, const HttpRequest& req, const Caller& caller) {
  return find_session(c, req, caller);
}

void handle_session_post(Exchange& c, HttpRequest& req, const RpcRequest& r, const Caller& caller) {
  LoopContext& w = c.context();
  if (!req.protocol_version.empty() && !is_2025_version(req.protocol_version)) {
    rpc_error(c, r.id, rpc_code::kInvalidRequest,
              "unsupported MCP-Protocol-Version " + req.protocol_version + " for a session");
    return;
  }
  auto s = find_session(c, req, caller);
  if (!s) return session_not_found(c, r.id);
  const McpMethod* m = find_mcp_method(r.method);
  if (!r.has_id) {
    c.respond(202, {}, {});  // notifications/initialized and the like
  } else if (!m || !m->in(Era::Session2025)) {
    Error e = method_not_found(r.method, kOnly2025);
    rpc_error(c, r.id, e.code, std::move(e.message));
  } else if (m->role == MethodRole::Subscribe || m->role == MethodRole::Unsubscribe) {
    if (!authorize_subscribe(c, req, r, caller)) return;
    if (auto refused = apply_subscription(w, s, r, caller)) return respond_refusal(c, r.id, *refused);
    respond_result(c, r, "{}");
  } else if (m->role == MethodRole::Initialize) {
    rpc_error(c, r.id, rpc_code::kInvalidRequest, "this session is already initialized");
  } else if (auto reply = stateless_reply(*m, Era::Session2025)) {
    respond_reply(c, r, *reply);
  }
}

bool authorize_subscribe(Exchange& c, const HttpRequest& req, const RpcRequest& r, const Caller& caller) {
  const McpMethod* m = find_mcp_method(r.method);
  if (!m || m->role != MethodRole::Subscribe) return true;  // an unsubscribe needs nobody's leave
  ListenSpec one;
  one.resource_uris.push_back(r.uri);
  return authorize_watch(c, req, r.id, caller, r.method, one);
}

void handle_mcp_get(Exchange& c, HttpRequest& req, std::optional<std::string> upstream_cursor) {
  auto caller = authenticate(c, req);
  if (!caller) return;
  // The session's stream carries its notifications: a listen in all but name.
  if (auto refused = c.context().clients().check_listen_scope(*caller)) return respond_refusal(c, {}, *refused);
  if (req.session_id.empty()) {
    c.respond(400, "application/json",
              json_error_body("GET /mcp needs an Mcp-Session-Id header (send initialize first); "
                              "2026-07-28 clients use POST subscriptions/listen"));
    return;
  }
  if (!req.accept.empty() && req.accept.find("text/event-stream") == std::string::npos &&
      req.accept.find("*/*") == std::string::npos) {
    c.respond(406, "application/json", json_error_body("Accept must allow text/event-stream"));
    return;
  }
  auto s = find_session(c, req, *caller);
  if (!s) return session_not_found(c, {});
  // With Last-Event-ID the client resumes (docs/protocol.md "Resumable 2025 sessions"): it takes over
  // a stream whose close the server has not noticed yet. Without, a second stream is a 409.
  switch (c.begin_session_stream(std::move(s), req.last_event_id.empty() ? nullptr : &req.last_event_id,
                                 std::move(upstream_cursor))) {
    case SessionRegistry::Claim::Ended: return session_not_found(c, {});
    case SessionRegistry::Claim::Busy:
      c.respond(409, "application/json", json_error_body("this session already has an open stream"));
      return;
    case SessionRegistry::Claim::Ok: return;
  }
}

void handle_mcp_delete(Exchange& c, HttpRequest& req) {
  LoopContext& w = c.context();
  auto caller = authenticate(c, req);
  if (!caller) return;
  if (req.session_id.empty() || !find_session(c, req, *caller) || !end_session(w, req.session_id)) {
    c.respond(404, "application/json", json_error_body("no such session"));
    return;
  }
  c.respond(200, {}, {});
}

bool end_session(LoopContext& w, const std::string& id) {
  auto s = w.sessions().erase(id);
  if (!s) return false;
  end_session_stream(w.hub(), s);  // its GET stream or parked stream
  return true;
}

}  // namespace mcpfan::detail

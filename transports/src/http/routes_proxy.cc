#include <http_parser.h>

#include <algorithm>

#include "http/exchange.h"
#include "http/routes.h"
#include "http/field_syntax.h"
#include "http/mcp_name_check.h"
#include "http/task_capture.h"
#include "http/upstream_request.h"
#include "mcp/messages.h"
#include "mcp/session_journal.h"
#include "mcp/sessions.h"
#include "proxy/capabilities.h"
#include "server/loop_context.h"

// /mcp with --upstream (docs/protocol.md "Front proxy"): mcpfan serves what it is there for —
// 2026-07-28 `subscriptions/listen`, and for the 2025-era sessions it saw initialized,
// `resources/subscribe`/`unsubscribe` and their GET stream's notifications — and forwards
// everything else to the upstream MCP server, whose answers stream back as they come.
// `initialize` and `server/discover` answers gain mcpfan's capabilities on the way.
//
// Requests of sessions mcpfan did not see initialized (made before it started, or past its
// session ceiling) pass through untouched: mcpfan never answers for a session it does not hold.
namespace mcpfan::detail {

namespace {

// Session ids are visible ASCII (Streamable HTTP, 2025-11-25 "Session Management"); an
// upstream's id that is not, or is very long, is not adopted.
bool adoptable_session_id(std::string_view id) {
  if (id.empty() || id.size() > 256) return false;
  for (char ch : id) {
    if (ch < 0x21 || ch > 0x7e) return false;
  }
  return true;
}

void forward(Exchange& c, HttpRequest& req, std::string id_json, AnswerRewrite rewrite = {},
             std::unique_ptr<AnswerObserver> observer = nullptr) {
  proxy::UpstreamPool& pool = *c.context().upstream();
  // The answer may come at once (the pool is closed): forward() is the route's last call.
  c.forward(pool, upstream_request(req, pool.target()), std::move(id_json), std::move(rewrite), std::move(observer));
}

// A 2026-07-28 tools/call with poll-to-push on (--upstream-task-poll): forwarded as any other,
// its answer watched for a task handle (http/task_capture.h), which the loop's TaskPoller then
// polls for the listens of the caller's tenant and principal. A caller mcpfan cannot identify
// (client auth on, a token it does not accept) is forwarded without the capture: the upstream
// judges its credentials, and no listen of mcpfan's could be that caller's anyway.
void forward_tool_call(Exchange& c, HttpRequest& req, const RpcRequest& r) {
  LoopContext& w = c.context();
  CreatedTask context;
  ClientCore& core = w.clients();
  if (core.auth_enabled()) {
    auto verified = core.verify(req.authorization, /*bare_token_ok=*/false, ClientTransport::Http);
    auto* v = std::get_if<ClientCore::Verified>(&verified);
    if (!v) return forward(c, req, r.id);
    context.tenant = v->identity.tenant;
    context.principal = v->identity.subject;
  } else {
    context.tenant = std::string(kDefaultTenantName);
  }
  context.authorization = req.authorization;
  context.protocol_version = req.protocol_version.empty() ? r.meta_version : req.protocol_version;
  std::size_t bound = w.config().tasks.max_bytes + 64 * 1024;
  forward(c, req, r.id, {}, std::make_unique<TaskCapture>(*w.task_poller(), std::move(context), bound));
}

// initialize: the upstream makes the session; mcpfan adopts its id for the session it holds
// (subscriptions, the GET stream's notifications) and adds its capabilities to the answer.
void forward_initialize(Exchange& c, HttpRequest& req, const RpcRequest& r, const Caller& caller) {
  forward(c, req, r.id, [&c, caller, id = r.id, requested = r.init_version](UpstreamAnswer& a) {
    if (a.status != 200) return;
    // A 2025-era session hears no task notifications: its answer does not gain the Tasks extension.
    proxy::MergedAnswer m = proxy::merge_capabilities(a.body, proxy::is_event_stream(a.headers), /*tasks=*/false);
    if (!m.merged) return;  // not an initialize result: the client hears what the upstream said
    std::string session_id;
    if (const std::string* sid = proxy::find_header(a.headers, "mcp-session-id")) session_id = *sid;
    bool minted = session_id.empty();  // a stateless upstream: the session is mcpfan's alone
    if (!minted && !adoptable_session_id(session_id)) return;
    std::string version =
        is_2025_version(m.protocol_version) ? m.protocol_version : std::string(negotiate_2025(requested));
    auto opened = open_session(c.context(), caller, std::move(version), session_id);
    if (auto* refused = std::get_if<Refusal>(&opened)) {
      // The upstream's session stays unused until it expires there; the client is told why.
      a.status = refused->http_status == 200 ? 503 : refused->http_status;
      a.headers = {{"Content-Type", "application/json"}};
      if (refused->retry_after) a.headers.emplace_back("Retry-After", "1");
      a.body = rpc_error_json(id, Error{refused->rpc_code, refused->message});
      return;
    }
    a.body = std::move(m.body);
    if (minted) a.headers.emplace_back("Mcp-Session-Id", std::get<0>(opened)->id);
  });
}

void forward_discover(Exchange& c, HttpRequest& req, const RpcRequest& r) {
  forward(c, req, r.id, [](UpstreamAnswer& a) {
    if (a.status != 200) return;
    proxy::MergedAnswer m = proxy::merge_capabilities(a.body, proxy::is_event_stream(a.headers), /*tasks=*/true);
    if (m.merged) a.body = std::move(m.body);
  });
}

// The session the request names, if mcpfan holds it (for the caller's tenant).
std::shared_ptr<Session> held_session(Exchange& c, const HttpRequest& req) {
  if (req.session_id.empty()) return nullptr;
  return c.context().sessions().find(req.session_id, uv_now(c.context().loop()));
}

void proxied_post(Exchange& c, HttpRequest& req) {
  LoopContext& w = c.context();
  RpcRequest r = w.rpc_decoder().decode(req.body);  // a response, a batch: not decodable here, forwarded
  // 2026-07-28 requests are routed by their Mcp-Method header where it is present (that is
  // what it is for); mcpfan checks it, and Mcp-Name, against the body before serving or
  // forwarding the request.
  bool era_2026 = !r.meta_version.empty() || is_2026_version(req.protocol_version);
  std::string_view method = is_2026_version(req.protocol_version) && !req.mcp_method.empty()
                                ? std::string_view(req.mcp_method)
                                : std::string_view(r.method);
  // What mcpfan serves itself is decided by the method's role (mcp/methods.h); the rest is forwarded.
  const McpMethod* m = find_mcp_method(method);
  auto is = [m](MethodRole role) { return m != nullptr && m->role == role; };
  if (era_2026) {
    if (is(MethodRole::Listen)) return handle_mcp_post(c, req);
    // SEP-2243: what is forwarded must say in its headers what its body says (the listen route
    // checks its own); a body RpcDecoder could not read to its method is the upstream's to refuse.
    if (!r.method.empty()) {
      bool required = r.meta_version == kRev2026 || req.protocol_version == kRev2026;
      if (auto mismatch = routing_header_mismatch(req.mcp_method, req.mcp_name, r, req.body, required))
        return rpc_error(c, 400, r.id, rpc_code::kHeaderMismatch, std::move(*mismatch));
    }
    if (is(MethodRole::Discover) && !r.error) return forward_discover(c, req, r);
    if (method == "tools/call" && !r.error && r.has_id && w.task_poller()) return forward_tool_call(c, req, r);
    return forward(c, req, r.id);
  }
  if (!req.session_id.empty()) {
    bool subscription = is(MethodRole::Subscribe) || is(MethodRole::Unsubscribe);
    if (subscription && !r.error && held_session(c, req)) {
      if (!w.config().upstream.forward_subscribe) return handle_mcp_post(c, req);
      // Served here, and the upstream hears of it too: its answer is the client's.
      auto caller = authenticate(c, req, r.id);
      if (!caller) return;
      auto s = caller_session(c, req, *caller);
      if (!s) return forward(c, req, r.id);
      if (!authorize_subscribe(c, req, r, *caller)) return;
      if (auto refused = apply_subscription(w, s, r, *caller)) return respond_refusal(c, r.id, *refused);
    }
    return forward(c, req, r.id);
  }
  if (is(MethodRole::Initialize) && !r.error && r.has_id) {
    auto caller = authenticate(c, req, r.id);
    if (!caller) return;
    return forward_initialize(c, req, r, *caller);
  }
  forward(c, req, r.id);
}

// The GET stream of a session mcpfan holds: mcpfan's notifications and the upstream's own GET
// stream for the session, on one stream with one Last-Event-ID (http/session_upstream.h).
void proxied_session_get(Exchange& c, HttpRequest& req, const std::shared_ptr<Session>& s) {
  // An id that is not one of this stream's resumes a stream of the upstream's (a POST stream
  // cut short, SEP-1699 polling): that is the upstream's alone to replay, never mcpfan's.
  if (!req.last_event_id.empty() && !parse_cursor(req.last_event_id)) return forward(c, req, {});
  std::string upstream_id;
  if (!req.last_event_id.empty()) upstream_id = std::string(upstream_event_id(req.last_event_id).value_or(""));
  // The upstream resumes from its own id, if the client's carried one.
  std::erase_if(req.fields, [](const Field& f) { return ieq(f.name, "last-event-id"); });
  std::vector<Field> extra;
  if (!upstream_id.empty()) extra.push_back({"Last-Event-ID", upstream_id});
  proxy::ForwardedRequest upstream_get =
      upstream_request(req, c.context().upstream()->target(), extra);  // req is cleared once streaming
  c.hold_head();
  // The session's upstream cursor changes only for a caller whose stream is granted: one who
  // gets 401, 404 or 409 leaves it as it was.
  handle_mcp_get(c, req, std::move(upstream_id));
  if (!c.streams_session()) return c.release_head();  // answered otherwise (404, 409, 401)
  c.start_upstream_leg(std::move(upstream_get));
}

}  // namespace

void handle_mcp_proxied(Exchange& c, HttpRequest& req) {
  switch (static_cast<http_method>(req.method)) {
    case HTTP_POST: return proxied_post(c, req);
    case HTTP_GET:
      // The GET stream of a session mcpfan holds carries its notifications; any other GET
      // (another session's, a 2026 client's probe) is the upstream's to answer.
      if (auto s = held_session(c, req)) return proxied_session_get(c, req, s);
      return forward(c, req, {});
    case HTTP_DELETE:
      // Ends mcpfan's side of a session it holds, then the upstream's: the client hears the upstream.
      if (held_session(c, req)) {
        auto caller = authenticate(c, req);
        if (!caller) return;
        if (caller_session(c, req, *caller)) end_session(c.context(), req.session_id);
      }
      return forward(c, req, {});
    default: return forward(c, req, {});
  }
}

}  // namespace mcpfan::detail

#include "http/exchange.h"
#include "http/mcp_name_check.h"
#include "http/request_checks.h"
#include "http/routes.h"
#include "mcp/messages.h"
#include "mcp/protocol.h"
#include "server/loop_context.h"

// POST /mcp: which era a request belongs to, and the 2026-07-28 routes (design §2.1).
namespace mcpfan::detail {

namespace {

void respond_discover(Exchange& c, const RpcRequest& r, std::string_view version) {
  c.respond(200, "application/json", rpc_result_json(r.id, discover_result()),
            {{"MCP-Protocol-Version", std::string(version)}});
}

void start_listen(Exchange& c, const HttpRequest& req, RpcRequest& r, const Caller& caller) {
  if (!r.has_id) {
    rpc_error(c, {}, rpc_code::kInvalidRequest, "subscriptions/listen must be a request with an id");
    return;
  }
  // The acknowledgement then names only what the application allows (the spec: "the subset the server agreed to
  // honor").
  if (!authorize_watch(c, req, r.id, caller, r.method, r.listen)) return;
  auto admitted = c.context().clients().admit_listen(caller, r.listen, r.id, r.declares_tasks);
  if (auto* refused = std::get_if<Refusal>(&admitted)) return respond_refusal(c, r.id, *refused);
  auto& grant = std::get<ListenGrant>(admitted);
  c.hold_stream_usage(std::move(grant.usage));
  c.begin_listen(grant.plan.filter, std::move(r.id), sse_event(grant.plan.ack));
}

// The envelope's version decides; 2026-07-28 requests must mirror it (and the method, and
// Mcp-Name's member) in headers, draft requests may omit them but must not contradict them.
// Answers and returns false when the request cannot be served.
bool check_version(Exchange& c, const HttpRequest& req, const RpcRequest& r, std::string& version) {
  const std::string& body_v = r.meta_version;
  const std::string& head_v = req.protocol_version;
  if (body_v.empty()) {
    if (is_2026_version(head_v)) {
      // A request of that revision without its per-request fields is malformed.
      rpc_error(
          c, 400, r.id, rpc_code::kInvalidParams,
          "missing params._meta " + std::string(kProtocolVersionKey) + " (required on every " + head_v + " request)");
      return false;
    }
    rpc_error(c, r.id, rpc_code::kUnsupportedVersion,
              head_v.empty() ? "missing protocol version: send params._meta io.modelcontextprotocol/protocolVersion"
                             : "unsupported protocol version " + head_v,
              unsupported_version_data(head_v));
    return false;
  }
  // Header and body disagree: that is the error, whichever of them is supported.
  if (!head_v.empty() && head_v != body_v) {
    rpc_error(c, r.id, rpc_code::kHeaderMismatch,
              "MCP-Protocol-Version header " + head_v + " does not match params._meta version " + body_v);
    return false;
  }
  if (!is_2026_version(body_v)) {
    rpc_error(c, r.id, rpc_code::kUnsupportedVersion, "unsupported protocol version " + body_v,
              unsupported_version_data(body_v));
    return false;
  }
  bool strict = body_v == kRev2026;
  if (strict && head_v.empty()) {
    rpc_error(c, r.id, rpc_code::kHeaderMismatch, "missing MCP-Protocol-Version header (must be " + body_v + ")");
    return false;
  }
  if (auto missing = missing_request_fields(r)) {
    rpc_error(c, 400, r.id, missing->code, missing->message);
    return false;
  }
  // SEP-2243: Mcp-Method and Mcp-Name against the body (http/mcp_name_check.h).
  if (auto mismatch = routing_header_mismatch(req.mcp_method, req.mcp_name, r, req.body, strict)) {
    rpc_error(c, 400, r.id, rpc_code::kHeaderMismatch, std::move(*mismatch));
    return false;
  }
  version = body_v;
  return true;
}

}  // namespace

void handle_mcp_post(Exchange& c, HttpRequest& req) {
  LoopContext& w = c.context();
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
    count_rpc_limit(c, r);
    if (r.envelope_error) return rpc_error(c, 400, r.id, r.error->code, r.error->message);
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

  const McpMethod* m = find_mcp_method(r.method);
  if (!r.has_id) {
    // Notifications are answered 202. Over HTTP a listen is cancelled by closing its stream
    // (the SDK POSTs notifications/cancelled only after that). The POST ends nothing:
    // requests carry no client identity, and every SDK client names its first listen
    // "listen:0", so acting on it would end other clients' listens.
    c.respond(202, {}, {});
  } else if (!m || !m->in(Era::Rev2026)) {
    // Streamable HTTP, 2026-07-28: a method the server does not have is 404 with -32601 —
    // the 2025-era methods included: that revision removed them.
    Error e = method_not_found(r.method, kOnly2026, version);
    rpc_error(c, 404, r.id, e.code, std::move(e.message));
  } else if (m->role == MethodRole::Listen) {
    start_listen(c, req, r, *caller);
  } else if (m->role == MethodRole::Discover) {
    respond_discover(c, r, version);
  } else if (auto reply = stateless_reply(*m, Era::Rev2026)) {
    respond_reply(c, r, *reply);
  }
}

}  // namespace mcpfan::detail

#include "mcp/messages.h"
#include "mcp/methods.h"
#include "mcp/protocol.h"
#include "server/log.h"
#include "server/loop_context.h"
#include "stdio/stdio_conn.h"

// The MCP requests of a stdio client. Admission (tokens, tenants, ceilings, URI prefixes) is
// the client core's, as for HTTP; this file keeps what is stdio's own: a connection is its
// own 2025 session and may hold many 2026 listens, answered on the same line stream.
namespace mcpfan::detail {

void StdioConn::handle_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines are not messages
  RpcRequest r = w_.rpc_decoder().decode(line);
  if (r.error) {
    if (auto limit = limit_of(r.limit_hit)) w_.limits().hit(*limit, caller_.tenant);
    if (r.has_id || r.error->code == rpc_code::kParseError || r.error->code == rpc_code::kInvalidRequest) {
      reply_error(r.id, r.error->code, r.error->message);
    } else {
      log::line("stdio_bad_notification", "stdio notification " + r.method + " dropped: " + r.error->message);
    }
    return;
  }
  handle_request(r);
}

void StdioConn::reply_refusal(const RpcRequest& r, const Refusal& refusal) {
  if (r.has_id) reply_error(r.id, refusal.rpc_code, refusal.message, refusal.data);
}

bool StdioConn::authenticate(RpcRequest& r) {
  ClientCore& core = w_.clients();
  // The host's authenticator also hears a connection that is not bound yet and sent nothing
  // (""): it, not mcpfan, decides whether such a client may be served.
  bool ask = !r.auth_token.empty() || (needs_auth_ && core.host_auth());
  if (ask && core.auth_enabled()) {
    auto verified = core.verify(r.auth_token, /*bare_token_ok=*/true, transport_);
    if (auto* pending = std::get_if<AuthPending>(&verified)) {
      // A stdio client's requests are answered in order and do not wait off the loop: the agent
      // is asked now (keys fetched again, or the token introspected and cached) and the client
      // told to retry, which then finds the answer.
      auto wait = pending->start([](AuthWait) {});
      if (wait == oauth::Agent::Wait::TooSoon) {
        AuthWait fetched{true, std::nullopt};
        verified = core.verify(r.auth_token, true, transport_, &fetched);
      } else {
        reply_refusal(r, Refusal{rpc_code::kUnauthorized,
                                 "the authorization server is being asked about this token; retry in a moment", 401,
                                 std::nullopt, true});
        return false;
      }
    }
    if (auto* refused = std::get_if<Refusal>(&verified)) {
      reply_refusal(r, *refused);
      return false;
    }
    auto& v = std::get<ClientCore::Verified>(verified);
    if (!needs_auth_) {
      // Bound already (by --unix-tenant or an earlier token): a token may not move it.
      if (v.tenant != caller_.tenant) {
        reply_refusal(r, core.wrong_tenant(caller_.tenant));
        return false;
      }
    } else {
      caller_.tenant = v.tenant;
      tenant_ref_ = std::move(v.ref);
      needs_auth_ = false;
    }
    caller_.identity = std::move(v.identity);
  }
  if (needs_auth_) {
    reply_refusal(r, core.credentials_required());
    return false;
  }
  if (!binding_.bound()) {
    if (auto refused = binding_.bind(caller_.tenant, std::move(tenant_ref_))) {
      reply_refusal(r, core.refusal(*refused, caller_.tenant));
      return false;
    }
  }
  return true;
}

void StdioConn::handle_request(RpcRequest& r) {
  const std::string& m = r.method;
  if (!authenticate(r)) return;
  if (!r.meta_version.empty() && !is_2026_version(r.meta_version)) {
    if (r.has_id) {
      reply_error(r.id, rpc_code::kUnsupportedVersion, "unsupported protocol version " + r.meta_version,
                  unsupported_version_data(r.meta_version));
    }
    return;
  }
  if (auto missing = missing_request_fields(r)) return reply_error(r.id, missing->code, missing->message);
  if (!r.has_id) {
    if (m == "notifications/cancelled") {
      if (auto it = listens_.find(r.cancel_id); it != listens_.end()) {
        w_.shard().unsubscribe(it->second.sub);
        listens_.erase(it);  // gives its usage back
      }
    }
    return;  // notifications/initialized and any other notification need nothing
  }
  // One connection speaks both eras: a request in a 2026 envelope names only that revision's
  // methods, any other request may use either era's.
  const bool rev2026 = !r.meta_version.empty();
  const std::uint8_t eras = rev2026 ? kOnly2026 : kBothEras;
  const McpMethod* meth = find_mcp_method(m);
  if (!meth || (meth->eras & eras) == 0) {
    Error e = method_not_found(m, eras, r.meta_version);
    reply_error(r.id, e.code, std::move(e.message));
    return;
  }
  switch (meth->role) {
    case MethodRole::Listen: return start_listen(r);
    case MethodRole::Initialize:
    case MethodRole::Subscribe:
    case MethodRole::Unsubscribe: return handle_session_request(*meth, r);
    default: break;
  }
  McpReply answer = *stateless_reply(*meth, rev2026 ? Era::Rev2026 : Era::Session2025);
  if (answer.error) return reply_error(r.id, answer.error->code, std::move(answer.error->message));
  reply(rpc_result_json(r.id, *answer.result));
}

void StdioConn::handle_session_request(const McpMethod& method, RpcRequest& r) {
  ClientCore& core = w_.clients();
  Shard& shard = w_.shard();
  const std::string& m = r.method;
  if (method.role == MethodRole::Initialize) {
    if (!session_.uris) {
      if (auto refused = StreamUsage::acquire(core.limits(), caller_.tenant, 0, session_.usage)) {
        return reply_refusal(r, core.refusal(*refused, caller_.tenant));
      }
      session_.uris.emplace(core.limits(), caller_.tenant, w_.config().mcp.max_uris_per_listen);
      session_.sub = shard.subscribe(stream_, ClientCore::session_filter(caller_.tenant, *session_.uris), {});
    }
    reply(rpc_result_json(r.id, initialize_result(negotiate_2025(r.init_version))));
    return;
  }
  if (!session_.uris) {
    reply_error(r.id, rpc_code::kInvalidRequest, "send initialize before " + m);
    return;
  }
  if (method.role == MethodRole::Subscribe) {
    if (auto refused = core.check_uri(caller_, r.uri)) return reply_refusal(r, *refused);
    if (auto refused = core.check_listen_scope(caller_)) return reply_refusal(r, *refused);
    ListenSpec one;
    one.resource_uris.push_back(r.uri);
    if (!authorized(r, one)) return;
    if (auto refused = session_.uris->add(r.uri)) return reply_refusal(r, core.refusal(*refused, caller_.tenant));
    shard.add_uri(session_.sub, caller_.tenant, r.uri);
  } else {
    session_.uris->remove(r.uri);
    shard.remove_uri(session_.sub, caller_.tenant, r.uri);
  }
  reply(rpc_result_json(r.id, "{}"));
}

bool StdioConn::authorized(const RpcRequest& r, ListenSpec& spec) {
  auto verdict = w_.clients().authorize(caller_, r.method, spec, nullptr);
  if (auto* pending = std::get_if<AuthPending>(&verdict)) {
    // As with tokens (authenticate()): asked now, the answer kept for its ttlMs; the client retries.
    (void)pending->start([](AuthWait) {});
    reply_refusal(r, Refusal{rpc_code::kInternalError,
                             "the application's authorization (--authorize-url) is being asked; retry in a moment", 503,
                             std::nullopt, true});
    return false;
  }
  if (auto* refused = std::get_if<Refusal>(&verdict)) {
    reply_refusal(r, *refused);
    return false;
  }
  return true;
}

void StdioConn::start_listen(RpcRequest& r) {
  if (r.meta_version.empty()) {
    reply_error(r.id, rpc_code::kInvalidParams,
                "subscriptions/listen needs params._meta io.modelcontextprotocol/protocolVersion (2026-07-28)");
    return;
  }
  if (listens_.count(r.id)) {
    reply_error(r.id, rpc_code::kInvalidRequest, "a listen with id " + r.id + " is already open on this connection");
    return;
  }
  ClientCore& core = w_.clients();
  if (auto refused = core.check_uris(caller_, r.listen.resource_uris)) return reply_refusal(r, *refused);
  if (!authorized(r, r.listen)) return;
  if (listens_.size() >= w_.config().mcp.max_listens_per_connection) {
    w_.limits().hit(Limit::ListensPerConnection, caller_.tenant);
    return reply_refusal(r, core.refusal(Limit::ListensPerConnection, caller_.tenant));
  }
  auto admitted = core.admit_listen(caller_, r.listen, r.id, r.declares_tasks);
  if (auto* refused = std::get_if<Refusal>(&admitted)) return reply_refusal(r, *refused);
  auto& grant = std::get<ListenGrant>(admitted);
  grant.plan.ack += '\n';
  Shard& shard = w_.shard();
  if (shard.send(stream_, std::move(grant.plan.ack)) != SendStatus::Ok) {  // first: nothing is matched before it
    stream_open_ = false;  // past the pending-bytes bound: the shard closed the stream
    close();
    return;
  }
  SubId sub = shard.subscribe(stream_, grant.plan.filter, r.id);
  listens_.emplace(r.id, Listen{sub, std::move(grant.usage)});
  core.replay_task_states(shard, sub, grant.plan.filter);  // behind the ack
}

}  // namespace mcpfan::detail

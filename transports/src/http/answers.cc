#include "http/exchange.h"
#include "http/routes.h"
#include "mcp/messages.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {
// An auth error message inside a quoted WWW-Authenticate parameter.
std::string quoted_safe(std::string_view s) {
  std::string out;
  for (char ch : s) out += (ch == '"' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20) ? '\'' : ch;
  return out;
}
}  // namespace

void rpc_error(Exchange& c, std::string_view id, int code, std::string message, std::string_view data) {
  bool answerable = !id.empty() && (code == rpc_code::kMethodNotFound || code == rpc_code::kInvalidParams);
  rpc_error(c, answerable ? 200 : 400, id, code, std::move(message), data);
}

void rpc_error(Exchange& c, int status, std::string_view id, int code, std::string message, std::string_view data) {
  c.respond(status, "application/json", rpc_error_json(id, Error{code, std::move(message)}, data));
}

void respond_result(Exchange& c, const RpcRequest& r, std::string_view result, std::vector<Field> headers) {
  c.respond(200, "application/json", rpc_result_json(r.id, result), std::move(headers));
}

void respond_reply(Exchange& c, const RpcRequest& r, const McpReply& reply, std::vector<Field> headers) {
  if (reply.error) return rpc_error(c, 200, r.id, reply.error->code, reply.error->message);
  respond_result(c, r, *reply.result, std::move(headers));
}

void respond_refusal(Exchange& c, std::string_view id, const Refusal& refusal) {
  if (refusal.auth) {
    // RFC 6750 §3: no error code when no credentials were sent at all.
    std::string challenge = "Bearer realm=\"mcpfan\"";
    if (*refusal.auth != AuthFailure::Missing) {
      challenge += ", error=\"invalid_token\", error_description=\"" + quoted_safe(refusal.message) + "\"";
    }
    c.respond(refusal.http_status, "application/json", json_error_body(refusal.message),
              {{"WWW-Authenticate", std::move(challenge)}});
    return;
  }
  if (refusal.http_status == 200) return rpc_error(c, id, refusal.rpc_code, refusal.message, refusal.data);
  std::string body = id.empty() && refusal.http_status != 403
                         ? json_error_body(refusal.message)
                         : rpc_error_json(id, Error{refusal.rpc_code, refusal.message}, refusal.data);
  std::vector<Field> headers;
  if (refusal.retry_after) headers.push_back({"Retry-After", "1"});
  c.respond(refusal.http_status, "application/json", std::move(body), std::move(headers));
}

std::optional<Caller> authenticate(Exchange& c, const HttpRequest& req, std::string_view id) {
  ClientCore& core = c.context().clients();
  Caller caller;
  TenantRef ref;  // none for the default tenant, which is never reclaimed
  if (core.auth_enabled()) {
    auto verified = core.verify(req.authorization, /*bare_token_ok=*/false, ClientTransport::Http);
    if (auto* refused = std::get_if<Refusal>(&verified)) {
      respond_refusal(c, id, *refused);
      return std::nullopt;
    }
    auto& v = std::get<ClientCore::Verified>(verified);
    caller.identity = std::move(v.identity);
    caller.tenant = v.tenant;
    ref = std::move(v.ref);
  }
  if (auto refused = c.binding().bind(caller.tenant, std::move(ref))) {
    respond_refusal(c, id, core.refusal(*refused, caller.tenant));
    return std::nullopt;
  }
  return caller;
}

void count_rpc_limit(Exchange& c, const RpcRequest& r) {
  if (auto limit = limit_of(r.limit_hit)) c.context().limits().hit(*limit);
}

}  // namespace mcpfan::detail

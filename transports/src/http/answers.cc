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
    // RFC 6750 §3: no error code when no credentials were sent at all. With OAuth, every
    // challenge names the protected resource metadata (RFC 9728 §5.1), where clients find the
    // authorization server.
    const oauth::Agent* agent = c.context().clients().oauth();
    if (agent && !agent->tokens()) agent = nullptr;  // --authorize-url alone: no OAuth challenge
    std::string challenge = "Bearer realm=\"mcpfan\"";
    std::string body = json_error_body(refusal.message);
    if (*refusal.auth == AuthFailure::InsufficientScope && agent) {
      challenge += ", error=\"insufficient_scope\", scope=\"" + quoted_safe(agent->listen_scope()) +
                   "\", error_description=\"" + quoted_safe(refusal.message) + "\"";
      if (!id.empty()) body = rpc_error_json(id, Error{refusal.rpc_code, refusal.message});
    } else if (*refusal.auth != AuthFailure::Missing) {
      challenge += ", error=\"invalid_token\", error_description=\"" + quoted_safe(refusal.message) + "\"";
    }
    if (agent) challenge += ", resource_metadata=\"" + quoted_safe(agent->metadata_url()) + "\"";
    c.respond(refusal.http_status, "application/json", std::move(body), {{"WWW-Authenticate", std::move(challenge)}});
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

namespace {
// False: the agent said TooSoon (decide now); true: suspended, or answered 503.
bool wait_for_agent(Exchange& c, const HttpRequest& req, AuthPending& pending) {
  // The agent calls back on its own thread; the Resume is set below, on this loop, before the
  // post it makes can run here (it runs on a later turn of this loop).
  auto resume = std::make_shared<Exchange::Resume>();
  LoopContext* loop = &c.context();
  // What the request waited for before (a key fetch, an introspection) stays known: routed
  // again, it must not wait for that a second time.
  std::shared_ptr<const AuthWait> before = req.waited;
  auto wait = pending.start([resume, loop, before](AuthWait outcome) {
    if (before) {
      outcome.keys_refetched = outcome.keys_refetched || before->keys_refetched;
      if (!outcome.introspected) outcome.introspected = before->introspected;
      if (!outcome.authorized) outcome.authorized = before->authorized;
    }
    auto waited = std::make_shared<const AuthWait>(std::move(outcome));
    (void)loop->post([resume, waited] {
      if (*resume) (*resume)(waited);
    });
  });
  switch (wait) {
    case oauth::Agent::Wait::Queued:
      *resume = c.suspend(req);
      return true;
    case oauth::Agent::Wait::TooSoon:
      return false;
    case oauth::Agent::Wait::Full:
      break;
  }
  c.respond(503, "application/json",
            json_error_body("too many requests are waiting for the authorization server; retry shortly"),
            {{"Retry-After", "1"}});
  return true;
}
}  // namespace

std::optional<Caller> authenticate(Exchange& c, const HttpRequest& req, std::string_view id) {
  ClientCore& core = c.context().clients();
  Caller caller;
  TenantRef ref;  // none for the default tenant, which is never reclaimed
  if (core.auth_enabled()) {
    auto verified = core.verify(req.authorization, /*bare_token_ok=*/false, ClientTransport::Http, req.waited.get());
    if (auto* pending = std::get_if<AuthPending>(&verified)) {
      if (!wait_for_agent(c, req, *pending)) {
        // The keys were fetched again moments ago: decide now, as if this request had waited for that fetch.
        AuthWait fetched{true, std::nullopt};
        verified = core.verify(req.authorization, false, ClientTransport::Http, &fetched);
      } else {
        return std::nullopt;
      }
    }
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

bool authorize_watch(Exchange& c, const HttpRequest& req, std::string_view id, const Caller& caller,
                     std::string_view method, ListenSpec& spec) {
  auto verdict = c.context().clients().authorize(caller, method, spec, req.waited.get());
  if (auto* pending = std::get_if<AuthPending>(&verdict)) {
    // Only the keys say TooSoon; an application's question is always queued or refused.
    if (!wait_for_agent(c, req, *pending)) {
      c.respond(503, "application/json",
                json_error_body("the application's authorization (--authorize-url) could not be asked; retry shortly"),
                {{"Retry-After", "1"}});
    }
    return false;
  }
  if (auto* refused = std::get_if<Refusal>(&verdict)) {
    respond_refusal(c, id, *refused);
    return false;
  }
  return true;
}

void count_rpc_limit(Exchange& c, const RpcRequest& r) {
  if (auto limit = limit_of(r.limit_hit)) c.context().limits().hit(*limit);
}

}  // namespace mcpfan::detail

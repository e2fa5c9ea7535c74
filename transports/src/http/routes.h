#pragma once
// The HTTP routes behind route_request (router.h), one file each: routes_2026.cc (POST /mcp:
// the era dispatch, server/discover, subscriptions/listen), routes_2025.cc (2025-era
// sessions: initialize, session requests, the GET stream, DELETE), routes_publish.cc
// (POST /v1/publish), routes_proxy.cc (/mcp with --upstream: served or forwarded), and answers.cc (how an MCP client's
// refusals and errors are answered over HTTP). Loop-affine: called from a connection's parser callback.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "http/request.h"
#include "mcp/client.h"
#include "mcp/methods.h"
#include "mcpfan/rpc_decoder.h"

namespace mcpfan::detail {

class Exchange;
class LoopContext;
struct HttpRequest;
struct Session;

void handle_mcp_post(Exchange& c, HttpRequest& req);
/**
 * GET /mcp: a 2025-era session's stream. `upstream_cursor` (the front proxy): the upstream's
 * last event id for the session, recorded only once the stream is granted.
 */
void handle_mcp_get(Exchange& c, HttpRequest& req, std::optional<std::string> upstream_cursor = std::nullopt);
/** 2025-era POSTs, handed over by handle_mcp_post: `initialize`, and requests naming a session. */
void handle_initialize(Exchange& c, const RpcRequest& r, const Caller& caller);
void handle_session_post(Exchange& c, HttpRequest& req, const RpcRequest& r, const Caller& caller);
/** resources/subscribe and --authorize-url: whether the application allows `r.uri` (else answered). */
[[nodiscard]] bool authorize_subscribe(Exchange& c, const HttpRequest& req, const RpcRequest& r, const Caller& caller);
void handle_mcp_delete(Exchange& c, HttpRequest& req);
/**
 * A new 2025-era session of `caller` at `version`, counted against its tenant; `id` empty for a
 * random one (the front proxy adopts its upstream's). The refusal when a limit says no.
 */
[[nodiscard]] std::variant<std::shared_ptr<Session>, Refusal> open_session(LoopContext& w, const Caller& caller,
                                                                           std::string version, std::string id);
/** resources/subscribe or unsubscribe `r.uri` on the caller's session `s`; the refusal when a limit or a URI rule says
 * no. */
[[nodiscard]] std::optional<Refusal> apply_subscription(LoopContext& w, const std::shared_ptr<Session>& s,
                                                        const RpcRequest& r, const Caller& caller);
/** The session the request names, if it exists and belongs to the caller's tenant. */
[[nodiscard]] std::shared_ptr<Session> caller_session(Exchange& c, const HttpRequest& req, const Caller& caller);
/** Ends a session (DELETE): removed, its GET stream finished on its worker. False if there was none. */
bool end_session(LoopContext& w, const std::string& id);
/** With --upstream: every /mcp request (routes_proxy.cc decides what mcpfan serves and what it forwards). */
void handle_mcp_proxied(Exchange& c, HttpRequest& req);
void handle_publish(Exchange& c, HttpRequest& req);
/** /.well-known/oauth-* and openid-configuration (routes_oauth.cc). */
[[nodiscard]] bool is_oauth_path(std::string_view path) noexcept;
/** The protected resource metadata with --oauth-issuer; else the upstream's documents passed through, or 404. */
void route_oauth_metadata(Exchange& c, HttpRequest& req, std::string_view path);

// ---- answers.cc ----
/**
 * A JSON-RPC error. Malformed requests are HTTP errors (400); well-formed but refused
 * requests (-32601, -32602) are JSON-RPC answers (200). A notification (no id) gets no
 * JSON-RPC answer, so a refused one is a 400.
 */
void rpc_error(Exchange& c, std::string_view id, int code, std::string message, std::string_view data = {});
/** A JSON-RPC error with the HTTP status the transport's rules give it. */
void rpc_error(Exchange& c, int status, std::string_view id, int code, std::string message, std::string_view data = {});
void respond_result(Exchange& c, const RpcRequest& r, std::string_view result, std::vector<Field> headers = {});
/** A method's answer (mcp/methods.h): its result, or its error as a 200 JSON-RPC error. */
void respond_reply(Exchange& c, const RpcRequest& r, const McpReply& reply, std::vector<Field> headers = {});
/** A refusal from the client core: its status, a JSON-RPC error (or {"error"} without an id), and its headers. */
void respond_refusal(Exchange& c, std::string_view id, const Refusal& refusal);
/**
 * Who is asking. With client auth configured a valid bearer token names the tenant; without,
 * every client is tenant "default". The connection is bound to (counted against) that tenant.
 * Answers 401/429/503 itself and returns nullopt when refused.
 */
[[nodiscard]] std::optional<Caller> authenticate(Exchange& c, const HttpRequest& req, std::string_view id = {});
/**
 * --authorize-url, before a listen or a 2025 resources/subscribe is acknowledged: narrows
 * `spec` to what the application allows. False: answered (refused: 403 when nothing is
 * allowed, 503 when the application did not answer; or suspended until it answers, then
 * routed again). True: go on with what is left of `spec`.
 */
[[nodiscard]] bool authorize_watch(Exchange& c, const HttpRequest& req, std::string_view id, const Caller& caller,
                                   std::string_view method, ListenSpec& spec);
/** The decoder hit a size limit while rejecting a request: count it. */
void count_rpc_limit(Exchange& c, const RpcRequest& r);

}  // namespace mcpfan::detail

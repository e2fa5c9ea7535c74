// GET /.well-known/oauth-protected-resource (RFC 9728): where MCP clients learn which
// authorization server issues tokens for this server (docs/security.md "OAuth"). With
// --oauth-issuer mcpfan serves its own document, also in front of an upstream that serves one
// (mcpfan validates the tokens, so its issuer is the one clients must use). Without it, in
// --upstream mode, the upstream's OAuth documents are passed through unchanged: the upstream
// then judges the tokens of what is forwarded, and mcpfan's own listens need their own auth.
#include <http_parser.h>

#include "http/exchange.h"
#include "http/routes.h"
#include "http/upstream_request.h"
#include "mcp/messages.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {
constexpr std::string_view kResourceMetadata = "/.well-known/oauth-protected-resource";
}  // namespace

bool is_oauth_path(std::string_view path) noexcept {
  return path.starts_with("/.well-known/oauth-") || path == "/.well-known/openid-configuration";
}

void route_oauth_metadata(Exchange& c, HttpRequest& req, std::string_view path) {
  LoopContext& w = c.context();
  const oauth::Agent* agent = w.clients().oauth();
  auto method = static_cast<http_method>(req.method);
  if (!agent) {
    if (proxy::UpstreamPool* pool = w.upstream()) {
      proxy::UpstreamTarget target = pool->target();
      target.path = std::string(path);  // the upstream's own origin, this path (upstream_request adds the query)
      w.stats().proxied_requests.fetch_add(1, std::memory_order_relaxed);
      c.forward(*pool, upstream_request(req, target), {}, {}, nullptr);
      return;
    }
    c.respond(404, "application/json",
              json_error_body(std::string(path) + ": this server has no OAuth configuration (--oauth-issuer)"));
    return;
  }
  // The resource's document, at the bare path and at the path form with the resource's path
  // (RFC 9728 §3.1: /.well-known/oauth-protected-resource/mcp for https://host/mcp).
  bool ours =
      path == kResourceMetadata || (path.starts_with(kResourceMetadata) && agent->metadata_url().ends_with(path));
  if (!ours) {
    c.respond(404, "application/json",
              json_error_body(std::string(path) + ": not served here; the authorization server's metadata is at " +
                              agent->issuer()));
    return;
  }
  if (method != HTTP_GET && method != HTTP_HEAD) {
    c.respond(405, "application/json", json_error_body("method not allowed; use GET"), {{"Allow", "GET, HEAD"}});
    return;
  }
  // Public and the same for everyone: browsers' MCP clients fetch it cross-origin.
  c.respond(200, "application/json", agent->resource_metadata(),
            {{"Cache-Control", "max-age=300"}, {"Access-Control-Allow-Origin", "*"}});
}

}  // namespace mcpfan::detail

#include "http/router.h"

#include "http/exchange.h"
#include "http/request_checks.h"
#include "http/routes.h"
#include "mcp/messages.h"
#include "mcp/publishers.h"
#include "server/metrics.h"
#include "server/process_stats.h"
#include "server/loop_context.h"
#include "status/status.h"

namespace mcpfan::detail {

// Tenant names are in /metrics: with auth configured, only this host or a key for any
// tenant may read them.
bool may_read_metrics(Exchange& c, const HttpRequest& req) {
  LoopContext& w = c.context();
  const Publishers& pub = w.publishers();
  std::shared_ptr<const PublisherPolicy> policy = pub.policy.load();
  bool auth_on = w.clients().auth_enabled() || policy->keys.enabled();
  if (!auth_on || c.peer_is_loopback()) return true;
  auto grant = policy->keys.lookup_bearer(req.authorization);
  return grant && grant->any_tenant;
}

namespace {

// With --publish-listen: a path on the listener that does not serve it. Answers 404 and returns true.
bool wrong_listener(Exchange& c, std::string_view path) {
  const ServerConfig& cfg = c.context().config();
  if (cfg.listen.publish_host.empty() || is_health_path(path)) return false;
  bool operator_path = is_operator_path(path);
  if (operator_path == c.on_operator_listener()) return false;
  std::string p(path);
  c.respond(
      404, "application/json",
      json_error_body(operator_path ? p + " is served on the operator listener (--publish-listen), not on this one"
                                    : p + " is not served on the operator listener (--publish-listen): it serves "
                                          "/v1/publish, /metrics, /status, /livez, /readyz and /healthz; MCP clients "
                                          "use the public listener"));
  return true;
}

}  // namespace

bool is_operator_path(std::string_view path) noexcept {
  return path == "/v1/publish" || path == "/metrics" || is_status_path(path);
}

void route_request(Exchange& c, HttpRequest& req) {
  std::string_view url = req.url;
  std::string_view path = url.substr(0, url.find('?'));
  auto method = static_cast<http_method>(req.method);
  const ServerConfig& cfg = c.context().config();
  if (!host_allowed(cfg, req.host, c.on_operator_listener() ? cfg.listen.publish_host : cfg.listen.host)) {
    c.respond(403, "application/json",
              json_error_body("Host " + req.host + " is not allowed (DNS-rebinding protection)"));
    return;
  }
  if (!origin_allowed(c.context().config(), req.origin)) {
    c.respond(403, "application/json", json_error_body("Origin " + req.origin + " is not allowed"));
    return;
  }
  auto only = [&](http_method m, const char* allow) {
    if (method == m) return true;
    c.respond(405, "application/json", json_error_body(std::string("method not allowed; use ") + allow),
              {{"Allow", allow}});
    return false;
  };
  if (wrong_listener(c, path)) return;
  if (path == "/mcp") {
    if (c.context().upstream()) handle_mcp_proxied(c, req);
    else if (method == HTTP_POST) handle_mcp_post(c, req);
    else if (method == HTTP_GET) handle_mcp_get(c, req);
    else if (method == HTTP_DELETE) handle_mcp_delete(c, req);
    else only(HTTP_POST, "POST, GET, DELETE");
  } else if (path == "/v1/publish") {
    if (only(HTTP_POST, "POST")) handle_publish(c, req);
  } else if (is_health_path(path)) {
    route_health(c, req, path);  // routes_health.cc
  } else if (path == "/metrics") {
    if (!only(HTTP_GET, "GET")) return;
    if (!may_read_metrics(c, req)) {
      c.respond(403, "application/json",
                json_error_body("/metrics is served to loopback peers and to publisher keys for \"*\""));
      return;
    }
    StatsSnapshot s = c.context().stats_snapshot();
    s.process = read_process_stats();  // GET /metrics only: a host's collect_metrics() has its own
    c.respond(200, "text/plain; version=0.0.4", render_prometheus(s));
  } else if (is_status_path(path)) {
    route_status(c, req, path);
  } else if (is_oauth_path(path)) {
    route_oauth_metadata(c, req, path);  // routes_oauth.cc
  } else {
    c.respond(404, "application/json", json_error_body("no such path: " + std::string(path)));
  }
}

}  // namespace mcpfan::detail

// GET /livez, /readyz and /healthz (docs/operations.md "Health checks"): what an orchestrator and a load
// balancer ask, answered from one StatsSnapshot. Served on both listeners (router.h).
//
//  - /livez: this process serves (its loop answered). 200 whatever the backplane or the
//    upstream do: local delivery goes on without them, and a restart would not bring them back.
//  - /readyz: should this node get new clients. 503 until start() has finished, once
//    draining began (SIGTERM with --drain-delay-ms, or stop()), and, with --readyz-backplane
//    require, while the NATS backplane is disconnected.
//  - /healthz: the detail as JSON; its status is what it always was (503 while the
//    backplane is disconnected), plus 503 while starting or draining.
#include <cstdio>
#include <string>

#include "http/exchange.h"
#include <http_parser.h>
#include "http/router.h"
#include "mcp/messages.h"
#include "mcpfan/json_text.h"
#include "server/stats_snapshot.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {

struct Readiness {
  bool ready;
  std::string_view reason;  // "ready", or why not
};

Readiness readiness(const StatsSnapshot& s, const ServerConfig& cfg) {
  if (!s.serving) return {false, "starting"};
  if (s.draining) return {false, "draining"};
  if (cfg.readyz_backplane == "require" && s.backplane && !s.backplane->health.connected) {
    return {false, "backplane disconnected"};
  }
  // Without the issuer's keys every token would be refused: new clients go to a node that has them.
  if (s.oauth && !s.oauth->keys_loaded) return {false, "oauth keys not loaded"};
  return {true, "ready"};
}

void append_number(std::string& out, double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  out += buf;
}

std::string healthz_body(const StatsSnapshot& s, const ServerConfig& cfg, const Readiness& r, std::string_view status) {
  std::string b = R"({"status":)";
  append_json_string(b, status);
  b += R"(,"live":true,"ready":)";
  b += r.ready ? "true" : "false";
  b += R"(,"reason":)";
  append_json_string(b, r.reason);
  b += R"(,"draining":)";
  b += s.draining ? "true" : "false";
  b += R"(,"backplane":)";
  if (s.backplane) {
    const BackplaneHealth& bp = s.backplane->health;
    b += R"({"connected":)";
    b += bp.connected ? "true" : "false";
    b += R"(,"queued":)" + std::to_string(bp.queued);
    b += R"(,"lag_seconds":)";
    append_number(b, bp.lag_seconds);
    b += R"(,"refused":)" + std::to_string(bp.refused);
    b += R"(,"blind_seconds":)";
    append_number(b, bp.blind_seconds);
    b += R"(,"peers":)" + std::to_string(bp.peers);
    b += R"(,"peers_silent":)" + std::to_string(bp.peers_silent);
    b += R"(,"readyz":)";
    append_json_string(b, cfg.readyz_backplane);
    b += '}';
  } else {
    b += "null";
  }
  b += R"(,"upstream":)";
  if (s.upstream) {
    const StatsSnapshot::Upstream& u = *s.upstream;
    b += R"({"url":)";
    append_json_string(b, cfg.upstream.url);
    b += R"(,"requests":)" + std::to_string(u.requests);
    b += R"(,"failures":)" + std::to_string(u.failures);
    b += R"(,"connects":)" + std::to_string(u.connects);
    b += R"(,"resolutions":)" + std::to_string(u.resolutions);
    b += R"(,"resolve_failures":)" + std::to_string(u.resolve_failures);
    b += '}';
  } else {
    b += "null";
  }
  b += R"(,"oauth":)";
  if (s.oauth) {
    b += R"({"issuer":)";
    append_json_string(b, cfg.oauth.issuer);
    b += R"(,"keys_loaded":)";
    b += s.oauth->keys_loaded ? "true" : "false";
    b += R"(,"keys":)" + std::to_string(s.oauth->keys);
    b += R"(,"last_error":)";
    append_json_string(b, s.oauth->last_error);
    b += '}';
  } else {
    b += "null";
  }
  b += "}\n";
  return b;
}

// ", blind for 12.3 s": how long a disconnected backplane has kept other nodes' notifications from this node.
std::string blind_for(const StatsSnapshot& s, const Readiness& r) {
  if (r.reason != "backplane disconnected" || !s.backplane) return {};
  std::string out = ", blind for ";
  append_number(out, s.backplane->health.blind_seconds);
  out += " s";
  return out;
}

}  // namespace

bool is_health_path(std::string_view path) noexcept {
  return path == "/livez" || path == "/readyz" || path == "/healthz";
}

void route_health(Exchange& c, const HttpRequest& req, std::string_view path) {
  if (static_cast<http_method>(req.method) != HTTP_GET) {
    c.respond(405, "application/json", json_error_body("method not allowed; use GET"), {{"Allow", "GET"}});
    return;
  }
  if (path == "/livez") {
    c.respond(200, "text/plain", "ok\n");
    return;
  }
  const ServerConfig& cfg = c.context().config();
  const StatsSnapshot s = c.context().stats_snapshot();
  const Readiness r = readiness(s, cfg);
  if (path == "/readyz") {
    if (r.ready) c.respond(200, "text/plain", "ready\n");
    else c.respond(503, "text/plain", "not ready: " + std::string(r.reason) + blind_for(s, r) + "\n");
    return;
  }
  // /healthz: 503 for a disconnected backplane whatever --readyz-backplane says, as it always
  // was; for a load balancer's decision, /readyz is the one to ask.
  const bool backplane_down = s.backplane && !s.backplane->health.connected;
  std::string_view status = !r.ready && r.reason != "backplane disconnected" ? r.reason
                            : backplane_down ? std::string_view("backplane disconnected")
                                             : std::string_view("ok");
  c.respond(status == "ok" ? 200 : 503, "application/json", healthz_body(s, cfg, r, status));
}

}  // namespace mcpfan::detail

#pragma once
// The HTTP routes of mcpfan: /mcp (MCP Streamable HTTP, revision 2026-07-28 and its draft),
// /v1/publish, /livez, /readyz, /healthz (routes_health.cc), /metrics, /status (status/status.h). Loop-affine: called
// from a connection's parser callback.
//
// With --publish-listen there are two listeners: the operator paths (is_operator_path) are
// served only on the operator listener, /mcp only on the public one, the health paths
// (is_health_path) on both; a
// path on the wrong listener gets 404 naming the right one.
#include <string>
#include <string_view>

namespace mcpfan::detail {

class Exchange;
struct HttpRequest;

void route_request(Exchange& conn, HttpRequest& req);
/**
 * Who may read /metrics and /status (tenant names are in them): anyone without auth; with
 * client or publisher auth configured, loopback peers and publisher keys for any tenant ("*").
 */
[[nodiscard]] bool may_read_metrics(Exchange& c, const HttpRequest& req);

/** /livez, /readyz, /healthz: served on every listener, to anyone (they name no tenant). */
[[nodiscard]] bool is_health_path(std::string_view path) noexcept;
/** Answers a health path (routes_health.cc). */
void route_health(Exchange& c, const HttpRequest& req, std::string_view path);

/** The paths for operators and backends, not MCP clients: /v1/publish, /metrics, /status(.json). A new one joins here.
 */
[[nodiscard]] bool is_operator_path(std::string_view path) noexcept;

}  // namespace mcpfan::detail

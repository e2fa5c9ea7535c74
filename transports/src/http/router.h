#pragma once
// The HTTP routes of mcpfan: /mcp (MCP Streamable HTTP, revision 2026-07-28 and its draft),
// /v1/publish, /healthz, /metrics, /status (status/status.h). Loop-affine: called from a
// connection's parser callback.
//
// With --publish-listen there are two listeners: the operator paths (is_operator_path) are
// served only on the operator listener, /mcp only on the public one, /healthz on both; a
// path on the wrong listener gets 404 naming the right one.
#include <string>
#include <string_view>

namespace mcpfan::detail {

class HttpConn;
struct HttpRequest;

void route_request(HttpConn& conn, HttpRequest& req);
/**
 * Who may read /metrics and /status (tenant names are in them): anyone without auth; with
 * client or publisher auth configured, loopback peers and publisher keys for any tenant ("*").
 */
[[nodiscard]] bool may_read_metrics(HttpConn& c, const HttpRequest& req);

/** The paths for operators and backends, not MCP clients: /v1/publish, /metrics, /status(.json). A new one joins here. */
[[nodiscard]] bool is_operator_path(std::string_view path) noexcept;

}  // namespace mcpfan::detail

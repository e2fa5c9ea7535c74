#pragma once
// The HTTP routes of mcpfan: /mcp (MCP Streamable HTTP, revision 2026-07-28 and its draft),
// /v1/publish, /healthz, /metrics. Loop-affine: called from a connection's parser callback.
#include <string>
#include <string_view>

namespace mcpfan::detail {

class HttpConn;
struct HttpRequest;

void route_request(HttpConn& conn, HttpRequest& req);

}  // namespace mcpfan::detail

#pragma once
// The HTTP routes of mcpfan: /mcp (MCP Streamable HTTP, revision 2026-07-28 and its draft),
// /v1/publish, /healthz, /metrics. Loop-affine: called from a connection's parser callback.
#include <string>
#include <string_view>

namespace mcpfan::detail {

class HttpConn;
struct HttpRequest;

void route_request(HttpConn& conn, HttpRequest& req);

/** One SSE event carrying one JSON-RPC message. */
[[nodiscard]] std::string sse_event(std::string_view json);
/** The final result of a listen ended by the server. */
[[nodiscard]] std::string listen_complete_result(std::string_view id);

}  // namespace mcpfan::detail

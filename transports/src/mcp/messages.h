#pragma once
// MCP messages mcpfan writes, shared by the HTTP and stdio transports. The protocol's own
// messages (versions, discover and initialize results, listen acknowledgements and final
// results) are the engine's public mcpfan/mcp.h; what is left here is transport framing.
#include <string>
#include <string_view>

#include "mcpfan/mcp.h"

namespace mcpfan::detail {

using mcp::discover_result;
using mcp::initialize_result;
using mcp::is_2025_version;
using mcp::is_2026_version;
using mcp::kDraft2026;
using mcp::kRev2026;
using mcp::kServerVersion;
using mcp::listen_complete_result;
using mcp::ListenPlan;
using mcp::negotiate_2025;
using mcp::plan_listen;
using mcp::unsupported_version_data;

/** `{"error":"<message>"}`: the body of a non-JSON-RPC error answer. */
[[nodiscard]] std::string json_error_body(std::string_view message);
/** One SSE event carrying one JSON-RPC message. */
[[nodiscard]] std::string sse_event(std::string_view json);

}  // namespace mcpfan::detail

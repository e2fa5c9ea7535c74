#pragma once
// MCP messages mcpfan writes, shared by the HTTP and stdio transports: protocol versions,
// server/discover and initialize results, listen acknowledgements and final results.
#include <string>
#include <string_view>

#include "mcpfan/rpc_decoder.h"
#include "mcpfan/shard.h"

namespace mcpfan::detail {

inline constexpr std::string_view kRev2026 = "2026-07-28";
inline constexpr std::string_view kDraft2026 = "DRAFT-2026-v1";
inline constexpr std::string_view kServerVersion = "0.1.0";

[[nodiscard]] bool is_2026_version(std::string_view v) noexcept;
/** The 2025-era version to answer `initialize` with: the client's if served, else the latest. */
[[nodiscard]] std::string_view negotiate_2025(std::string_view requested) noexcept;
[[nodiscard]] bool is_2025_version(std::string_view v) noexcept;

/** `error.data` of -32022: {"supported":[...],"requested":"<v>"}. */
[[nodiscard]] std::string unsupported_version_data(std::string_view requested);
[[nodiscard]] std::string discover_result();
[[nodiscard]] std::string initialize_result(std::string_view version);

/** A listen request turned into what the shard needs and what the client is told. */
struct ListenPlan {
  Filter filter;
  std::string ack;  // the notifications/subscriptions/acknowledged JSON-RPC message
};
[[nodiscard]] ListenPlan plan_listen(ListenSpec spec, TenantId tenant, std::string_view id);
/** The final result of a listen ended by the server. */
[[nodiscard]] std::string listen_complete_result(std::string_view id);
/** `{"error":"<message>"}`: the body of a non-JSON-RPC error answer. */
[[nodiscard]] std::string json_error_body(std::string_view message);
/** One SSE event carrying one JSON-RPC message. */
[[nodiscard]] std::string sse_event(std::string_view json);

}  // namespace mcpfan::detail

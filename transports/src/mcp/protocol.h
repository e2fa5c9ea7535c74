#pragma once
// Which requests each MCP revision has, as mcpfan serves them on every transport: the
// per-request fields 2026-07-28 requires, the 2025-era methods it removed, and the list
// methods a hub answers. Pure functions; thread-safe.
#include <optional>
#include <string>
#include <string_view>

#include "mcpfan/result.h"
#include "mcpfan/rpc_decoder.h"

namespace mcpfan::detail {

/**
 * A 2026-07-28 request that lacks a field every request of that revision must carry
 * (`params._meta` io.modelcontextprotocol/clientCapabilities): malformed, -32602.
 * The draft (DRAFT-2026-v1) predates the rule and is not held to it.
 */
[[nodiscard]] std::optional<Error> missing_request_fields(const RpcRequest& r);

/** initialize, ping, logging/setLevel, resources/subscribe and resources/unsubscribe: 2025-era only. */
[[nodiscard]] bool removed_in_2026(std::string_view method) noexcept;

/**
 * The answer to a list method (tools/list, prompts/list, resources/list,
 * resources/templates/list): a hub holds no tools, prompts or resources of its own, so the
 * list is empty. It still advertises their `listChanged` (and resource `subscribe`), which
 * it delivers for the servers that publish through it; the capabilities and the handlers
 * agree. Nullopt for any other method. `rev2026` adds the result's resultType.
 */
[[nodiscard]] std::optional<std::string> hub_list_result(std::string_view method, bool rev2026);

/** resources/read: a hub holds no resource (-32002, MCP's "resource not found"). */
inline constexpr int kResourceNotFound = -32002;

}  // namespace mcpfan::detail

#pragma once
// The per-request fields the 2026-07-28 revision requires, on every transport (which
// methods each revision has: mcp/methods.h). Pure functions; thread-safe.
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

}  // namespace mcpfan::detail

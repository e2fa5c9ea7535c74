#include "mcp/protocol.h"

#include "mcp/messages.h"

namespace mcpfan::detail {

std::optional<Error> missing_request_fields(const RpcRequest& r) {
  if (!r.has_id || r.meta_version != kRev2026 || r.has_client_capabilities) return std::nullopt;
  return Error{rpc_code::kInvalidParams, "missing params._meta " + std::string(kClientCapabilitiesKey) +
                                              " (required on every 2026-07-28 request; {} declares none)"};
}

}  // namespace mcpfan::detail

#include "mcp/protocol.h"

#include "mcp/messages.h"

namespace mcpfan::detail {

std::optional<Error> missing_request_fields(const RpcRequest& r) {
  if (!r.has_id || r.meta_version != kRev2026 || r.has_client_capabilities) return std::nullopt;
  return Error{rpc_code::kInvalidParams, "missing params._meta " + std::string(kClientCapabilitiesKey) +
                                              " (required on every 2026-07-28 request; {} declares none)"};
}

bool removed_in_2026(std::string_view m) noexcept {
  return m == "initialize" || m == "ping" || m == "logging/setLevel" || m == "resources/subscribe" ||
         m == "resources/unsubscribe";
}

std::optional<std::string> hub_list_result(std::string_view method, bool rev2026) {
  std::string_view key;
  if (method == "tools/list") key = "tools";
  else if (method == "prompts/list") key = "prompts";
  else if (method == "resources/list") key = "resources";
  else if (method == "resources/templates/list") key = "resourceTemplates";
  else return std::nullopt;
  std::string r = "{\"";
  r += key;
  r += "\":[]";
  // 2026-07-28 caching hints, required on complete list results: the same for every caller,
  // and not to be reused (a hub's lists are empty; the servers behind it own the real ones).
  if (rev2026) r += R"(,"resultType":"complete","ttlMs":0,"cacheScope":"public")";
  r += '}';
  return r;
}

}  // namespace mcpfan::detail

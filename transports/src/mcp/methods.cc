#include "mcp/methods.h"

#include "mcp/messages.h"
#include "mcpfan/mcp.h"

namespace mcpfan::detail {

const McpMethod* find_mcp_method(std::string_view name) noexcept {
  for (const McpMethod& m : kMcpMethods) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool removed_in_2026(std::string_view method) noexcept {
  const McpMethod* m = find_mcp_method(method);
  return m && m->in(Era::Session2025) && !m->in(Era::Rev2026);
}

namespace {

// A hub holds no tools, prompts or resources of its own, so each list is empty. It still
// advertises their listChanged (and resource subscribe), which it delivers for the servers
// that publish through it: the capabilities and the handlers agree.
std::string empty_list(std::string_view key, Era era) {
  std::string r = "{\"";
  r += key;
  r += "\":[]";
  // 2026-07-28 caching hints, required on complete list results: the same for every caller,
  // and not to be reused (a hub's lists are empty; the servers behind it own the real ones).
  if (era == Era::Rev2026) r += R"(,"resultType":"complete","ttlMs":0,"cacheScope":"public")";
  r += '}';
  return r;
}

}  // namespace

std::optional<McpReply> stateless_reply(const McpMethod& m, Era era) {
  switch (m.role) {
    case MethodRole::Discover: return McpReply{discover_result(), std::nullopt};
    case MethodRole::Ping: return McpReply{"{}", std::nullopt};
    case MethodRole::List: return McpReply{empty_list(m.list_key, era), std::nullopt};
    case MethodRole::ReadResource:
      return McpReply{std::nullopt, Error{kResourceNotFound,
                                          "resource not found: mcpfan holds no resources (it relays their changes)"}};
    case MethodRole::Listen:
    case MethodRole::Initialize:
    case MethodRole::Subscribe:
    case MethodRole::Unsubscribe: break;
  }
  return std::nullopt;
}

Error method_not_found(std::string_view method, std::uint8_t eras, std::string_view version) {
  std::string msg = "method not found: ";
  msg += method;
  const McpMethod* m = find_mcp_method(method);
  if (m && (m->eras & eras) == 0) {
    if (eras == kOnly2026) {
      msg += " (a 2025-era method: not part of ";
      msg += version.empty() ? std::string_view(kRev2026) : version;
      msg += ')';
    } else {
      msg += " (a 2026-07-28 method: send it without a session)";
    }
  }
  msg += " (mcpfan serves ";
  bool lists = false;
  for (const McpMethod& k : kMcpMethods) {
    if ((k.eras & eras) == 0 || k.role == MethodRole::ReadResource) continue;
    if (k.role == MethodRole::List) {
      lists = true;
      continue;
    }
    msg += k.name;
    msg += ", ";
  }
  msg.resize(msg.size() - 2);  // every era serves at least one method by name
  if (lists) msg += " and the empty tools, prompts and resources lists";
  msg += eras == kOnly2025 ? " in a session)" : ")";
  return Error{rpc_code::kMethodNotFound, std::move(msg)};
}

}  // namespace mcpfan::detail

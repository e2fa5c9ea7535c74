#include "mcpfan/kind.h"

namespace mcpfan {

std::string_view method_name(Kind kind) noexcept {
  switch (kind) {
    case Kind::ResourceUpdated: return "notifications/resources/updated";
    case Kind::ResourcesListChanged: return "notifications/resources/list_changed";
    case Kind::ToolsListChanged: return "notifications/tools/list_changed";
    case Kind::PromptsListChanged: return "notifications/prompts/list_changed";
  }
  return {};
}

std::optional<Kind> kind_from_method(std::string_view method) noexcept {
  for (int i = 0; i < kKindCount; ++i) {
    auto k = static_cast<Kind>(i);
    if (method == method_name(k)) return k;
  }
  return std::nullopt;
}

}  // namespace mcpfan

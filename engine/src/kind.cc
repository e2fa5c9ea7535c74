#include "mcpfan/kind.h"

#include <string>

namespace mcpfan {

static_assert([] {
  for (unsigned i = 0; i < kKinds.size(); ++i) {
    if (static_cast<unsigned>(kKinds[i].kind) != i) return false;
  }
  return true;
}(), "kKinds must list the kinds in enum order");

std::string_view method_name(Kind kind) noexcept { return kind_info(kind).method; }

std::optional<Kind> kind_from_method(std::string_view method) noexcept {
  for (const KindInfo& k : kKinds) {
    if (method == k.method) return k.kind;
  }
  return std::nullopt;
}

std::optional<Kind> kind_from_listen_flag(std::string_view flag) noexcept {
  for (const KindInfo& k : kKinds) {
    if (!k.listen_flag.empty() && flag == k.listen_flag) return k.kind;
  }
  return std::nullopt;
}

std::string_view kind_capabilities_json() {
  // Built once from the table: the rows of one capability object are adjacent.
  static const std::string json = [] {
    std::string out = "{";
    std::string_view open;
    for (const KindInfo& k : kKinds) {
      if (k.capability_object != open) {
        if (!open.empty()) out += "},";
        out += '"';
        out += k.capability_object;
        out += "\":{";
        open = k.capability_object;
      } else {
        out += ',';
      }
      out += '"';
      out += k.capability_property;
      out += "\":true";
    }
    if (!open.empty()) out += '}';
    out += '}';
    return out;
  }();
  return json;
}

}  // namespace mcpfan

#include "mcpfan/kind.h"

#include <string>

namespace mcpfan {

static_assert([] {
  for (unsigned i = 0; i < kKinds.size(); ++i) {
    if (static_cast<unsigned>(kKinds[i].kind) != i) return false;
  }
  return true;
}(), "kKinds must list the kinds in enum order");
static_assert([] {
  for (const KindInfo& k : kKinds) {
    if (k.keyed() == k.listen_keys.empty() || (k.keyed() && !k.listen_flag.empty())) return false;
    if (k.prefix_keys && !k.keyed()) return false;
  }
  return true;
}(), "a kind is asked for by a flag or by a key list, never both");

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

std::optional<Kind> kind_from_listen_keys(std::string_view name) noexcept {
  for (const KindInfo& k : kKinds) {
    if (!k.listen_keys.empty() && name == k.listen_keys) return k.kind;
  }
  return std::nullopt;
}

namespace {
std::string capabilities_json(CapabilityEra era) {
  // The rows of one capability object are adjacent.
  std::string out = "{";
  std::string_view open;
  for (const KindInfo& k : kKinds) {
    if (era == CapabilityEra::Rev2025 && !k.in_2025_sessions) continue;
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
    out += "\":";
    out += k.capability_value;
  }
  if (!open.empty()) out += '}';
  out += '}';
  return out;
}
}  // namespace

std::string_view kind_capabilities_json(CapabilityEra era) {
  // Built once per era from the table.
  static const std::string rev2026 = capabilities_json(CapabilityEra::Rev2026);
  static const std::string rev2025 = capabilities_json(CapabilityEra::Rev2025);
  return era == CapabilityEra::Rev2025 ? rev2025 : rev2026;
}

}  // namespace mcpfan

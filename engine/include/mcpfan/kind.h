#pragma once
/**
 * The four MCP change notifications mcpfan fans out, and their method names.
 * Plain value types; thread-safe.
 */
#include <cstdint>
#include <optional>
#include <string_view>

namespace mcpfan {

enum class Kind : std::uint8_t {
  ResourceUpdated = 0,       // notifications/resources/updated, keyed by URI
  ResourcesListChanged = 1,  // notifications/resources/list_changed
  ToolsListChanged = 2,      // notifications/tools/list_changed
  PromptsListChanged = 3,    // notifications/prompts/list_changed
};
inline constexpr int kKindCount = 4;

/** The JSON-RPC method name of a kind; a view of static storage. */
[[nodiscard]] std::string_view method_name(Kind kind) noexcept;

/** The kind for a notification method name, or nullopt for any other method. */
[[nodiscard]] std::optional<Kind> kind_from_method(std::string_view method) noexcept;

/** Bit for a kind in a KindMask. */
[[nodiscard]] constexpr std::uint8_t kind_bit(Kind k) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(k));
}

}  // namespace mcpfan

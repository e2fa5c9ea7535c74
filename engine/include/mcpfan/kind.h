#pragma once
/**
 * The MCP change notifications mcpfan fans out, and everything mcpfan knows of each, in one
 * table (kKinds): its method, the capability that announces it, its flag in a listen, its
 * token in the NATS subject contract. A new kind is a new enum value and a new row; the
 * decoders, the acknowledgement, the capabilities, the session filter, the re-read hints
 * and the subjects read the table (docs/design.md "The rooms of transports/").
 * Plain value types and constants; thread-safe.
 */
#include <array>
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

struct KindInfo {
  Kind kind;
  std::string_view method;  // the notification's JSON-RPC method
  // The server capability that announces it: `capability_object`.`capability_property` = true.
  std::string_view capability_object;
  std::string_view capability_property;
  // Its boolean in subscriptions/listen's params.notifications; empty: asked for by URI
  // (resourceSubscriptions), not by a flag.
  std::string_view listen_flag;
  // Its token in the NATS list subjects (`<prefix>.<tenant>.l.<token>`); empty: keyed by URI.
  std::string_view subject_token;
  bool keyed_by_uri;  // delivered per resource URI, not to every listener of the kind
};

/** One row per kind, in enum order (kKinds[k] describes Kind k). */
inline constexpr std::array<KindInfo, kKindCount> kKinds = {{
    {Kind::ResourceUpdated, "notifications/resources/updated", "resources", "subscribe", "", "", true},
    {Kind::ResourcesListChanged, "notifications/resources/list_changed", "resources", "listChanged",
     "resourcesListChanged", "resources", false},
    {Kind::ToolsListChanged, "notifications/tools/list_changed", "tools", "listChanged", "toolsListChanged", "tools",
     false},
    {Kind::PromptsListChanged, "notifications/prompts/list_changed", "prompts", "listChanged", "promptsListChanged",
     "prompts", false},
}};

[[nodiscard]] constexpr const KindInfo& kind_info(Kind k) noexcept { return kKinds[static_cast<unsigned>(k)]; }

/** The JSON-RPC method name of a kind; a view of static storage. */
[[nodiscard]] std::string_view method_name(Kind kind) noexcept;

/** The kind for a notification method name, or nullopt for any other method. */
[[nodiscard]] std::optional<Kind> kind_from_method(std::string_view method) noexcept;

/** Bit for a kind in a KindMask. */
[[nodiscard]] constexpr std::uint8_t kind_bit(Kind k) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(k));
}

/** The kind whose listen flag is `flag` ("toolsListChanged"), or nullopt. */
[[nodiscard]] std::optional<Kind> kind_from_listen_flag(std::string_view flag) noexcept;

/**
 * The server capabilities the kinds announce, as a JSON object:
 * {"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},...}.
 */
[[nodiscard]] std::string_view kind_capabilities_json();

}  // namespace mcpfan

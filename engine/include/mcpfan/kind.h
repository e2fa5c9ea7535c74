#pragma once
/**
 * The MCP change notifications mcpfan fans out, and everything mcpfan knows of each, in one
 * table (kKinds): its method, the capability that announces it, how a listen asks for it (a
 * flag, or a list of keys), the params member that holds its key, its token in the NATS
 * subject contract. A new kind is a new enum value and a new row; the decoders, the index,
 * the acknowledgement, the capabilities, the session filter, the re-read hints and the
 * subjects read the table (docs/design.md "The rooms of transports/").
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
  TaskStatus = 4,            // notifications/tasks (the Tasks extension, SEP-2663), keyed by task id
};
inline constexpr int kKindCount = 5;

struct KindInfo {
  Kind kind;
  std::string_view method;  // the notification's JSON-RPC method
  // The server capability that announces it: `capability_object`.`capability_property` =
  // `capability_value` (JSON text).
  std::string_view capability_object;
  std::string_view capability_property;
  std::string_view capability_value;
  // Its boolean in subscriptions/listen's params.notifications; empty: asked for by key, not by a flag.
  std::string_view listen_flag;
  // A keyed kind: the array of keys in params.notifications that asks for it
  // ("resourceSubscriptions"), and the params member of a published notification that holds
  // the key ("uri"). Empty for a kind delivered to every listener that asked for it.
  std::string_view listen_keys;
  std::string_view key_member;
  // A key ending in '/' also matches every key it starts (resource URIs; design §4).
  bool prefix_keys;
  // Its token in the NATS list subjects (`<prefix>.<tenant>.l.<token>`); empty: a keyed kind,
  // whose subjects carry the key (nats/subjects.h).
  std::string_view subject_token;
  // Heard by a 2025-era session (resources/subscribe and the list changes); the task kind is
  // a 2026-07-28 extension: a session has no way to ask for a task.
  bool in_2025_sessions;

  [[nodiscard]] constexpr bool keyed() const noexcept { return !key_member.empty(); }
};

/** The Tasks extension's identifier (capabilities, clientCapabilities.extensions). */
inline constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

/** One row per kind, in enum order (kKinds[k] describes Kind k). */
inline constexpr std::array<KindInfo, kKindCount> kKinds = {{
    {Kind::ResourceUpdated, "notifications/resources/updated", "resources", "subscribe", "true", "",
     "resourceSubscriptions", "uri", true, "", true},
    {Kind::ResourcesListChanged, "notifications/resources/list_changed", "resources", "listChanged", "true",
     "resourcesListChanged", "", "", false, "resources", true},
    {Kind::ToolsListChanged, "notifications/tools/list_changed", "tools", "listChanged", "true", "toolsListChanged", "",
     "", false, "tools", true},
    {Kind::PromptsListChanged, "notifications/prompts/list_changed", "prompts", "listChanged", "true",
     "promptsListChanged", "", "", false, "prompts", true},
    {Kind::TaskStatus, "notifications/tasks", "extensions", kTasksExtension, "{}", "", "taskIds", "taskId", false, "",
     false},
}};

[[nodiscard]] constexpr const KindInfo& kind_info(Kind k) noexcept { return kKinds[static_cast<unsigned>(k)]; }

/** A key of `kind` that also matches the longer keys it starts: a resource URI ending in '/'. */
[[nodiscard]] constexpr bool is_prefix_key(Kind kind, std::string_view key) noexcept {
  return kind_info(kind).prefix_keys && !key.empty() && key.back() == '/';
}

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
/** The keyed kind whose key list in a listen filter is `name` ("taskIds"), or nullopt. */
[[nodiscard]] std::optional<Kind> kind_from_listen_keys(std::string_view name) noexcept;

/** Which era's capabilities kind_capabilities_json() describes. */
enum class CapabilityEra : std::uint8_t {
  Rev2026,   // server/discover: every kind, the task extension included
  Rev2025,   // initialize: only the kinds a 2025-era session hears
};
/**
 * The server capabilities the kinds announce, as a JSON object:
 * {"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},...,
 * "extensions":{"io.modelcontextprotocol/tasks":{}}}.
 */
[[nodiscard]] std::string_view kind_capabilities_json(CapabilityEra era = CapabilityEra::Rev2026);

}  // namespace mcpfan

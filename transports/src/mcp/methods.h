#pragma once
// The MCP methods mcpfan serves, in one table (docs/design.md "The rooms of transports/"): each
// method's name, the eras that have it, and what it is. Every transport dispatches on this
// table: HTTP's 2026 POSTs and 2025 sessions, and stdio (which speaks both eras on one
// connection). The answers that depend only on the request (discover, ping, the empty
// lists, resources/read) are made here once as a Reply the transport only frames; listens,
// initialize and resource subscriptions keep state and are the transport's (HTTP keeps a
// 2025 session in the registry, a stdio connection is its own session).
//
// Pure functions and constants; thread-safe.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mcpfan/result.h"

namespace mcpfan::detail {

/** Which revisions have a method: 2025-era sessions, and the 2026-07-28 revision (with its draft). */
enum class Era : std::uint8_t { Session2025 = 1, Rev2026 = 2 };

enum class MethodRole : std::uint8_t {
  Discover,      // server/discover
  Listen,        // subscriptions/listen: a stream of notifications (stateful)
  Initialize,    // initialize: opens a 2025 session (stateful)
  Subscribe,     // resources/subscribe (stateful)
  Unsubscribe,   // resources/unsubscribe (stateful)
  Ping,          // ping and logging/setLevel: an empty result
  List,          // tools/list and the like: a hub's lists are empty
  ReadResource,  // resources/read: a hub holds no resource
};

struct McpMethod {
  std::string_view name;
  std::uint8_t eras;           // bits of Era
  MethodRole role;
  std::string_view list_key;  // List: the result's array ("tools")
  [[nodiscard]] constexpr bool in(Era e) const noexcept { return (eras & static_cast<std::uint8_t>(e)) != 0; }
};

inline constexpr std::uint8_t kBothEras =
    static_cast<std::uint8_t>(Era::Session2025) | static_cast<std::uint8_t>(Era::Rev2026);
inline constexpr std::uint8_t kOnly2025 = static_cast<std::uint8_t>(Era::Session2025);
inline constexpr std::uint8_t kOnly2026 = static_cast<std::uint8_t>(Era::Rev2026);

inline constexpr McpMethod kMcpMethods[] = {
    {"server/discover", kOnly2026, MethodRole::Discover, {}},
    {"subscriptions/listen", kOnly2026, MethodRole::Listen, {}},
    {"initialize", kOnly2025, MethodRole::Initialize, {}},
    {"ping", kOnly2025, MethodRole::Ping, {}},
    {"logging/setLevel", kOnly2025, MethodRole::Ping, {}},
    {"resources/subscribe", kOnly2025, MethodRole::Subscribe, {}},
    {"resources/unsubscribe", kOnly2025, MethodRole::Unsubscribe, {}},
    {"tools/list", kBothEras, MethodRole::List, "tools"},
    {"prompts/list", kBothEras, MethodRole::List, "prompts"},
    {"resources/list", kBothEras, MethodRole::List, "resources"},
    {"resources/templates/list", kBothEras, MethodRole::List, "resourceTemplates"},
    {"resources/read", kBothEras, MethodRole::ReadResource, {}},
};

/** The method named `name`, or null for one mcpfan does not serve in any era. */
[[nodiscard]] const McpMethod* find_mcp_method(std::string_view name) noexcept;

/** A method's answer for the transport to frame: a result (JSON text) or a JSON-RPC error. */
struct McpReply {
  std::optional<std::string> result;
  std::optional<Error> error;
};

/**
 * The answer of a method whose answer depends only on the request (Discover, Ping, List,
 * ReadResource) in `era`; nullopt for the stateful ones.
 */
[[nodiscard]] std::optional<McpReply> stateless_reply(const McpMethod& m, Era era);

/**
 * -32601 for `method`, asked for where the `eras` (bits of Era) are served: it names the
 * method, says when it belongs to another era (`version`: the request's revision, for that
 * message), and lists what those eras serve.
 */
[[nodiscard]] Error method_not_found(std::string_view method, std::uint8_t eras, std::string_view version = {});

/** A 2025-era method asked for in a 2026 request (such a request names only its own revision's methods). */
[[nodiscard]] bool removed_in_2026(std::string_view method) noexcept;

/** resources/read: a hub holds no resource (-32002, MCP's "resource not found"). */
inline constexpr int kResourceNotFound = -32002;

}  // namespace mcpfan::detail

#pragma once
// What the front proxy changes in an upstream's answers (docs/protocol.md "Front proxy"): the `capabilities` of an
// `initialize` (2025-era) or `server/discover` (2026-07-28) result gain what mcpfan serves in
// front of the upstream — resource subscriptions and list_changed notifications, and in a
// `server/discover` answer the Tasks extension (task notifications on listens, SEP-2663) — and
// keep everything else the upstream declared. Pure functions; thread-safe.
#include <optional>
#include <string>
#include <string_view>

namespace mcpfan::detail::proxy {

struct MergedAnswer {
  std::string body;              // the answer with its capabilities merged
  std::string protocol_version;  // result.protocolVersion, if the answer had one
  bool merged = false;           // a result with a capabilities object was found
};

/**
 * Merges mcpfan's capabilities into every JSON-RPC result in `body` that has a
 * `capabilities` object: `resources` gains `subscribe` and `listChanged`, existing `tools`
 * and `prompts` gain `listChanged`; with `tasks` (a 2026-07-28 `server/discover` answer, never a
 * 2025-era `initialize`: those sessions hear no task notifications), `extensions` gains
 * `"io.modelcontextprotocol/tasks": {}` unless the upstream declared it (its own entry is kept,
 * and so is every other extension). `body` is a JSON answer, or an SSE answer (text/event-stream)
 * whose events carry JSON-RPC messages; other members, events, ids and comments are kept as
 * sent. An answer that is not valid JSON (or an event whose data is not) is left unchanged.
 */
[[nodiscard]] MergedAnswer merge_capabilities(std::string_view body, bool event_stream, bool tasks);

/** One JSON-RPC message: the merged text, or nullopt when it has no result.capabilities object. */
[[nodiscard]] std::optional<MergedAnswer> merge_message(std::string_view json, bool tasks);

}  // namespace mcpfan::detail::proxy

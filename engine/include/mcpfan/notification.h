#pragma once
/**
 * One accepted notification on its way out of the node that accepted it: to this node's
 * streams (`local`) and, with a backplane, to the other nodes (the routing key and the
 * publish-API object). The debouncer holds these whole, so an update it suppresses is
 * suppressed everywhere and never crosses the backplane.
 *
 * Thread-safety: a value type; `local` is a thread-safe reference.
 */
#include <string>

#include "mcpfan/kind.h"
#include "mcpfan/payload.h"

namespace mcpfan {

struct Notification {
  PayloadRef local;     // encoded for this node's streams; null when its tenant has no clients here
  Kind kind = Kind::ToolsListChanged;
  std::string tenant;   // the tenant's name (other nodes have their own ids); empty: stays here
  std::string uri;      // empty for list_changed
  std::string message;  // encode_publish_message(): {"tenant","method","params"}; empty: stays here

  /** Whether other nodes get it (a backplane decoded it for them). */
  [[nodiscard]] bool forwarded() const noexcept { return !message.empty(); }
};

}  // namespace mcpfan

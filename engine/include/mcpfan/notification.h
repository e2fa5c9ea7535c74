#pragma once
/**
 * One accepted notification on its way out of the node that accepted it: to this node's
 * streams (`local`) and, with a backplane, to the other nodes (the routing key and the
 * publish-API object). The debouncer holds these whole, so an update it suppresses is
 * suppressed everywhere and never crosses the backplane.
 *
 * Thread-safety: a move-only value type; `local` is a thread-safe reference, and `reserved`
 * may be released from any thread.
 */
#include <string>

#include "mcpfan/byte_budget.h"
#include "mcpfan/kind.h"
#include "mcpfan/payload.h"

namespace mcpfan {

struct Notification {
  PayloadRef local;     // encoded for this node's streams; null when its tenant has no clients here
  Kind kind = Kind::ToolsListChanged;
  std::string tenant;   // the tenant's name (other nodes have their own ids); empty: stays here
  std::string uri;      // empty for list_changed
  std::string message;  // encode_publish_message(): {"tenant","method","params"}; empty: stays here
  // The backplane's bound on what waits for other nodes (--nats-outage-buffer-bytes): taken
  // when the publish is admitted (Backplane::can_take), given back when the notification is
  // sent, or is suppressed by the debouncer, or is dropped: whenever it is destroyed. So
  // what the debouncer holds counts against the bound too, and no path can pass it.
  ByteReservation reserved;

  /** Whether other nodes get it (a backplane decoded it for them). */
  [[nodiscard]] bool forwarded() const noexcept { return !message.empty(); }
};

}  // namespace mcpfan

#pragma once
// The receiving side of the backplane's contract (docs/operations.md "What a node accepts from NATS";
// tests/nats/inbound_test.cc, tests/integration/nats_tenant_auth_test.cc): what a node accepts from NATS.
//
// NATS permissions are per subject, so the subject is what an operator can restrict (docs/operations.md
// "Per-tenant NATS permissions": a tenant's backend may publish under `<prefix>.v1.<tenant>.>` only). A
// message is therefore trusted exactly as far as its subject:
//   - A message carries exactly one notification, a publish-API object
//     {"tenant"?, "method", "params"}; an array is dropped (Batch), even of one.
//   - The subject decides the tenant: a body without "tenant" is the subject's tenant's, and
//     a body naming another tenant is dropped (Tenant).
//   - The subject recomputed from the decoded (tenant, kind, URI) must equal the subject the
//     message arrived on, byte for byte (Subject); so a tenant's `~h` hashed token, which the
//     name cannot be read back from, is checked through the body's name, and a URI whose
//     tokens are not the subject's is refused too.
//   - Anything else (not this prefix or version, a tenant token this contract never writes,
//     invalid JSON, an unknown method) is Malformed.
// Every drop is counted by its reason (Backplane::Stats::rejected).
//
// Thread affinity: check_inbound() is reentrant; the PublishDecoder it is given belongs to
// the calling thread (one per nats.c delivery thread). Lifetime: the returned payload is a
// thread-safe reference, independent of `body` and `subject`.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "mcpfan/payload.h"
#include "mcpfan/publish_decoder.h"
#include "mcpfan/task_states.h"
#include "mcpfan/tenants.h"

namespace mcpfan::detail::nats {

/** Why a received message was not delivered (the `reason` label of mcpfan_backplane_rejected_total). */
enum class Reject : std::uint8_t {
  Malformed,      // not one publish-API notification on a subject of this contract
  Batch,          // an array: a message is one notification
  Tenant,         // the body's tenant is not the subject's
  Subject,        // the body's kind or URI gives another subject than the one it arrived on
  ReceiveBudget,  // the node's receive budget (--nats-receive-buffer-bytes) was spent
  InboxFull,      // a shard inbox it was for was full (--shard-inbox-max)
  // This node's own message coming back: no echo is asked of NATS, but a message written to a
  // server that then stalled can be routed to this node's next connection (on another server).
  Own,
};
inline constexpr std::size_t kRejectReasons = 7;
using RejectCounts = std::array<std::uint64_t, kRejectReasons>;

/** The label value of a reason: "malformed", "batch", "tenant", "subject", "receive_budget", "inbox_full", "own". */
[[nodiscard]] std::string_view reject_name(Reject r) noexcept;

/** What check_inbound() found. */
struct [[nodiscard]] Inbound {
  std::optional<Reject> rejected;  // set: drop the message and count it
  PayloadRef payload;              // when accepted: null if its tenant has no clients on this node
  std::optional<TaskState> task;   // when accepted, a notifications/tasks: its state, to keep (clients here or not)
};

/**
 * Applies the rules above to one message. `prefix` is the node's (valid) subject prefix.
 * Allocates only as the decoder does (the payload) plus the recomputed subject.
 */
[[nodiscard]] Inbound check_inbound(PublishDecoder& decoder, std::string_view prefix, std::string_view subject,
                                    std::string_view body, const TenantTable& tenants);

}  // namespace mcpfan::detail::nats

#pragma once
/**
 * The MCP wire messages a server writes, for hosts that embed the engine without mcpfan's
 * transports (and used by those transports, so they are written once): protocol version
 * checks, the `server/discover` and `initialize` results, a listen's acknowledgement and its
 * final result. Requests are read with RpcDecoder (rpc_decoder.h); notifications are encoded
 * by the engine (payload.h).
 *
 * Every function returns owned JSON text (no views into its arguments). `id` arguments are a
 * JSON-RPC id as JSON text, its type kept (`"\"listen:0\""` or `"7"`), as RpcRequest::id
 * holds it. Thread affinity: none; every function is pure and may be called from any thread.
 */
#include <optional>
#include <string>
#include <string_view>

#include "mcpfan/kind.h"
#include "mcpfan/payload.h"
#include "mcpfan/result.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/shard.h"
#include "mcpfan/tenants.h"

namespace mcpfan::mcp {

/** The released 2026 revision, and the draft string some clients still send (both served). */
inline constexpr std::string_view kRev2026 = "2026-07-28";
inline constexpr std::string_view kDraft2026 = "DRAFT-2026-v1";
/** serverInfo.version in discover and initialize results. */
inline constexpr std::string_view kServerVersion = "0.1.0";

/** A 2026-era revision served per request (no session): kRev2026 or kDraft2026. */
[[nodiscard]] bool is_2026_version(std::string_view v) noexcept;
/** A 2025-era (session) revision served: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05. */
[[nodiscard]] bool is_2025_version(std::string_view v) noexcept;
/** The 2025-era version to answer `initialize` with: the client's if served, else the latest. */
[[nodiscard]] std::string_view negotiate_2025(std::string_view requested) noexcept;

/** `error.data` of -32022 (unsupported revision): `{"supported":[...],"requested":"<v>"}`. */
[[nodiscard]] std::string unsupported_version_data(std::string_view requested);
/** The `result` of `server/discover` (capabilities, supportedVersions, serverInfo, caching hints). */
[[nodiscard]] std::string discover_result();
/** The `result` of a 2025-era `initialize` answered with `version` (see negotiate_2025()). */
[[nodiscard]] std::string initialize_result(std::string_view version);

/** A `subscriptions/listen` request turned into what the shard needs and what the client is told. */
struct ListenPlan {
  Filter filter;    // for Shard::subscribe(stream, filter, id)
  std::string ack;  // the whole `notifications/subscriptions/acknowledged` JSON-RPC message, sent first
};
/** Only what will be delivered is acknowledged: true flags and non-empty key lists (URIs, task ids). */
[[nodiscard]] ListenPlan plan_listen(ListenSpec spec, TenantId tenant, std::string_view id);
/**
 * A listen that asks for task notifications (taskIds) from a client whose request did not
 * declare the Tasks extension is refused (SEP-2663): the -32021 error for it, with
 * `data.requiredCapabilities`; nullopt when the listen may go on.
 */
struct CapabilityRefusal {
  Error error;
  std::string data;  // error.data: {"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}
};
[[nodiscard]] std::optional<CapabilityRefusal> check_listen_capabilities(const ListenSpec& spec, bool declares_tasks);
/**
 * The whole JSON-RPC response that ends a listen the server ends (shutdown, drain):
 * `{"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":<id>}}`.
 */
[[nodiscard]] std::string listen_complete_result(std::string_view id);

/**
 * A publisher's notifications, encoded for Hub::publish() (what `POST /v1/publish` makes of
 * `{"method":"notifications/resources/updated","params":{"uri":...}}`): `uri` is plain text,
 * JSON-escaped here. For params or _meta of your own, fill NotificationParts (payload.h).
 */
[[nodiscard]] PayloadRef resource_updated(std::string_view uri, TenantId tenant = kDefaultTenant);
/**
 * `notifications/{tools,prompts,resources}/list_changed`; `kind` must not be a keyed kind
 * (Kind::ResourceUpdated, Kind::TaskStatus). A task notification carries the whole task:
 * decode it with PublishDecoder, which validates it, then Hub::publish(notes, tasks).
 */
[[nodiscard]] PayloadRef list_changed(Kind kind, TenantId tenant = kDefaultTenant);

}  // namespace mcpfan::mcp

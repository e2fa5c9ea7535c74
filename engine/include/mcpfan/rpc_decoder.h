#pragma once
/**
 * Decodes one JSON-RPC request or notification sent by an MCP client (HTTP body or stdio
 * line) into an owned struct, validating what mcpfan acts on.
 *
 * Thread affinity: one decoder per thread (it owns a reusable simdjson parser).
 */
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/kind.h"
#include "mcpfan/result.h"

namespace mcpfan {

struct ListenSpec {
  std::uint8_t flagged = 0;  // kind_bit() of each kind whose listen flag (KindInfo::listen_flag) is true
  std::vector<std::string> resource_uris;  // unescaped, de-duplicated, in request order
  std::vector<std::string> task_ids{};     // the same, of params.notifications.taskIds
  [[nodiscard]] bool wants(Kind k) const noexcept { return (flagged & kind_bit(k)) != 0; }
  /** The keys of a keyed kind (KindInfo::listen_keys); null for a flagged kind. */
  [[nodiscard]] std::vector<std::string>* keys(Kind k) noexcept {
    return k == Kind::ResourceUpdated ? &resource_uris : k == Kind::TaskStatus ? &task_ids : nullptr;
  }
};

/** Which configured limit refused a message, so the transport can count it. */
enum class RpcLimitHit : std::uint8_t { None, UriLength, UrisPerListen, TaskIdLength, TaskIdsPerListen };

struct RpcRequest {
  /** Set when the message could not be accepted; `id` is filled if it could be read. */
  std::optional<Error> error;
  bool has_id = false;        // false: a notification
  std::string id;             // the id as JSON text ("\"listen:0\"" or "7"), type kept
  std::string method;
  std::string meta_version;   // params._meta["io.modelcontextprotocol/protocolVersion"]
  bool has_client_capabilities = false;  // params._meta["io.modelcontextprotocol/clientCapabilities"] (an object)
  bool declares_tasks = false;  // and its extensions name io.modelcontextprotocol/tasks (SEP-2663)
  ListenSpec listen;          // subscriptions/listen
  std::string cancel_id;      // notifications/cancelled params.requestId as JSON text
  std::string uri;            // resources/subscribe, resources/unsubscribe
  std::string init_version;   // initialize: params.protocolVersion
  std::string auth_token;     // params._meta["mcpfan/authorization"]: how stdio clients authenticate
  RpcLimitHit limit_hit = RpcLimitHit::None;
  bool envelope_error = false;  // `error` is about params._meta (a per-request field): malformed
};

struct RpcLimits {
  std::size_t max_uri_length = 4096;
  std::size_t max_uris_per_listen = 1024;
  std::size_t max_task_id_length = 256;
  std::size_t max_task_ids_per_listen = 64;
};

inline constexpr std::string_view kProtocolVersionKey = "io.modelcontextprotocol/protocolVersion";
/** Required on every 2026-07-28 request: what the client supports for this request. */
inline constexpr std::string_view kClientCapabilitiesKey = "io.modelcontextprotocol/clientCapabilities";
/** A stdio client has no headers: it sends its bearer token under this params._meta key. */
inline constexpr std::string_view kAuthorizationMetaKey = "mcpfan/authorization";

class RpcDecoder {
 public:
  explicit RpcDecoder(RpcLimits limits = {});
  ~RpcDecoder();
  RpcDecoder(const RpcDecoder&) = delete;
  RpcDecoder& operator=(const RpcDecoder&) = delete;

  [[nodiscard]] RpcRequest decode(std::string_view text);
  [[nodiscard]] const RpcLimits& limits() const noexcept { return limits_; }

 private:
  struct Impl;
  RpcLimits limits_;
  std::unique_ptr<Impl> impl_;
};

/** `{"jsonrpc":"2.0","id":<id or null>,"error":{"code":..,"message":..[,"data":..]}}` */
[[nodiscard]] std::string rpc_error_json(std::string_view id, const Error& e, std::string_view data_json = {});
/** `{"jsonrpc":"2.0","id":<id>,"result":<result_json>}` */
[[nodiscard]] std::string rpc_result_json(std::string_view id, std::string_view result_json);

}  // namespace mcpfan

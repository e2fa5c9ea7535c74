#pragma once
/**
 * Decodes a `POST /v1/publish` body (design §3): one notification object or an array of
 * them, `{"tenant"?, "method", "params"?}`, into encoded payloads, all or nothing.
 *
 * Tenants are only looked up, never created: a notification for a tenant that has no
 * clients is valid and accepted, but there is nobody to deliver it to, so it is not encoded
 * (and a stream of publishes naming random tenants cannot fill the tenant table).
 *
 * Thread affinity: one decoder per thread (it owns a reusable simdjson parser and buffer).
 */
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "mcpfan/notification.h"
#include "mcpfan/payload.h"
#include "mcpfan/result.h"
#include "mcpfan/task_states.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

struct PublishLimits {
  std::size_t max_uri_length = 4096;
  std::size_t max_notifications = 10000;  // per body
  std::size_t max_task_id_length = 256;
  std::size_t max_task_bytes = 256 * 1024;  // params of one notifications/tasks
};

/** Which bound refused the last body decode() refused, so the caller can count it. */
enum class PublishLimitHit : std::uint8_t { None, UriLength, TaskIdLength, TaskBytes };

/** A task status of SEP-2663: whether it is terminal (completed, cancelled, failed), or nullopt for an unknown one. */
[[nodiscard]] std::optional<bool> task_status_terminal(std::string_view status) noexcept;

/**
 * A decoded body. `notifications` is what Hub::publish(notes) takes: every notification, in
 * body order, `local` set where its tenant has clients here (the same payloads as `payloads`),
 * and with `for_backplane` its copy for other nodes. `payloads` alone serves a host that
 * publishes payloads (Hub::publish(payloads)).
 */
struct DecodedPublish {
  std::vector<PayloadRef> payloads;  // for tenants that have clients, in body order
  std::size_t accepted = 0;          // every notification of the body (payloads + no audience)
  std::vector<Notification> notifications;
  /** Each notifications/tasks, as a state to keep (Hub::task_states()), audience here or not. */
  std::vector<TaskState> tasks;
};

class PublishDecoder {
 public:
  explicit PublishDecoder(PublishLimits limits = {});
  ~PublishDecoder();
  PublishDecoder(const PublishDecoder&) = delete;
  PublishDecoder& operator=(const PublishDecoder&) = delete;

  /**
   * Decodes `body`. `forced_tenant`, when set (the name a publisher key is bound to),
   * overrides and must equal any "tenant" field. On error nothing is returned, and the
   * message names the problem and the index of the offending notification.
   * `for_backplane` also gives each of `notifications` its copy for other nodes (tenant name,
   * URI and the publish-API message), local audience or not: a tenant with no clients here may
   * have some on another node.
   */
  [[nodiscard]] Result<DecodedPublish> decode(std::string_view body, const TenantTable& tenants,
                                              std::optional<std::string_view> forced_tenant = std::nullopt,
                                              bool for_backplane = false);
  /** The bound the last decode() refused its body for (None: it was accepted, or refused for another reason). */
  [[nodiscard]] PublishLimitHit limit_hit() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcpfan

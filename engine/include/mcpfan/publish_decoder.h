#pragma once
/**
 * Decodes a `POST /v1/publish` body (design §3): one notification object or an array of
 * them, `{"tenant"?, "method", "params"?}`, into encoded payloads, all or nothing.
 *
 * Thread affinity: one decoder per thread (it owns a reusable simdjson parser and buffer).
 */
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "mcpfan/payload.h"
#include "mcpfan/result.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

struct PublishLimits {
  std::size_t max_uri_length = 4096;
  std::size_t max_notifications = 10000;  // per body
};

class PublishDecoder {
 public:
  explicit PublishDecoder(PublishLimits limits = {});
  ~PublishDecoder();
  PublishDecoder(const PublishDecoder&) = delete;
  PublishDecoder& operator=(const PublishDecoder&) = delete;

  /**
   * Decodes `body`. `forced_tenant`, when set (a publisher key bound to one tenant),
   * overrides and must equal any "tenant" field. On error nothing is returned, and the
   * message names the problem and the index of the offending notification.
   */
  [[nodiscard]] Result<std::vector<PayloadRef>> decode(std::string_view body, TenantRegistry& tenants,
                                                       std::optional<TenantId> forced_tenant = std::nullopt);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcpfan

#pragma once
/**
 * One published notification, encoded once into an immutable buffer that every stream,
 * on every worker loop, writes from directly.
 *
 * The JSON-RPC text is split around the per-subscription subscriptionId:
 *
 *   [event: message\ndata: ]{"jsonrpc":"2.0","method":M,"params":{"_meta":{"io.modelcontextprotocol/subscriptionId":
 *   <subscription id token, owned by the subscription>
 *   [,<publisher _meta members>]}[,<other params members>]}}\n[\n]
 *
 * so an SSE write is the iovecs [head(Sse)][id][tail(Sse)] and a stdio line is
 * [head(Line)][id][tail(Line)], both views of the same bytes. plain() is a second encoding
 * without the id, for subscriptions that have none (2025-era sessions).
 *
 * Thread-safety: contents are immutable after encoding; the reference count is atomic.
 * Transports take one reference per worker loop and count locally from there on.
 */
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcpfan/kind.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

enum class Framing : std::uint8_t {
  Sse,   // `event: message` + `data: <json>` + blank line
  Line,  // newline-delimited JSON-RPC (stdio)
};

/** The parts of one notification: views that must outlive only the encode call. */
struct NotificationParts {
  TenantId tenant = kDefaultTenant;
  Kind kind = Kind::ToolsListChanged;
  std::string_view uri;  // unescaped; empty for list_changed kinds
  /** params members other than _meta: (unescaped key, minified raw JSON value). */
  std::vector<std::pair<std::string_view, std::string_view>> params;
  /** params._meta members other than the subscriptionId, same form. */
  std::vector<std::pair<std::string_view, std::string_view>> meta;
  /** The publisher sent a params._meta (perhaps empty): plain() keeps it. */
  bool has_meta = false;
};

class PayloadRef;

class Payload {
 public:
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;

  [[nodiscard]] Kind kind() const noexcept { return kind_; }
  [[nodiscard]] TenantId tenant() const noexcept { return tenant_; }
  /** Unescaped resource URI (empty for list_changed); valid while a reference is held. */
  [[nodiscard]] std::string_view uri() const& noexcept { return uri_; }
  /** Bytes before the subscription id token; valid while a reference is held. */
  [[nodiscard]] std::string_view head(Framing f) const& noexcept {
    std::string_view all(bytes_);
    return f == Framing::Sse ? all.substr(0, head_end_) : all.substr(kSsePrefix.size(), head_end_ - kSsePrefix.size());
  }
  /** Bytes after the subscription id token, including the frame terminator. */
  [[nodiscard]] std::string_view tail(Framing f) const& noexcept {
    std::string_view all(bytes_);
    return f == Framing::Sse ? all.substr(head_end_) : all.substr(head_end_, all.size() - head_end_ - 1);
  }
  /**
   * The whole frame without a subscriptionId (2025-era sessions, whose notifications carry
   * none): params exactly as published. Valid while a reference is held.
   */
  [[nodiscard]] std::string_view plain(Framing f) const& noexcept {
    std::string_view all(plain_);
    return f == Framing::Sse ? all : all.substr(kSsePrefix.size(), all.size() - kSsePrefix.size() - 1);
  }
  /** Wire size of one frame, excluding the id token. */
  [[nodiscard]] std::size_t frame_size(Framing f) const noexcept {
    return f == Framing::Sse ? bytes_.size() : bytes_.size() - kSsePrefix.size() - 1;
  }

  static constexpr std::string_view kSsePrefix = "event: message\ndata: ";

 private:
  friend class PayloadRef;
  friend PayloadRef encode_notification(const NotificationParts& parts);
  Payload() = default;

  mutable std::atomic<std::uint32_t> refs_{0};
  Kind kind_ = Kind::ToolsListChanged;
  TenantId tenant_ = kDefaultTenant;
  std::uint32_t head_end_ = 0;
  std::string uri_;
  std::string bytes_;
  std::string plain_;
};

/** Intrusive, thread-safe reference to a Payload. */
class PayloadRef {
 public:
  PayloadRef() noexcept = default;
  explicit PayloadRef(const Payload* p) noexcept : p_(p) { if (p_) p_->refs_.fetch_add(1, std::memory_order_relaxed); }
  PayloadRef(const PayloadRef& o) noexcept : PayloadRef(o.p_) {}
  PayloadRef(PayloadRef&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  PayloadRef& operator=(PayloadRef o) noexcept { std::swap(p_, o.p_); return *this; }
  ~PayloadRef() { reset(); }

  void reset() noexcept {
    if (p_ && p_->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  [[nodiscard]] const Payload* get() const noexcept { return p_; }
  const Payload* operator->() const noexcept { return p_; }
  const Payload& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  const Payload* p_ = nullptr;
};

/** Encodes a notification once. Keys are re-escaped; raw values are copied as given. */
[[nodiscard]] PayloadRef encode_notification(const NotificationParts& parts);

/**
 * The notification as one `POST /v1/publish` object, `{"tenant","method","params"}` (params as
 * published, _meta included): what crosses a backplane, decoded on arrival by the same
 * PublishDecoder that decoded it here.
 */
[[nodiscard]] std::string encode_publish_message(const NotificationParts& parts, std::string_view tenant_name);

/** The `_meta` key under which each subscription's id is delivered. */
inline constexpr std::string_view kSubscriptionIdKey = "io.modelcontextprotocol/subscriptionId";

}  // namespace mcpfan

#pragma once
// What one client holds of its tenant's ceilings, as values that give it back when they go:
// a connection's binding to its tenant, one stream with its subscriptions, and the URI set
// of a 2025-era session. HTTP connections, stdio clients and sessions hold the same three,
// so each rule (what is counted, in which order it is released) is written once.
//
// Thread affinity: none of their own. Limits is atomics only, so a holder may be released on
// any thread; a holder itself is used by one owner at a time (a connection's loop, or under
// its session's mutex).
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>

#include "mcp/limits.h"
#include "mcpfan/tenants.h"

namespace mcpfan::detail {

/** A connection counted against its tenant's connection ceiling, and a reference keeping the tenant's entry alive. */
class TenantBinding {
 public:
  explicit TenantBinding(Limits& limits) noexcept : limits_(&limits) {}
  TenantBinding(const TenantBinding&) = delete;
  TenantBinding& operator=(const TenantBinding&) = delete;
  ~TenantBinding() { release(); }

  /**
   * Counts the connection against `tenant` (moving it from the tenant it was bound to),
   * keeping `ref` (none for the default tenant, which is never reclaimed). Returns the limit
   * that refused it; nothing changes then.
   */
  [[nodiscard]] std::optional<Limit> bind(TenantId tenant, TenantRef ref);
  /** Gives the connection slot back, then the reference (an entry is reclaimed only at zero usage). */
  void release() noexcept;
  [[nodiscard]] bool bound() const noexcept { return tenant_ != Limits::kNoTenant; }
  [[nodiscard]] TenantId tenant() const noexcept { return tenant_; }

 private:
  Limits* limits_;
  TenantId tenant_ = Limits::kNoTenant;
  TenantRef ref_;
};

/** One stream (a listen, or a 2025 session) and the subscriptions it counts, of one tenant. */
class StreamUsage {
 public:
  StreamUsage() = default;
  StreamUsage(StreamUsage&& o) noexcept { *this = std::move(o); }
  StreamUsage& operator=(StreamUsage&& o) noexcept;
  StreamUsage(const StreamUsage&) = delete;
  StreamUsage& operator=(const StreamUsage&) = delete;
  ~StreamUsage() { release(); }

  /**
   * Takes one stream and `subscriptions` of `tenant`; the limit that refused it otherwise
   * (then nothing is taken).
   */
  [[nodiscard]] static std::optional<Limit> acquire(Limits& limits, TenantId tenant, std::int64_t subscriptions,
                                                    StreamUsage& out);
  void release() noexcept;
  [[nodiscard]] bool held() const noexcept { return limits_ != nullptr; }

 private:
  Limits* limits_ = nullptr;
  TenantId tenant_{};
  std::int64_t subscriptions_ = 0;
};

/** The resource URIs of a 2025-era session: a set, bounded per session and counted against its tenant. */
class SessionUris {
 public:
  SessionUris(Limits& limits, TenantId tenant, std::size_t max_uris) noexcept
      : limits_(limits), tenant_(tenant), max_(max_uris) {}
  SessionUris(const SessionUris&) = delete;
  SessionUris& operator=(const SessionUris&) = delete;
  ~SessionUris() { clear(); }

  /**
   * Adds `uri` (already there: nothing to do). Refused by the session's own bound
   * (Limit::UrisPerListen) or the tenant's subscription ceiling; each is counted.
   */
  [[nodiscard]] std::optional<Limit> add(const std::string& uri);
  /** Removes `uri`; false if it was not there. */
  bool remove(const std::string& uri);
  void clear() noexcept;
  [[nodiscard]] const std::unordered_set<std::string>& set() const noexcept { return uris_; }
  [[nodiscard]] std::size_t max() const noexcept { return max_; }

 private:
  Limits& limits_;
  TenantId tenant_;
  std::size_t max_;
  std::unordered_set<std::string> uris_;  // O(1) membership
};

}  // namespace mcpfan::detail

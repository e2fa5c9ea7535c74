#pragma once
// MCP 2025-era Streamable HTTP sessions (design §2.2): created by `initialize`, named by
// the Mcp-Session-Id header, with a set of subscribed URIs and at most one open GET stream.
// Any worker may receive a session's requests; the GET stream lives on the worker that
// accepted it, and only that worker touches the stream (`conn`, `sub`).
//
// Thread-safety: SessionRegistry is thread-safe (one mutex: sessions are control-path);
// a Session's fields are guarded by the registry's mutex.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "mcpfan/index.h"
#include "mcpfan/tenants.h"
#include "mcp/limits.h"

namespace mcpfan::detail {

class HttpConn;

struct Session {
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  /** Gives back what the session held of its tenant's stream and subscription ceilings. */
  ~Session();

  std::string id;
  TenantId tenant = kDefaultTenant;
  std::string version;             // negotiated at initialize
  std::unordered_set<std::string> uris;  // resources/subscribe (O(1) membership), at most --max-uris-per-listen
  int owner = -1;                  // worker holding the GET stream, or -1
  HttpConn* conn = nullptr;        // that stream; only worker `owner` may use it
  SubId sub{};                     // its subscription in that worker's shard
  std::uint64_t idle_since_ms = 0; // last request, or when the stream closed
  bool ended = false;              // DELETEd or expired
  bool idle = false;               // counted as a session without a stream (registry + tenant)
  Limits* limits = nullptr;        // set when the session was counted against its tenant
  TenantRef tenant_ref;            // keeps the tenant's entry alive (released after the usage)
};

class SessionRegistry {
 public:
  /**
   * `limits` counts idle sessions per tenant; `max_idle` bounds them in all. A session is
   * idle (counted) from initialize until its GET stream opens, and again once it closes.
   */
  SessionRegistry(Limits& limits, std::size_t max_idle) : limits_(limits), max_idle_(max_idle) {}

  /**
   * A new session with a random 128-bit id, counted as idle; null with `refused` set when
   * the ceiling in all (Limit::IdleSessions) or the tenant's refuses it.
   */
  [[nodiscard]] std::shared_ptr<Session> create(TenantId tenant, std::string version, std::uint64_t now_ms,
                                                std::optional<Limit>& refused);
  /** The session's GET stream opened / closed: it stops / starts counting as idle. Call with mutex() held. */
  void stream_opened(Session& s) noexcept;
  void stream_closed(Session& s) noexcept;
  [[nodiscard]] std::size_t idle() { std::lock_guard lock(mu_); return idle_; }
  /** The session, or null; refreshes its idle clock. */
  [[nodiscard]] std::shared_ptr<Session> find(const std::string& id, std::uint64_t now_ms);
  /** Removes it; the caller ends its stream. */
  [[nodiscard]] std::shared_ptr<Session> erase(const std::string& id);
  /** Removes sessions with no stream idle for `idle_ms`; returns how many. */
  std::size_t expire(std::uint64_t now_ms, std::uint64_t idle_ms);
  [[nodiscard]] std::size_t size();
  [[nodiscard]] std::mutex& mutex() noexcept { return mu_; }

 private:
  void forget_idle(Session& s) noexcept;  // mu_ held

  Limits& limits_;
  const std::size_t max_idle_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions_;
  std::size_t idle_ = 0;  // guarded by mu_
};

}  // namespace mcpfan::detail

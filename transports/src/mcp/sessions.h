#pragma once
// MCP 2025-era Streamable HTTP sessions (design §2.2): created by `initialize`, named by
// the Mcp-Session-Id header, with a set of subscribed URIs and at most one open GET stream.
// Any worker may receive a session's requests; the GET stream lives on the worker that
// accepted it, and only that worker touches the stream (`live`, `sub`).
//
// Locking: two levels, never held the other way round.
//  - Session::mu guards one session's URIs and its stream (`owner`, `live`, `sub`): the
//    client-sized work (a URI set change, building a stream's filter) locks only its session.
//  - The registry's mutex guards the id map, the idle list and the idle counts: every
//    operation under it is O(1) (expiry: O(sessions expired)). Session::mu may be held
//    while the registry's is taken, never the reverse.
//
// Resumable streams (session_journal.h; docs/protocol.md "Resumable 2025 sessions"): every notification matched for a
// session is numbered and journaled under Session::mu. When its GET stream's connection closes, the session stays
// subscribed on that worker through a parked stream (http/session_park.h) that only journals, until a new GET takes
// over (on any worker), DELETE or expiry; so `owner`, `stream` and `sub` name either the live GET stream (`live` set)
// or the parked one. A Session is shared (shared_ptr): the registry, requests in flight, the stream's connection and
// tasks posted to a shard may each hold it; what it holds of its tenant's ceilings is given back when the last
// reference goes.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "mcp/limits.h"
#include "mcp/session_journal.h"
#include "mcp/usage.h"
#include "mcpfan/index.h"
#include "mcpfan/shard.h"
#include "mcpfan/tenants.h"

namespace mcpfan::detail {

class EventStream;

/** Resumption counters of all sessions (/metrics). Thread-safe. */
struct SessionCounters {
  std::atomic<std::uint64_t> replayed{0};   // journaled notifications written on a resumed stream
  std::atomic<std::uint64_t> rereads{0};    // Last-Event-IDs answered with the re-read hints
  std::atomic<std::uint64_t> evictions{0};  // journal entries pushed out by the byte bound
  std::atomic<std::uint64_t> journaled{0};  // notifications recorded for a session without a live stream
  std::atomic<std::int64_t> parked{0};      // sessions subscribed without a GET stream
};

/** Default bound of one session's journal (--session-replay-bytes). */
inline constexpr std::size_t kDefaultReplayBytes = 256 * 1024;

struct Session {
  Session(std::string id, TenantId tenant, std::string version, Limits& limits, std::size_t max_uris, TenantRef ref,
          StreamUsage usage, SessionCounters& counters, std::uint32_t tag, std::size_t replay_bytes)
      : tenant_ref(std::move(ref)), stream_usage(std::move(usage)), id(std::move(id)), tenant(tenant),
        version(std::move(version)), counters(counters), uris(limits, tenant, max_uris), journal(tag, replay_bytes) {}
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Declared first, released last: the entry is reclaimed only once the usage below is back.
  TenantRef tenant_ref;      // none for the default tenant
  StreamUsage stream_usage;  // the one stream a session counts, from initialize to its end

  const std::string id;
  const TenantId tenant;
  const std::string version;  // negotiated at initialize
  SessionCounters& counters;  // the registry's

  std::mutex mu;             // guards what follows, up to the registry's part
  SessionUris uris;          // resources/subscribe, at most --max-uris-per-listen
  int owner = -1;            // worker holding the GET stream or the parked one, or -1
  EventStream* live = nullptr;  // the GET stream (null when parked); only worker `owner` may use it
  StreamId stream{};         // the live or parked stream in that worker's shard
  SubId sub{};               // its subscription there
  SessionJournal journal;    // event ids and what was sent under them
  std::uint64_t live_epoch = 0;  // the SessionTap whose records are sent (0: none, parked)
  std::uint64_t pending_epoch = 0;  // a GET stream waiting for the one it took over to end
  std::uint64_t pending_from = 0;   // the journal's last() when it subscribed
  std::uint64_t epochs = 0;      // SessionTaps handed out
  std::string upstream_event_id;  // behind the front proxy: the upstream's last event id on the GET stream

  std::atomic<bool> ended{false};  // DELETEd or expired: no new stream

 private:
  friend class SessionRegistry;
  // Guarded by the registry's mutex.
  bool streaming = false;          // a GET stream is claimed
  bool idle = false;               // counted as a session without a stream, and in the idle list
  std::uint64_t idle_since_ms = 0; // last request, or when the stream closed
  Session* idle_prev = nullptr;    // the idle list: least recently used first
  Session* idle_next = nullptr;
};

/**
 * One stream's view of its session's journal: the shard's StreamJournal for a session's live
 * GET stream (epoch > 0) or its parked stream (epoch 0). Only the tap of the current live
 * stream (Session::live_epoch) gets numbers to send; every other tap only records. Loop-affine
 * to its stream's shard; locks the session.
 */
class SessionTap final : public StreamJournal {
 public:
  SessionTap(std::shared_ptr<Session> s, std::uint64_t epoch) : s_(std::move(s)), epoch_(epoch) {}
  std::optional<std::string> record(const PayloadRef& payload) override;
  /**
   * The `id:` line of an event numbered `seq` on a stream of the session `tag`; behind the
   * front proxy, with the upstream's last event id after a '~' (session_journal.h).
   */
  static std::string id_line(std::uint32_t tag, std::uint64_t seq, std::string_view upstream_id = {});

 private:
  std::shared_ptr<Session> s_;
  const std::uint64_t epoch_;
};

class SessionRegistry {
 public:
  /**
   * `limits` counts idle sessions per tenant; `max_idle` bounds them in all. A session is
   * idle (counted) from initialize until its GET stream opens, and again once it closes.
   */
  SessionRegistry(Limits& limits, std::size_t max_idle, std::size_t max_uris,
                  std::size_t replay_bytes = kDefaultReplayBytes)
      : limits_(limits), max_idle_(max_idle), max_uris_(max_uris), replay_bytes_(replay_bytes) {}
  ~SessionRegistry();

  /**
   * A new session with a random 128-bit id, holding `usage` (its stream) and `ref` (its
   * tenant), counted as idle; null with `refused` set when the ceiling in all
   * (Limit::IdleSessions) or the tenant's refuses it (then `usage` and `ref` are released).
   * A given `id` (the front proxy adopts its upstream's session ids) is used instead of a
   * random one; null with `refused` unset when a session has it already.
   */
  [[nodiscard]] std::shared_ptr<Session> create(TenantId tenant, std::string version, std::uint64_t now_ms,
                                                TenantRef ref, StreamUsage usage, std::optional<Limit>& refused,
                                                std::string id = {});
  enum class Claim { Ok, Ended, Busy };
  /**
   * Claims the session's one GET stream: it stops counting as idle. Ended or Busy: nothing
   * changes. With `take_over`, a stream already claimed is no obstacle (a resuming GET
   * replaces it; the caller ends the old one). Callers that move the stream hold s.mu.
   */
  [[nodiscard]] Claim claim_stream(Session& s, bool take_over = false) noexcept;
  /** The claimed stream closed: idle again (counted, last in the idle list) unless the session ended. */
  void stream_closed(Session& s, std::uint64_t now_ms) noexcept;
  /** The session, or null; refreshes its idle clock. */
  [[nodiscard]] std::shared_ptr<Session> find(const std::string& id, std::uint64_t now_ms);
  /** Removes it and marks it ended; the caller ends its stream. */
  [[nodiscard]] std::shared_ptr<Session> erase(const std::string& id);
  /**
   * Ends sessions with no stream idle for `idle_ms`, oldest first; returns how many. O(expired).
   * Each is handed to the on_expired hook, if set, after the registry's lock is released.
   */
  std::size_t expire(std::uint64_t now_ms, std::uint64_t idle_ms);
  /** Set once, before any expire(): ends an expired session's parked stream (server.cc). */
  void set_on_expired(std::function<void(const std::shared_ptr<Session>&)> hook) { on_expired_ = std::move(hook); }
  [[nodiscard]] SessionCounters& counters() noexcept { return counters_; }
  [[nodiscard]] std::size_t size();
  [[nodiscard]] std::size_t idle();

 private:
  // mu_ held for each.
  void link_last(Session& s, std::uint64_t now_ms) noexcept;  // the idle list only
  void unlink(Session& s) noexcept;
  void make_idle(Session& s, std::uint64_t now_ms) noexcept;
  void forget_idle(Session& s) noexcept;

  Limits& limits_;
  const std::size_t max_idle_;
  const std::size_t max_uris_;
  const std::size_t replay_bytes_;
  SessionCounters counters_;
  std::function<void(const std::shared_ptr<Session>&)> on_expired_;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Session>> sessions_;
  std::size_t idle_ = 0;
  Session* idle_head_ = nullptr;  // least recently used
  Session* idle_tail_ = nullptr;
};

}  // namespace mcpfan::detail

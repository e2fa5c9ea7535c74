#pragma once
// Per-origin heartbeats (docs/operations.md "Loss a node cannot see"): how a node learns that
// it may have missed what another node sent, when nothing on its own connection says so.
//
// Core NATS delivers at most once. A node notices its own disconnects, but not a route between
// two nats-servers that broke while both nodes stayed connected, a peer that lost what it had
// just written when its server died, or a peer that gave up on queued notifications. So every
// node publishes a heartbeat every --nats-heartbeat-ms on one subject that every node
// subscribes to (subjects.h "Heartbeats"). It carries the sender's instance (a random id per
// process: a restart is a new origin), a sequence number, the sender's interval, and a count of
// the sender's own faults: the times it may have lost notifications it sent (a disconnect, a
// notification it gave up on). A heartbeat takes the same connection, server and routes as the
// sender's notifications, so a path that dropped notifications for a while dropped the
// heartbeats sent meanwhile too. The receiver's PeerTable turns what it hears into misses:
//   - Gap: a heartbeat's sequence skipped some (the path lost messages);
//   - Faults: the sender's fault count grew (it says it may have lost some);
//   - Late: an origin first heard with a sequence past 1 although this node has been listening
//     for two of its intervals (its earlier heartbeats, and what it sent with them, were lost);
//   - (a peer that stops on purpose says so in its last heartbeat and is dropped at once: a
//     rolling restart brings no hints, unless that last heartbeat shows a gap or faults);
//   - Silent: nothing heard from a known origin for four of its (Limits::silent_beats)
//     intervals (a dead peer, or a path down now); its next heartbeat, if any, tells the rest.
// Each miss makes the backplane send its local listeners re-read hints (backplane.h). What no
// heartbeat can reveal: a loss shorter than one heartbeat interval that no heartbeat fell into
// (documented, with the harness's figures, in docs/operations.md).
//
// Bounds: at most Limits::max_peers origins (a new one past it is refused and counted); a
// silent origin is forgotten after Limits::forget_ms. A heartbeat body is at most
// kMaxHeartbeatBytes; anything else is malformed (counted, ignored).
//
// Thread affinity: encode_heartbeat()/decode_heartbeat() are reentrant. PeerTable is
// thread-safe (one mutex): heard() runs on nats.c's delivery thread, sweep() on the
// backplane's loop, stats() anywhere. Lifetime: owned by the Backplane.
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace mcpfan::detail::nats {

inline constexpr std::size_t kMaxHeartbeatBytes = 512;
inline constexpr std::size_t kMaxHeartbeatNodeBytes = 64;

/** One heartbeat, as sent and as read back. */
struct Heartbeat {
  std::uint64_t instance = 0;     // the sending process: random, never 0; a restart is a new one
  std::string node;               // its --node-name (at most kMaxHeartbeatNodeBytes), for logs and /healthz
  std::uint64_t seq = 0;          // heartbeats this instance has sent, from 1
  std::uint64_t faults = 0;       // times this instance may have lost notifications it sent
  std::uint64_t sent = 0;         // notifications it has sent to NATS (diagnostics)
  std::uint64_t interval_ms = 0;  // its heartbeat interval: silence is judged by the sender's own
  bool leaving = false;           // its last: it stops, having sent what it had (no silence to fear)
};

/** `instance` as 16 lowercase hex digits: how heartbeats and reply subjects name a process. */
void append_instance_hex(std::string& out, std::uint64_t instance);

/** The JSON body: {"instance":"<16 hex>","node":"…","seq":N,"faults":N,"sent":N,"interval_ms":N[,"leaving":true]}. */
[[nodiscard]] std::string encode_heartbeat(const Heartbeat& hb);
/** A body encode_heartbeat() could have written (instance non-zero, seq and interval at least 1), else nullopt. */
[[nodiscard]] std::optional<Heartbeat> decode_heartbeat(std::string_view body);

class PeerTable {
 public:
  struct Limits {
    std::size_t max_peers = 1024;
    std::uint64_t silent_beats = 4;    // intervals without a heartbeat before an origin counts as silent
    std::uint64_t forget_ms = 60'000;  // a silent origin is dropped this long after it was last heard
  };
  enum class Miss : std::uint8_t { None, Gap, Faults, Late, Silent };
  struct Stats {
    std::size_t peers = 0;                                       // origins heard and not forgotten
    std::size_t silent = 0;                                      // of them, silent now
    std::uint64_t gaps = 0, faults = 0, late = 0, silences = 0;  // misses, by kind
    std::uint64_t heard = 0;                                     // heartbeats taken
    std::uint64_t refused = 0;                                   // heartbeats of a new origin past max_peers
    std::uint64_t forgotten = 0;                                 // silent origins dropped
    std::uint64_t left = 0;                                      // origins dropped at their leaving heartbeat
  };

  PeerTable(std::uint64_t self, Limits limits) : self_(self), limits_(limits) {}

  /** This node's heartbeat subscription is live from `now_ms` on (the start of what it should hear). */
  void listening(std::uint64_t now_ms);
  /** A heartbeat received at `now_ms`: the miss it reveals, or None (also for this node's own). */
  [[nodiscard]] Miss heard(const Heartbeat& hb, std::uint64_t now_ms);
  /** Marks origins silent past their bound (a Silent miss each), forgets old silent ones; returns the new silences. */
  [[nodiscard]] std::size_t sweep(std::uint64_t now_ms);
  [[nodiscard]] Stats stats() const;

 private:
  struct Peer {
    std::uint64_t seq = 0;
    std::uint64_t faults = 0;
    std::uint64_t interval_ms = 0;
    std::uint64_t last_ms = 0;
    bool silent = false;
  };
  [[nodiscard]] std::uint64_t silent_after(const Peer& p) const noexcept;

  const std::uint64_t self_;
  const Limits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::uint64_t, Peer> peers_;  // guarded by mu_, at most limits_.max_peers
  std::uint64_t listening_since_ms_ = 0;           // guarded by mu_; 0: not yet
  Stats counts_{};                                 // guarded by mu_ (peers and silent computed in stats())
};

}  // namespace mcpfan::detail::nats

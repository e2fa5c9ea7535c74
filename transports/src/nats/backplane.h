#pragma once
// The NATS backplane (docs/operations.md "Several nodes"): a publish accepted by any node reaches every matching stream
// on every node, and a node receives only the subjects its own subscribers need.
//
//  - Interest: each shard's index reports its keys' first and last subscription (KeyListener,
//    on the shard's loop); the key becomes a v1 subject (nats/subjects.h) counted in the
//    InterestTable, whose SUB/UNSUB operations one backplane thread applies every 10 ms in
//    batches (an UNSUB only after the linger).
//  - Out: the node that accepts a publish delivers it locally and sends each notification as
//    one NATS message, the publish-API object {"tenant","method","params"} (encode_publish_
//    message) on its subject. The connection never receives its own messages (no echo).
//  - In: a message is checked and decoded once (nats/inbound.h: one notification per message,
//    its tenant decided by the subject it arrived on, anything else dropped and counted by
//    reason) and its payload handed to the thread-safe Hub::deliver_forwarded(): on the
//    backplane's loop, a read's messages as one batch (--nats-receive loop, nats/loop_receive.h),
//    or on nats.c's delivery thread, one by one (pool; also with --nats-io threads, or a libnats
//    without the hook); no socket is touched from nats.c's threads. What has been
//    received and not yet matched by every shard it goes to holds bytes of one receive budget
//    (--nats-receive-buffer-bytes; the shard inboxes release them); a message that does not
//    fit, or whose shard inbox is full, is dropped and counted by reason. Debouncing happened where the publish was
//    accepted (Hub::publish(notes)): a suppressed update never crosses the backplane, and nothing is debounced twice.
//    A message that matches no local subscription is counted as unmatched (hash or fold
//    over-match, a folded tenant's wildcard, or a subscriber that just left).
//  - Loss a node cannot see (nats/peers.h): every --nats-heartbeat-ms the loop publishes this
//    process's heartbeat on <prefix>.v1.~hb (after whatever it sent before, on the same
//    connection); heartbeats heard from other nodes (on nats.c's delivery thread: the loop's
//    receive leaves that subject to it) go to the PeerTable, and a miss it reports
//    (a skipped sequence, a peer's own faults, a peer first heard late or gone silent) makes
//    this node send its listeners re-read hints, a settle delay later (so that interest the
//    healed path carries has arrived: what is sent after the hint reaches this node).
//  - nats.c is configured for a tier, not its defaults: one named connection, unlimited
//    reconnects with jitter, retry when the first connect fails (the node serves locally
//    meanwhile), a shared delivery thread pool instead of a thread per subscription, bounded
//    pending messages per subscription (65,536 and the receive budget's bytes) with
//    slow-consumer drops counted. That queue, ahead of the delivery thread, is outside the
//    receive budget: with --nats-receive pool it is used (no public hook before it); on the
//    loop (LoopReceive) messages are taken before it.
//
// Delivery across nodes is at-most-once, in order per publisher and subject. While
// disconnected, local delivery goes on; notifications for other nodes wait in a bounded
// queue (--nats-outage-buffer-bytes, 8 MiB) released a settle delay (--nats-settle-ms) after
// the reconnect, so that peers have re-subscribed; a publish that would not fit is refused
// whole (503) before anything is delivered. The bound is a ByteBudget: can_take() reserves a
// publish's bytes when it admits it, and each Notification carries its reservation until it
// is sent or suppressed (the debouncer replaced it) or dropped, so concurrent publishes and
// what the debouncer holds can never pass it.
//
// Thread-safety: key_added/key_removed run on shard loops, admit() and forward() on any thread,
// stats() and report() anywhere; all are thread-safe. receive() runs on the backplane's loop
// (--nats-receive loop: LoopReceive, which the loop owns) or on nats.c's delivery thread (pool);
// it touches only atomics, the thread-safe hub and a decoder of its own thread. Heartbeats:
// beat() and send_heartbeat() on the loop, hear() on nats.c's delivery thread (the loop's
// filter leaves <prefix>.v1.~hb to it), note_miss()/note_fault() anywhere (atomics), the
// PeerTable behind its own mutex. Lifetime: created by start_backplane()
// (backplane/backplane.h) in Server::start() before the workers, destroyed by Server::stop()
// after them (so no shard calls a destroyed listener); the Hub outlives it.
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uv.h>

#include "backplane/backplane.h"
#include "mcpfan/byte_budget.h"
#include "mcpfan/hub.h"
#include "mcpfan/index.h"
#include "mcpfan/publish_decoder.h"
#include "mcpfan/result.h"
#include "mcpfan/transport/server_config.h"
#include "nats/inbound.h"
#include "nats/interest.h"
#include "nats/loop_receive.h"
#include "nats/peers.h"
#include "server/log.h"

struct __natsConnection;
struct __natsOptions;
struct __natsSubscription;
struct __natsMsg;

namespace mcpfan::detail::nats {

/** Where the NATS connection's socket IO runs. */
enum class NatsIo {
  Libuv,    // on the backplane's own uv loop (nats.c's libuv adapter)
  Threads,  // nats.c's reader and flusher threads
};

struct BackplaneConfig {
  // The operator's settings (ServerConfig::nats, taken whole; server_config.h says what each is).
  // The receive budget (nats.receive_buffer_bytes): bytes of messages from other nodes handed
  // over by nats.c and not yet matched by every shard they go to; past it a message is dropped
  // (Reject::ReceiveBudget).
  NatsConfig nats;
  PublishLimits limits;  // the server's (ServerConfig::publish_limits()): what another node sends is held to them
  // Its Server's log (outlives the backplane): connects, disconnects, the outage queue's
  // release, logged from the backplane's loop and nats.c's threads. Null: log::current().
  log::Logger* logger = nullptr;

  /** nats.io as the enum: anything but "threads" (refused before a start) is libuv's. */
  [[nodiscard]] NatsIo io() const noexcept { return nats.io == "threads" ? NatsIo::Threads : NatsIo::Libuv; }
  /** Received messages taken on the backplane's loop (nats/loop_receive.h): "loop" with libuv IO and the hook. */
  [[nodiscard]] bool receive_on_loop() const noexcept {
    return nats.receive != "pool" && io() == NatsIo::Libuv && LoopReceive::available();
  }
};

class Backplane final : public mcpfan::detail::Backplane {
 public:
  struct Stats {
    bool connected = false;
    std::size_t subjects = 0;
    std::uint64_t sub_ops = 0;
    std::uint64_t unsub_ops = 0;
    std::uint64_t received = 0;   // messages taken from NATS
    std::uint64_t unmatched = 0;  // received, but matching no local subscription (tenant or URI)
    std::uint64_t dropped = 0;    // slow-consumer drops, failed publishes, refused subjects
    std::uint64_t sent = 0;
    std::uint64_t refused = 0;          // publishes refused while disconnected with the outage buffer full
    std::size_t compacted_tenants = 0;  // tenants subscribed as one `<prefix>.v1.<tenant>.>` (subject bound reached)
    std::uint64_t compactions = 0;
    std::size_t queued = 0;       // notifications waiting for the backplane (outage, settle delay)
    std::int64_t held_bytes = 0;  // the outage budget in use: admitted, not yet sent (queued or held by the debouncer)
    std::int64_t receive_bytes = 0;  // the receive budget in use: received, not yet matched by the shards
    double lag_seconds = 0;          // how long the oldest of them has waited (0: none waits)
    RejectCounts rejected{};         // received messages dropped, by Reject reason (nats/inbound.h)
    double blind_seconds = 0;        // disconnected since this long (0: connected)
    std::uint64_t reread_waves = 0;  // times every local listener was sent re-read hints (after a miss)
    std::uint64_t reread_hints = 0;  // hints those waves posted
    std::uint64_t faults = 0;        // times this node may have lost what it sent (announced in its heartbeats)
    std::uint64_t heartbeats_sent = 0;
    PeerTable::Stats peers{};  // other nodes, as their heartbeats tell
  };

  /** Connects (in the background if the servers do not answer yet) and starts the interest thread. */
  [[nodiscard]] static Result<std::unique_ptr<Backplane>> start(BackplaneConfig config, Hub& hub);
  ~Backplane();
  Backplane(const Backplane&) = delete;
  Backplane& operator=(const Backplane&) = delete;

  // KeyListener: a shard's key gained its first / lost its last subscription.
  void key_added(TenantId tenant, Kind kind, std::string_view uri) override;
  void key_removed(TenantId tenant, Kind kind, std::string_view uri) override;

  /**
   * The largest message the servers take (as the last connect said; 0 before the first); a
   * publish with a bigger notification is refused whole (413). Never waits for nats.c.
   */
  [[nodiscard]] std::int64_t max_payload() const noexcept;
  /**
   * The outage policy: while disconnected (or while NATS does not keep up: nats.c's own
   * buffer past the same bound), messages for other nodes wait in a bounded buffer.
   * Admits `messages` whole: reserves their bytes in the outage budget and attaches each
   * reservation to its Notification (Notification::reserved), given back when it is sent or
   * suppressed. False, with nothing reserved, when they would not fit: the caller refuses the
   * publish (503, Retry-After) before delivering anything, so nothing is half published.
   * Counted (refused).
   */
  [[nodiscard]] bool can_take(std::vector<Notification>& messages);
  /**
   * A publish's notifications, before anything of it is delivered: each within max_payload()
   * (else TooLarge, 413), then can_take() (else Busy, 503).
   */
  [[nodiscard]] std::optional<BackplaneRefusal> admit(std::vector<Notification>& notes) override;
  /**
   * Sends each forwarded() notification to its subject (the Hub's forwarder, after the local
   * fan-out and the debouncer). A notification that was not admitted by can_take() reserves
   * its bytes here, and is dropped (counted) if they do not fit. Counts failures; never
   * blocks on the network.
   */
  void forward(std::vector<Notification>& notifications) override;
  [[nodiscard]] bool connected() const noexcept { return connected_.load(std::memory_order_acquire); }
  [[nodiscard]] Stats stats() const;
  /** stats() as /metrics, /status.json and the health checks show them (report_of()). */
  [[nodiscard]] BackplaneReport report() const override { return report_of(stats()); }
  /** The families mcpfan_backplane_* and the "backplane" object of /status.json, from `s`. */
  [[nodiscard]] static BackplaneReport report_of(const Stats& s);

 private:
  Backplane(BackplaneConfig config, Hub& hub);
  void run(std::promise<int> first);  // the backplane thread: its loop; `first` gets the first connect's natsStatus
  bool try_connect();
  void mark_connected(__natsConnection* nc);
  [[nodiscard]] log::Logger& logger() const noexcept { return config_.logger ? *config_.logger : log::current(); }
  void tick();
  void maybe_send_reread_hints();          // on the loop: after an observed miss, once settled
  void beat();                             // on the loop, every --nats-heartbeat-ms: sweep the peers, send ours
  void send_heartbeat(bool leaving);       // on the loop
  void hear(std::string_view body);        // nats.c's delivery thread: a heartbeat from another node
  void note_miss(std::uint64_t delay_ms);  // any thread: re-read hints due, at the earliest `delay_ms` from now
  void note_fault();        // any thread: this node may have lost something it sent (announced to its peers)
  void close_loop();        // on the loop, at the stop signal: sends what is queued, then close_connection()
  void close_connection();  // closes the connection and the loop's handles
  void apply(const std::vector<InterestTable::Op>& ops);
  [[nodiscard]] std::string subject_of(std::string_view tenant, Kind kind, std::string_view uri) const;
  static void on_message(__natsConnection* nc, __natsSubscription* sub, __natsMsg* msg, void* closure);
  static void on_subscription_complete(void* closure);
  void track_handler(__natsSubscription* sub);  // pending limits, and the handler counted until its on-complete
  // Checks and decodes one message; delivers it now, or (with `batch`, on the loop) appends it there.
  // One data message, by either receive path: its own (by `reply`) dropped, else checked and delivered
  // (into `batch` when given, else at once).
  void receive(std::string_view subject, std::string_view reply, std::string_view body,
               std::vector<Hub::Forwarded>* batch = nullptr);
  void count(Hub::Delivery d) noexcept;  // a delivery's result into the counters
  void count(Reject r) noexcept { rejected_[static_cast<std::size_t>(r)].fetch_add(1, std::memory_order_relaxed); }
  [[nodiscard]] bool settled() const;  // connected, and the settle delay has passed
  static std::int64_t cost(const Notification& m);
  [[nodiscard]] int pending_bytes_limit() const noexcept;
  void send(const Notification& n);
  void on_flush_request();  // on the loop: send now, or at the end of the batch window
  void release_queue();     // on the loop: sends what is queued, in order, if settled

  BackplaneConfig config_;
  Hub& hub_;
  InterestTable interest_;
  __natsOptions* opts_ = nullptr;
  // Set by the backplane thread (first connect); read by publishing threads.
  std::atomic<__natsConnection*> conn_{nullptr};
  std::unordered_map<std::string, __natsSubscription*> subs_;  // the interest thread's only
  std::atomic<bool> connected_{false};
  std::atomic<std::int64_t> max_payload_{0};  // the server's, read at each (re)connect (mark_connected)
  std::atomic<bool> stopping_{false};
  std::mutex closed_mu_;  // nats.c's closed callback (its last) -> the destructor
  std::condition_variable closed_cv_;
  bool closed_cb_ = false;  // guarded by closed_mu_
  // Subscriptions whose message handler may still run: nats.c's on-complete callback (after
  // the handler's last return) counts each down; the destructor waits for zero before it
  // frees what on_message() uses. Guarded by closed_mu_.
  std::size_t live_handlers_ = 0;
  std::atomic<std::uint64_t> received_{0}, unmatched_{0}, dropped_{0}, sent_{0}, refused_{0};
  // A miss this node observed (disconnect, slow consumer, a received message dropped): re-read
  // hints are due once settled (maybe_send_reread_hints, on the loop's tick).
  std::atomic<bool> reread_pending_{false};
  std::atomic<std::uint64_t> reread_not_before_ms_{0};  // steady clock: no wave before it (a peer's miss)
  std::atomic<std::uint64_t> blind_since_ms_{0};  // steady clock: the disconnect (or the start) while disconnected
  std::uint64_t last_reread_ms_ = 0;              // loop-affine
  std::atomic<std::uint64_t> reread_waves_{0}, reread_hints_{0};
  static constexpr std::uint64_t kRereadIntervalMs = 1000;
  std::array<std::atomic<std::uint64_t>, kRejectReasons> rejected_{};
  // Notifications for other nodes, sent in order by the backplane's loop: at once after a
  // quiet spell, else at the end of the batch window (so a busy node sends several per
  // write, and every hop behind it wakes once for them); held while disconnected and for
  // the settle delay after a (re)connect (the outage policy).
  mutable std::mutex queue_mu_;
  struct Waiting {
    Notification note;
    std::uint64_t since_ms;  // steady clock: the lag metric
  };
  // --nats-outage-buffer-bytes, held by the notifications themselves (declared before the
  // queue: what is still queued gives its bytes back when the queue is destroyed).
  ByteBudget outage_;
  std::deque<Waiting> queue_;
  // --nats-receive-buffer-bytes. Shared: a shard's inbox may still hold a message's
  // reservation when the backplane is gone (the hub and its shards outlive it).
  std::shared_ptr<ByteBudget> receive_budget_;
  bool flush_requested_ = false;  // guarded by queue_mu_: the loop has been asked to send
  std::atomic<std::uint64_t> connected_at_ms_{0};
  std::string node_name_;                    // the connection's name, for the log (set before the thread starts)
  std::atomic<bool> ever_connected_{false};  // the first connect logs "connected", later ones "reconnected"
  bool in_outage_ = false;                   // guarded by queue_mu_: disconnected since the last release (logged at it)
  // The backplane thread's loop: socket IO (NatsIo::Libuv), the interest tick, the stop signal.
  uv_loop_t loop_{};
  uv_timer_t tick_{};
  uv_async_t stop_{};
  uv_async_t flush_{};        // forward() -> the loop: something to send
  uv_timer_t batch_timer_{};  // the end of the batch window
  // --nats-receive loop: created on the loop before the first connect, closed with the loop's
  // handles (close_connection); null on the pool.
  std::unique_ptr<LoopReceive> loop_receive_;
  std::uint64_t last_send_us_ = 0;  // the loop thread's
  bool loop_ready_ = false;
  int last_connect_ = 0;  // the loop thread's: the last natsConnection_Connect status
  std::uint64_t connect_ticks_ = 0;
  // Heartbeats (nats/peers.h). The instance is random per process, set before the thread starts.
  std::uint64_t instance_ = 0;
  std::string heartbeat_subject_;
  std::string own_reply_;  // `_mf.<instance>`, the reply subject of what this process sends
  PeerTable peers_;
  uv_timer_t heartbeat_{};
  std::uint64_t heartbeat_seq_ = 0;              // the loop's
  __natsSubscription* heartbeat_sub_ = nullptr;  // the loop's; nats.c renews it on every reconnect
  std::atomic<std::uint64_t> faults_{0}, heartbeats_sent_{0};
  std::thread thread_;
};

}  // namespace mcpfan::detail::nats

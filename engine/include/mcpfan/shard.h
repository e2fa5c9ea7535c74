#pragma once
/**
 * One worker loop's share of the engine: its subscription index, its output streams and
 * their queues of unwritten notifications, and its inbox of published payloads.
 *
 * Data flow: Hub::publish() posts one PayloadRef per shard (thread-safe); the owning loop
 * drains the inbox, matches each payload against its local index and appends a reference
 * (never a copy) to every matching stream's pending queue; flush() then hands each stream
 * one batch of iovecs for everything that accumulated — one write per stream per wake-up.
 *
 * Slow streams (design §4): while a stream's previous batch is still being written, a newer
 * notification for the same (subscription, method, uri) replaces the unwritten older one
 * (counted as coalesced), found through a per-stream hash table in O(1); past `max_pending_bytes`
 * of unwritten output (notifications and the transport's own bytes alike) the stream is
 * closed (counted).
 *
 * Streams and subscriptions are named by generation-checked handles (slot_map.h): a call
 * with a handle whose stream or subscription has ended is a no-op, never a call on whoever
 * reuses the slot.
 *
 * Order: moodycamel's queue is FIFO per producer only, and two publishes that follow one
 * another (the second sent after the first was acknowledged) may come from different
 * threads. So post() stamps each payload with this shard's sequence number, and drain()
 * delivers strictly in that order: a publish that happened-before another is delivered first.
 *
 * The inbox is bounded (ShardOptions::max_inbox payloads queued and not yet drained) and
 * counted (ShardStats::inbox_full): reserve() takes room all or nothing, so a caller that must
 * refuse (a local publish: 503 before anything is delivered, Hub::publish) or drop (a message
 * from another node, counted by the backplane) decides before it posts. Posted tasks are not
 * counted against it: they are the transports' control messages (a subscription change, a
 * stream to end), each bounded by the connection that asks, and dropping one would leave a
 * stream in a state its client never asked for.
 *
 * Thread affinity: reserve(), unreserve(), post*(), post_task() and stats() are thread-safe;
 * everything else is loop-affine (the loop that drains it). Lifetime: the shard must outlive every
 * thread that posts to it and every sink attached to it; sinks are called only from the
 * loop-affine methods (flush(), drain(), write_done()), never from post().
 */
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mcpfan/index.h"
#include "mcpfan/payload.h"
#include "mcpfan/result.h"
#include "mcpfan/slot_map.h"

namespace mcpfan {

struct StreamTag;
/** An output stream of one shard; generation-checked, so a stale id names nothing. */
using StreamId = Handle<StreamTag>;

/** What became of bytes handed to Shard::send(). */
enum class SendStatus : std::uint8_t {
  Ok,      // queued
  Closed,  // the stream is gone: it had ended, or these bytes took it past max_pending_bytes
};

namespace detail {
struct Chunk;         // engine/src/shard.cc: loop-local refcounted output
struct ShardInbox;    // engine/src/shard.cc: the cross-thread queue and its in-order drain
inline constexpr std::size_t kShardInboxBytes = 704;  // sizeof(ShardInbox), checked in shard.cc
class CoalesceTable;  // engine/src/coalesce_table.h
}  // namespace detail

class Shard;

/**
 * A batch of iovecs for one stream. bufs[0] is left empty for the transport's framing.
 * Destroy it on the shard's loop: it releases loop-local references and hands its vectors
 * back to the shard for the next flush.
 */
class OutBatch {
 public:
  OutBatch() = default;
  OutBatch(OutBatch&& o) noexcept
      : bufs(std::move(o.bufs)), bytes(o.bytes), refs_(std::move(o.refs_)), pool_(std::exchange(o.pool_, nullptr)) {
    o.bytes = 0;
  }
  OutBatch& operator=(OutBatch&&) = delete;
  OutBatch(const OutBatch&) = delete;
  ~OutBatch();

  std::vector<iovec> bufs;
  std::size_t bytes = 0;  // payload bytes in bufs (framing excluded)

 private:
  friend class Shard;
  std::vector<detail::Chunk*> refs_;
  Shard* pool_ = nullptr;
};

enum class CloseReason : std::uint8_t {
  SlowConsumer,  // past max_pending_bytes
  Failed,        // the sink's write_batch threw
  Ended,         // Shard::end_stream(): its owner (another thread, by post_task) ended it
};

/**
 * An optional per-stream hook that numbers what the stream carries (a 2025 session's
 * resumable GET stream; MCP SSE event ids). Loop-affine: called on the shard's loop from
 * drain(), once for each notification matched for its stream, before it is queued.
 * Returns the bytes written before that notification's frame (an SSE `id: ...\n` line), or
 * nullopt to queue nothing for this stream (the journal has recorded it for later). The frame
 * is the payload's plain() encoding: a journal belongs to streams whose subscriptions carry
 * no subscriptionId. It may not call back into the shard (a match is in progress). A stream
 * without one pays nothing: listens, stdio and plain session streams are unchanged.
 */
class StreamJournal {
 public:
  virtual std::optional<std::string> record(const PayloadRef& payload) = 0;

 protected:
  ~StreamJournal() = default;
};

/**
 * Implemented by a transport for each stream it opens. Loop-affine: called on the shard's
 * loop, from flush() (write_batch) and from drain()/flush() (close_requested), never from
 * post() or send(). A sink may call back into its shard (write_done, send, close_stream,
 * even for its own stream) from inside these calls.
 */
class StreamSink {
 public:
  /** Write the batch; call Shard::write_done(id) once it completed or failed. */
  virtual void write_batch(OutBatch&& batch) = 0;
  /**
   * The shard gave up on this stream and has already closed it: its handle names nothing
   * now, so the transport closes its connection and needs no close_stream() (a call with the
   * stale handle would be a harmless no-op). Not called again for this stream.
   */
  virtual void close_requested(CloseReason reason) = 0;

 protected:
  ~StreamSink() = default;
};

struct ShardOptions {
  std::size_t max_pending_bytes = 4u << 20;  // per stream, unwritten bytes before closing it
  std::size_t drain_batch = 256;             // payloads taken from the inbox per dequeue
  std::size_t max_inbox = 65536;             // payloads queued in the inbox and not yet drained
};

/** Counters of one shard. Written by the owning loop, readable from any thread. */
struct ShardStats {
  std::atomic<std::uint64_t> payloads{0};     // payloads taken from the inbox
  std::atomic<std::uint64_t> deliveries{0};   // notifications queued to streams
  std::atomic<std::uint64_t> coalesced{0};    // unwritten notifications replaced by newer ones
  std::atomic<std::uint64_t> slow_closes{0};  // streams closed for exceeding max_pending_bytes
  std::atomic<std::uint64_t> writes{0};       // batches handed to transports
  std::atomic<std::uint64_t> exceptions{0};   // posted tasks or deliveries that threw (caught, counted)
  std::atomic<std::uint64_t> inbox_full{0};   // payloads refused or dropped: the inbox held max_inbox (any thread)
  std::atomic<std::uint64_t> replays{0};          // task states queued to a listen that just named the task
  std::atomic<std::uint64_t> replays_skipped{0};  // publishes of a state replayed already: not sent twice
  std::atomic<std::int64_t> streams{0};
  std::atomic<std::int64_t> subscriptions{0};
};

/** What one subscription listens to. */
struct Filter {
  TenantId tenant = kDefaultTenant;
  std::uint8_t kinds = 0;          // kind_bit() set for each list_changed kind wanted
  std::vector<std::string> uris;   // resources/updated URIs ('/'-terminated = prefix)
  std::vector<std::string> task_ids{};  // notifications/tasks of these tasks

  /** The keys asked for of a keyed kind (uris, task_ids); null for a list_changed kind. */
  [[nodiscard]] const std::vector<std::string>* keys(Kind k) const noexcept {
    return k == Kind::ResourceUpdated ? &uris : k == Kind::TaskStatus ? &task_ids : nullptr;
  }
};

class Shard {
 public:
  explicit Shard(ShardOptions options = {});
  ~Shard();
  Shard(const Shard&) = delete;
  Shard& operator=(const Shard&) = delete;

  /**
   * Reports this shard's index keys as they gain their first and lose their last subscription
   * (the backplane's interest). Set before the shard's loop starts; the listener outlives it.
   */
  void set_key_listener(KeyListener* listener) noexcept { index_.set_key_listener(listener); }

  // ---- thread-safe ----
  /** Called after posting, from the posting thread; must be set before the first post. */
  void set_waker(void (*wake)(void*), void* arg) noexcept { wake_ = wake; wake_arg_ = arg; }
  /**
   * Takes room for `n` payloads in the inbox, all or nothing: false (nothing taken, counted in
   * inbox_full) when they do not fit under max_inbox. Each post_reserved() uses one; room
   * that will not be used goes back by unreserve().
   */
  [[nodiscard]] bool reserve(std::size_t n) noexcept;
  void unreserve(std::size_t n) noexcept;
  /**
   * Posts into room reserve() took. `hold` (optional) is released once this shard has matched
   * the payload: the receive budget's bytes of a message from another node, shared by every
   * shard it went to, so the last one gives them back.
   */
  void post_reserved(PayloadRef payload, std::shared_ptr<void> hold = {});
  /**
   * post_reserved() without the wake-up: the caller posts several and then calls wake() once
   * (Hub::deliver_forwarded(batch): one wake-up per shard for a whole NATS read). Until wake()
   * the payload sits in the inbox unseen by a sleeping loop, so a caller must always follow up.
   */
  void post_reserved_quiet(PayloadRef payload, std::shared_ptr<void> hold = {});
  /** Wakes the owning loop (the waker set_waker() gave), as every post does. */
  void wake() noexcept {
    if (wake_) wake_(wake_arg_);
  }
  void post_bulk_reserved(PayloadRef* payloads, std::size_t n);
  /** reserve() then post_reserved(): false (nothing queued, counted) when the inbox is full. */
  bool post(PayloadRef payload);
  bool post_bulk(PayloadRef* payloads, std::size_t n);
  /** Payloads queued or reserved and not yet drained (at most max_inbox). */
  [[nodiscard]] std::size_t inbox_depth() const noexcept { return inbox_used_.load(std::memory_order_relaxed); }
  /**
   * Runs `task` on the owning loop, in order with payloads: a task posted before a publish
   * runs before that publish is matched (e.g. a subscription change acknowledged to a
   * client on another thread takes effect before any publish the client sends next).
   */
  void post_task(std::function<void()> task);
  [[nodiscard]] const ShardStats& stats() const noexcept { return stats_; }

  // ---- loop-affine ----
  /** Called when a stream becomes due for flush() and none was; lets the loop not block. */
  void set_on_dirty(void (*fn)(void*), void* arg) noexcept { on_dirty_ = fn; on_dirty_arg_ = arg; }
  /**
   * A new stream writing to `sink`; with a `journal`, each notification matched for it
   * goes through journal->record() first (see StreamJournal). Both outlive the stream.
   */
  [[nodiscard]] StreamId open_stream(StreamSink* sink, Framing framing, StreamJournal* journal = nullptr);
  /**
   * Drops the stream's subscriptions and unwritten output. The sink is not called again.
   * No-op for a stale handle (the stream already ended, perhaps with its slot reused).
   */
  void close_stream(StreamId id);
  /**
   * Closes the stream and tells its sink (close_requested(reason)), as when the shard gives
   * up on a stream: how another thread ends a stream it does not own, by post_task() with the
   * stream's generation-checked id (no-op if it ended meanwhile, whoever reused its slot).
   */
  void end_stream(StreamId id, CloseReason reason);
  /**
   * Adds a subscription on a stream; `id_token` is the JSON text of its subscriptionId, or
   * empty for a subscription whose notifications carry none (Payload::plain()). Returns an
   * invalid SubId when the stream has ended.
   */
  [[nodiscard]] SubId subscribe(StreamId stream, const Filter& filter, std::string id_token);
  /** Ends a subscription; no-op for a stale handle. */
  void unsubscribe(SubId sub);
  /**
   * Queues `payload` to one subscription only, as if it had matched (a task's newest state
   * replayed to a listen that just named it). A publish of that same payload matching the
   * subscription later is then skipped, so a state that races the listen arrives once. No-op
   * when stale.
   */
  void replay(SubId sub, const PayloadRef& payload);
  /** Adds or drops one resources/updated URI of a live subscription (no-op when stale). */
  void add_uri(SubId sub, TenantId tenant, std::string_view uri);
  void remove_uri(SubId sub, TenantId tenant, std::string_view uri);
  /**
   * Queues bytes for the stream, ordered with its notifications (acks, results), under the
   * same max_pending_bytes bound. Closed when the stream had ended, or when these bytes took
   * it past the bound: then the stream is closed here (counted as a slow close) and, since
   * the caller is the transport itself, close_requested() is not called; the caller closes.
   */
  [[nodiscard]] SendStatus send(StreamId stream, std::string bytes);
  /** Queues an SSE keepalive comment on every SSE stream idle since `idle_since_ms`. */
  void keepalive(std::uint64_t now_ms, std::uint64_t interval_ms);
  /** Matches up to max_batches inbox batches; returns true if payloads remain queued. */
  bool drain(std::size_t max_batches = 8);
  /** Hands each dirty stream not already writing one batch of its pending output. */
  void flush(std::uint64_t now_ms = 0);
  /** The transport finished (or failed) the stream's last batch. */
  void write_done(StreamId id);

  /** True while some stream waits for flush(). */
  [[nodiscard]] bool has_dirty() const noexcept { return !dirty_.empty(); }
  [[nodiscard]] std::size_t subscription_count() const noexcept { return index_.subscription_count(); }
  [[nodiscard]] std::size_t stream_count() const noexcept { return streams_.size(); }
  /** Unwritten bytes queued for the stream (0 for a stale handle). */
  [[nodiscard]] std::size_t pending_bytes(StreamId id) const noexcept {
    const Stream* s = streams_.get(id);
    return s ? s->pending_bytes : 0;
  }
  [[nodiscard]] bool is_open(StreamId id) const noexcept { return streams_.contains(id); }

 private:
  friend class OutBatch;
  void recycle(std::vector<iovec>&& bufs, std::vector<detail::Chunk*>&& refs) noexcept;
  struct Pending {
    detail::Chunk* chunk;  // nullptr: a coalesced-away entry (tombstone), skipped by flush()
    detail::Chunk* id;     // subscription id token; nullptr for plain bytes
  };
  struct Stream {
    // Out of line: the coalescing table's type is private to shard.cc.
    Stream(StreamSink* sink, Framing framing, StreamJournal* journal);
    Stream(Stream&&) noexcept;
    Stream& operator=(Stream&&) noexcept;
    ~Stream();
    // Laid out so the journal pointer costs no size: 96 bytes, as before it (a SlotMap slot).
    StreamSink* sink;
    StreamJournal* journal;  // null for most streams
    std::size_t pending_bytes = 0;
    std::uint64_t last_write_ms = 0;
    std::uint32_t tombstones = 0;  // coalesced-away entries still in `pending`
    Framing framing;
    bool writing = false;
    bool dirty = false;
    std::vector<Pending> pending;
    // While a batch is being written: where each queued notification sits in `pending`, so
    // a newer one for the same key replaces it in O(1). Made for streams that fall behind.
    std::unique_ptr<detail::CoalesceTable> coalesce;
    std::vector<SubId> subs;
  };
  struct Sub {
    StreamId stream;
    detail::Chunk* id = nullptr;
  };
  void enqueue(StreamId sid, Stream& s, detail::Chunk* chunk, detail::Chunk* id);
  void coalesce(Stream& s, detail::Chunk* chunk, detail::Chunk* id);
  void compact(Stream& s);
  void mark_dirty(StreamId sid, Stream& s);
  void deliver(const PayloadRef& p);
  /**
   * Queues `p` to the subscription's stream (deliver()'s one match, replay()'s only one),
   * sharing `shared` (made on first use) between plain streams; false when a journal refused
   * it. Counts nothing.
   */
  bool deliver_to(const Sub& r, const PayloadRef& p, detail::Chunk*& shared);
  /** Whether `p` was replayed to `sub` (and is skipped now): see replay(). */
  bool was_replayed(SubId sub, const Payload* p);
  template <class Item>  // detail::ShardInbox::Item, private to shard.cc
  void run(Item& item) noexcept;
  void close_slow(StreamId sid);

  /**
   * The inbox (moodycamel's queue, the items that arrived ahead of a gap, the drain buffer)
   * lives in place, in storage sized here, so that post() follows no pointer and its types
   * stay private to shard.cc (which checks at compile time that it fits).
   */
  [[nodiscard]] detail::ShardInbox& inbox() noexcept;  // shard.cc: std::launder needs the complete type

  ShardOptions options_;
  ShardStats stats_;
  alignas(std::max_align_t) std::byte inbox_storage_[detail::kShardInboxBytes];
  std::atomic<std::uint64_t> post_seq_{0};
  std::atomic<std::size_t> inbox_used_{0};  // reserved + queued payloads; drain() gives them back
  std::uint64_t next_seq_ = 0;  // the next sequence number to deliver
  void (*wake_)(void*) = nullptr;
  void* wake_arg_ = nullptr;
  void (*on_dirty_)(void*) = nullptr;
  void* on_dirty_arg_ = nullptr;

  SubscriptionIndex index_;
  std::vector<Sub> subs_;  // by SubId::index, for the subscriptions index_ holds
  // Payloads replay() queued, by SubId::index, until the same payload's publish reaches the
  // subscription or a newer state of its key replaces it. Bounded by the task ids per listen.
  std::unordered_map<std::uint32_t, std::vector<PayloadRef>> replayed_;
  SlotMap<Stream, StreamTag> streams_;
  std::vector<StreamId> dirty_;
  std::vector<StreamId> flushing_;
  std::vector<StreamId> slow_;
  std::vector<std::uint32_t> moved_;  // compact()'s old -> new positions, reused
  // Vectors of finished batches, reused so a flush allocates nothing per stream.
  std::vector<std::vector<iovec>> free_bufs_;
  std::vector<std::vector<detail::Chunk*>> free_refs_;
  detail::Chunk* keepalive_chunk_;
};

}  // namespace mcpfan

#pragma once
/**
 * The engine's entry point: a set of shards (one per worker loop), the tenant table, and
 * the thread-safe publish operation that hands each shard one reference to an encoded
 * payload.
 *
 * Embedding: create a Hub, give each shard to a loop (set_waker so a post wakes it; the
 * loop calls drain() and flush()), attach streams with Shard::open_stream/subscribe on
 * their own loop, and call publish() from any thread.
 *
 * Two ways in, one per origin:
 *  - publish(notes): what this node accepts (the transports' one entry: /v1/publish). Each
 *    notification has its local payload (or none: no client of its tenant here) and, with a
 *    backplane, its copy for other nodes. It is debounced, fanned out here, and forwarded.
 *    publish(payload) and publish(payloads) are the same for payloads that stay on this node,
 *    for hosts that encode their own (mcp.h): no Notification is built, and a single payload
 *    takes no allocation at all (the targeted publish's cost: docs/performance.md).
 *  - deliver_forwarded(): what another node accepted (and debounced): never debounced nor
 *    forwarded again, never refused in part, and its result says why it went nowhere.
 * The counters: published() counts the notifications fanned out here, no_audience() those
 * accepted that have an audience nowhere (no local payload, not forwarded).
 *
 * Full inboxes (ShardOptions::max_inbox): a publish accepted on this node (publish()) is
 * refused whole, before anything is delivered, when an inbox it goes to cannot take it: it
 * returns false with closed() still false, and the caller answers 503 with Retry-After
 * (counted: refused_full()). What cannot be refused any more is dropped where the inbox is
 * full, counted by that shard (ShardStats::inbox_full): the debouncer's fan-outs, decided
 * earlier, and a message from another node (deliver_forwarded() says so; the backplane
 * counts it by reason).
 *
 * Thread affinity: publish(), close(), tenants() and the counters are thread-safe; shard(i)
 * returns a shard whose loop-affine methods belong to the loop that owns it.
 *
 * Lifetime: close() ends publishing: it waits for publishes in progress, fans out what the
 * debouncer holds, and from then on publish() returns false and touches no shard. So a host
 * closes the hub before it stops the loops that drain the shards, and destroys the hub only
 * once no thread can call it any more (after close(), a publish is refused, not undefined;
 * after destruction it is undefined).
 */
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "mcpfan/debouncer.h"
#include "mcpfan/index.h"
#include "mcpfan/local_interest.h"
#include "mcpfan/notification.h"
#include "mcpfan/payload.h"
#include "mcpfan/shard.h"
#include "mcpfan/task_states.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

class Hub {
 public:
  explicit Hub(std::size_t shards, ShardOptions options = {}, std::size_t max_tenants = 10000);
  ~Hub();
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  [[nodiscard]] std::size_t shard_count() const noexcept { return shards_.size(); }
  [[nodiscard]] Shard& shard(std::size_t i) noexcept { return *shards_[i]; }
  [[nodiscard]] TenantTable& tenants() noexcept { return tenants_; }

  /**
   * Sets a minimum interval between fan-outs of one (tenant, method, uri) (0 = off, the
   * default). Call once, before publishing starts (it is not synchronised with publish()).
   */
  void set_debounce(std::chrono::milliseconds interval);
  /**
   * Interest-aware dispatch: from now on a publish is posted only to the shards that hold a
   * subscription it may match (LocalInterest), instead of to every shard. Call once, before
   * any shard has subscriptions or its loop runs. `next` (may be null) also hears every
   * shard's key changes (the NATS backplane's interest); it outlives the shards' use of it.
   */
  void route_by_interest(KeyListener* next = nullptr);
  /**
   * Stops passing key changes to the listener given to route_by_interest() (before that
   * listener is destroyed, once no loop changes subscriptions any more).
   */
  void detach_key_listener() noexcept;
  /** The routing table, or null before route_by_interest(): reserve() a shard ahead of a key it is about to get. */
  [[nodiscard]] LocalInterest* interest() noexcept { return interest_.get(); }
  /**
   * The newest state of each task seen here (task_states.h): publish(notes, tasks) keeps each
   * state of a body it accepts, a node receiving one from another node keeps it, and a listen
   * naming the task replays it. publish(payload) does not: a payload alone does not say its
   * tenant's name or TTL.
   */
  [[nodiscard]] TaskStates& task_states() noexcept { return task_states_; }
  /** The debouncer, if set_debounce() turned one on (for its counters). */
  [[nodiscard]] const Debouncer* debouncer() const noexcept { return debouncer_.get(); }

  /**
   * Where notifications for other nodes go (a backplane). Called after their local fan-out,
   * in publish order, from the publishing thread or the debouncer's, with the notifications
   * (their `local` payloads moved out); it sends those that are forwarded(). Set once,
   * before publishing starts; it must stay callable until close() returns (close() fans out
   * what the debouncer holds).
   */
  using Forwarder = std::function<void(std::vector<Notification>&)>;
  void set_forwarder(Forwarder forwarder) { forwarder_ = std::move(forwarder); }

  /**
   * Fans one payload out to every shard (with routing: those that may match): one queue push
   * and one wake-up per shard. False after close(), or when an inbox is full (nothing posted).
   */
  [[nodiscard]] bool publish(const PayloadRef& payload);
  /** Same for several payloads, in order, with one wake-up per shard; all or nothing. */
  [[nodiscard]] bool publish(const std::vector<PayloadRef>& payloads);
  /**
   * A publish accepted on this node (the transports' entry): debounced here (if on), then
   * each notification's `local` payload is fanned out and the forwarded ones go to the
   * forwarder. False after close(), or (without a debouncer) when an inbox is full: then
   * nothing is delivered here nor forwarded, and nothing is counted but refused_full().
   */
  [[nodiscard]] bool publish(std::vector<Notification> notes);
  /**
   * The same for a decoded body that may hold task notifications (PublishDecoder's
   * `notifications` and `tasks`): each task's state is kept in task_states() before the
   * fan-out, so a listen that subscribes meanwhile finds it (its shard then skips the copy it
   * also matches), and forgotten again when the publish is refused: nothing of a refused body
   * stays. Every accepted notifications/tasks goes through here.
   */
  [[nodiscard]] bool publish(std::vector<Notification> notes, const std::vector<TaskState>& tasks);
  /** What became of a payload another node accepted. */
  enum class Delivery : std::uint8_t {
    Posted,     // queued to every shard that may match
    Unmatched,  // no loop holds a subscription it may match (a coarse or folded subject's over-match)
    InboxFull,  // a shard it was for had a full inbox: posted nowhere
    Closed,     // after close()
  };
  /**
   * A payload another node accepted (and debounced): fanned out here, never debounced again.
   * `hold` (optional) is released once every shard it was posted to has matched it (the
   * receive budget's bytes), or at once when it is not posted.
   */
  [[nodiscard]] Delivery deliver_forwarded(PayloadRef payload, std::shared_ptr<void> hold = {});
  /** One payload of a batch from other nodes, and (filled in) what became of it. */
  struct Forwarded {
    PayloadRef payload;
    std::shared_ptr<void> hold;
    Delivery result = Delivery::Closed;
  };
  /**
   * deliver_forwarded() for each of `batch`, in order, with one wake-up per shard for the whole
   * batch instead of one per payload (the NATS backplane's receive on its loop: a read's
   * messages together). Each item's `result` says what became of it, as deliver_forwarded()'s
   * would. Thread-safe; the items' payloads and holds are moved out.
   */
  void deliver_forwarded(std::vector<Forwarded>& batch);
  /**
   * "This may have changed, re-read it", to every local subscription (with routing on: what
   * interest() holds): a notifications/resources/updated for each resource key (a prefix key's
   * hint names the prefix) and one list_changed per tenant and flagged kind, each with
   * params._meta["mcpfan/reread"] = true. Task keys get none (their newest kept state is the
   * hint a task listen needs, replayed when it opens). Delivered here only, never forwarded or
   * debounced. For a node that may have missed other nodes' notifications (a backplane
   * outage). Returns the hints posted, and those a full shard inbox refused (owed still: the
   * caller sends a wave again); none without routing by interest.
   */
  struct RereadWave {
    std::size_t posted = 0;
    std::size_t refused = 0;
  };
  RereadWave send_reread_hints();
  [[nodiscard]] std::uint64_t reread_hints() const noexcept { return reread_hints_.load(std::memory_order_relaxed); }
  /** Refuses publishes from now on; returns once none is in progress and the debouncer's held updates went out.
   * Idempotent. */
  void close();
  [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }

  [[nodiscard]] std::uint64_t published() const noexcept { return published_.load(std::memory_order_relaxed); }
  /** Notifications publish(notes) accepted for a tenant with no clients here, not forwarded: nothing encoded. */
  [[nodiscard]] std::uint64_t no_audience() const noexcept { return no_audience_.load(std::memory_order_relaxed); }
  /** Publishes refused whole because a shard inbox was full. */
  [[nodiscard]] std::uint64_t refused_full() const noexcept { return refused_full_.load(std::memory_order_relaxed); }

 private:
  enum class Fanout : std::uint8_t { Posted, Unmatched, Full };
  /**
   * Posts to every shard, or with routing only to those that may match. With `refuse`, room
   * is reserved in each inbox first and nothing is posted unless all of it fits (Full); else a
   * full shard misses it (counted there). `nowhere` (optional) gets how many matched no shard.
   */
  Fanout fan_out(const std::vector<PayloadRef>& payloads, bool refuse, std::size_t* nowhere = nullptr);
  // `woken` (optional): post quietly and mark the shards posted to, for the caller to wake() once.
  Fanout post_one(const PayloadRef& payload, bool refuse, const std::shared_ptr<void>& hold = {},
                  ShardSet* woken = nullptr);
  void targets(const PayloadRef& payload, ShardSet& where);
  /** Local fan-out of each notification's payload, then the forwarded ones to the forwarder; false if refused (Full).
   */
  bool send_out(std::vector<Notification>& notes, bool refuse);
  class Reporter;

  TenantTable tenants_;
  TaskStates task_states_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<std::uint64_t> published_{0};
  std::atomic<std::uint64_t> reread_hints_{0};
  std::atomic<std::uint64_t> no_audience_{0};
  std::atomic<std::uint64_t> refused_full_{0};
  std::atomic<bool> closed_{false};
  std::atomic<std::uint32_t> publishing_{0};  // publishes between their closed_ check and their last post
  Forwarder forwarder_;
  std::unique_ptr<LocalInterest> interest_;
  std::vector<std::unique_ptr<Reporter>> reporters_;  // one per shard: its key changes into interest_
  std::unique_ptr<Debouncer> debouncer_;  // declared last: its thread stops first
};

}  // namespace mcpfan

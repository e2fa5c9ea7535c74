#pragma once
// The backplane's receive on its own loop (--nats-receive loop, the default with --nats-io libuv):
// a message from another node is taken from nats.c on the thread that parsed it, the backplane's
// loop, instead of being queued to nats.c's delivery thread, and the messages of one loop
// iteration (one socket read) go to the worker shards together: one wake-up per shard per read
// (Hub::deliver_forwarded(batch)) instead of one per message. A remote event then crosses two
// threads on the receiving node (the backplane's loop, the worker), not three (measured:
// docs/performance.md "Receive on the loop").
//
// How. nats.c 3.4.1 has no public inline delivery: an asynchronous subscription's messages always
// go through a delivery thread, a synchronous one's wait in its own queue, and nothing says which
// of 19,000 subscriptions a read filled. What it does have is a per-connection message filter,
// natsConn_setFilterWithClosure (exported by libnats.so, declared only in nats.c's private
// conn.h: its test hook), which nats.c calls on the parsing thread for every message of a known
// subscription before it queues the message; a filter that takes the message (sets it to null)
// ends nats.c's handling of it. This file uses that hook and nothing else of nats.c's insides.
// The symbol is weak, and trusted only from a libnats of major version 3: another leaves
// available() false, and the backplane uses
// nats.c's delivery pool as before (it logs which). The subscriptions stay asynchronous, so
// whatever the filter leaves (below) still reaches their handler.
//
// What is taken: only messages whose subject has the shape of the backplane's data subjects,
// `<prefix>.v1.<tenant>.r.…`, `.l.…` or `.t.…` (nats/subjects.h), and only on the loop's thread
// (a message nats.c parses elsewhere, e.g. during a reconnect's handshake, goes the old way).
// Any other subscription of the connection (a heartbeat, a control subject) is left to nats.c.
//
// nats.c's garbage collector. natsMsg_Destroy() does not free a received message: it queues it
// to nats.c's collector thread and wakes that thread if it sleeps, i.e. once per message at
// any moderate rate (one more thread wake-up per received message, found by counting each
// thread's context switches). So a taken message is kept (it is decoded by then; only its
// memory is held) and the held ones are destroyed together, at the check phase once the oldest
// has waited kDestroyAfterMs (the backplane's 10 ms interest tick wakes the loop at least that
// often) or kMaxHeld / kMaxHeldBytes are reached: the collector wakes about once per 10 ms
// instead of once per message.
//
// Bounds. nats.c parses one socket read (its ioBufSize, 32 KiB) per readable event and returns
// to the loop, so one iteration's batch is at most one read's messages; it is handed over at the
// loop's check phase (right after the poll phase that read), and early whenever it reaches
// kMaxBatch. A busy connection therefore costs at most one read's work per iteration: the loop's
// timers, the stop signal and the sends interleave with it. What is received and not yet handed
// over is in the receive budget (the hold of each item, taken in `take`), and nats.c's pending
// queue ahead of a delivery thread is not used at all.
//
// Thread affinity: all of it on the loop's thread: the constructor, attach(), detach(),
// close(), the filter (nats.c calls it from natsConnection_ProcessReadEvent, which the libuv
// adapter runs on the loop) and the check handle's callback; `take` and `deliver` are called
// there. Lifetime: owned by the backplane, created on its loop before the first connect;
// detach() before natsConnection_Close() (nothing is taken after it), close() before the loop
// is closed (it closes the check handle; the object must stay alive until the loop has run the
// handle's close, i.e. until uv_run returns). The connection and `take`/`deliver`'s targets
// outlive it.
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <uv.h>

#include "mcpfan/hub.h"

struct __natsConnection;
struct __natsMsg;

namespace mcpfan::detail::nats {

class LoopReceive {
 public:
  /** Decodes one message into `batch` (or drops and counts it); on the loop; must not throw. `reply`: "" if none. */
  using Take = std::function<void(std::string_view subject, std::string_view reply, std::string_view body,
                                  std::vector<Hub::Forwarded>& batch)>;
  /** Hands `batch` to the hub and counts each item's result; on the loop; must not throw. */
  using Deliver = std::function<void(std::vector<Hub::Forwarded>& batch)>;
  static constexpr std::size_t kMaxBatch = 256;
  static constexpr std::uint64_t kDestroyAfterMs = 10;
  static constexpr std::size_t kMaxHeld = 4096;
  static constexpr std::size_t kMaxHeldBytes = 4u << 20;

  /** Whether the loaded libnats has the hook (else the backplane keeps nats.c's delivery pool). */
  [[nodiscard]] static bool available() noexcept;
  /** Whether `subject` has the shape of a data subject under `prefix` (what the filter takes). */
  [[nodiscard]] static bool is_data_subject(std::string_view prefix, std::string_view subject) noexcept;

  /** On the loop's thread (recorded: the filter takes messages only there). Starts the check handle. */
  LoopReceive(uv_loop_t* loop, std::string prefix, Take take, Deliver deliver);
  /** Frees what is still held (after the loop ended; natsMsg_Destroy is thread-safe). */
  ~LoopReceive() { destroy_held(); }
  LoopReceive(const LoopReceive&) = delete;
  LoopReceive& operator=(const LoopReceive&) = delete;

  /** Installs the filter on `nc` (once per connection object; it survives reconnects). */
  void attach(__natsConnection* nc);
  /** Hands over what is batched and removes the filter: call before natsConnection_Close(). */
  void detach(__natsConnection* nc);
  /** Closes the check handle (after detach()). */
  void close();
  /** Messages taken from nats.c, and batches handed over (for tests and the benchmark notes). */
  [[nodiscard]] std::uint64_t taken() const noexcept { return taken_; }
  [[nodiscard]] std::uint64_t batches() const noexcept { return batches_; }

 private:
  static void filter(__natsConnection* nc, __natsMsg** msg, void* closure);
  void flush();
  void destroy_held();

  uv_loop_t* loop_;
  std::string prefix_;
  Take take_;
  Deliver deliver_;
  std::thread::id loop_thread_;
  uv_check_t check_{};
  std::vector<Hub::Forwarded> batch_;  // what this iteration's read brought, not yet handed over
  std::vector<__natsMsg*> held_;       // taken and decoded, to be destroyed together (nats.c's collector)
  std::size_t held_bytes_ = 0;
  std::uint64_t held_since_ms_ = 0;  // uv_now() when the oldest of held_ was taken
  std::uint64_t taken_ = 0;
  std::uint64_t batches_ = 0;
};

}  // namespace mcpfan::detail::nats

#pragma once
// Batched socket sends through io_uring, for one worker loop. Without it every stream batch
// is one writev; with it the batches of one flush are queued as sendmsg SQEs and submitted
// together, 256 per io_uring_enter (measured in bench/ceiling.cc at 0.85x the CPU of one
// writev each, 10,000 loopback streams).
//
// It is a batched syscall, not a second write path: every send is MSG_DONTWAIT, so the kernel
// completes each one inside the submitting io_uring_enter (what fits the socket buffer is
// sent, the rest is -EAGAIN or a short count), and flush() waits for all of them before it
// returns. What a socket did not take is then queued on the libuv stream as one uv_write, as
// batch_write.h does after a short uv_try_write. So libuv's own write queue stays the only
// queue, and ordering needs one rule only: nothing else may be written to a stream, and no
// stream closed or shut down, while a send of it sits queued here. The stream's writer
// (net/socket.h) keeps the rule: what comes after a queued send waits in the socket until the
// ring hands the send over (QueuedBatch::handed_over). The worker calls flush() after each
// shard flush, and queue() starts the worker's idle handle so the loop does not block before
// that. A stream is only queued here while libuv has nothing queued for it (else it goes
// behind libuv's queue).
//
// Loop-affine: created, used and destroyed on the worker's own thread (the ring is set up
// single-issuer). Streams must outlive their queued sends, which flush() ends.
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mcpfan::detail {

struct QueuedBatch;

/** Counters of the rings of all workers; written by each loop, read by /metrics. */
struct SendRingStats {
  std::atomic<std::uint64_t> sends{0};        // sendmsg SQEs completed
  std::atomic<std::uint64_t> submits{0};      // io_uring_enter calls that submitted them
  std::atomic<std::uint64_t> short_sends{
      0};  // of the sends: the rest went to libuv (the socket was full, or > IOV_MAX pieces)
  std::atomic<std::int64_t> rings{0};         // worker loops with a ring now
  std::atomic<std::uint64_t> exceptions{0};   // thrown by completion callbacks (caught, the rest went on)
};

class SendRing {
 public:
  static constexpr unsigned kMaxEntries = 4096;

  /**
   * A ring of `entries` (1..kMaxEntries) SQEs, or null when the kernel refuses io_uring (too
   * old, or a seccomp filter): `why` then says what failed, and sends use libuv writes.
   * `on_queued(arg)` is called when a send is queued into an empty ring, so the owner's loop
   * runs flush() before it blocks (the worker starts its idle handle).
   */
  static std::unique_ptr<SendRing> create(unsigned entries, SendRingStats& stats, void (*on_queued)(void*), void* arg,
                                          std::string* why);
  ~SendRing();
  SendRing(const SendRing&) = delete;
  SendRing& operator=(const SendRing&) = delete;

  /**
   * Makes room for one send (a flush when the ring is full) and returns the fd of `stream`
   * when it may be sent on through the ring now: it is open and libuv has no write of it
   * queued. Otherwise -1, and the caller writes through libuv (behind what is queued).
   */
  [[nodiscard]] int reserve(const uv_stream_t* stream);

  /**
   * Right after reserve() gave `fd` for `stream`: queues q's iovecs (`bufs`, `nbufs`, which q
   * keeps alive) as one sendmsg. Runs no callback. When it completes, in a later flush(),
   * `q->req` is passed to `on_written` with 0 (all sent) or a libuv error, or, when the socket
   * took only part, given to uv_write for the rest with `on_written` as that write's callback.
   */
  void queue(int fd, uv_stream_t* stream, QueuedBatch* q, uv_buf_t* bufs, unsigned nbufs, uv_write_cb on_written);

  /**
   * Submits every queued send and completes each (callbacks run here; they may queue and
   * flush again). Cheap when nothing is queued: call it before any other write to a stream.
   */
  void flush();

  [[nodiscard]] bool empty() const noexcept { return queued_ == 0; }

 private:
  struct Ring;
  SendRing(std::unique_ptr<Ring> ring, SendRingStats& stats, void (*on_queued)(void*), void* arg) noexcept;
  void complete(QueuedBatch* q, int res);

  std::unique_ptr<Ring> ring_;
  SendRingStats& stats_;
  void (*on_queued_)(void*);
  void* arg_;
  unsigned queued_ = 0;  // SQEs prepared, not yet submitted
  std::vector<std::pair<QueuedBatch*, int>> spare_;  // flush()'s completion list, kept between flushes
};

}  // namespace mcpfan::detail

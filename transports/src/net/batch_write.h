#pragma once
// Writing one shard batch to a libuv stream, for every transport that frames into a stream
// (SSE over HTTP, stdio lines over a pipe or socket). Most batches fit the socket buffer, so
// they are written at once with uv_try_write: a completed uv_write costs a request, a
// deferred callback and an epoll re-arm (measured in a 10k-stream burst), uv_try_write the
// writev alone. uv_try_write refuses (UV_EAGAIN) while earlier writes are queued, so order
// is kept. Only what the stream does not take is queued, as one uv_write. With the worker's
// SendRing (send_ring.h) the batch is queued there instead, to go out with the others of its
// flush in one io_uring_enter; the rest of a short send then goes to uv_write the same way.
// Loop-affine.
#include <sys/socket.h>
#include <uv.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "mcpfan/shard.h"

namespace mcpfan::detail {

class SendRing;

/** The rest of a batch, queued: the uv_write_t is the first member, so a callback casts back. */
struct QueuedBatch {
  uv_write_t req;
  OutBatch batch;
  char frame[24];  // the framing slot's bytes (bufs[0]), which the caller's stack does not keep
  // A send queued in a SendRing: what it completes with.
  msghdr msg{};
  uv_stream_t* stream = nullptr;
  uv_write_cb on_written = nullptr;
  uv_buf_t* bufs = nullptr;
  unsigned nbufs = 0;
  std::uint32_t tag = 0;  // the writer's own mark, given back with the completion
  // Bytes the batch owns instead of shard buffers (a TLS socket's records): `owned_buf` points
  // into them. The object is never moved once made, so a short string's inline bytes stay put.
  std::string owned{};
  uv_buf_t owned_buf{};
  // Called by the ring once the batch is off it (sent whole, failed, or the rest given to
  // uv_write), before on_written: what its writer held back behind it may follow now.
  void (*handed_over)(QueuedBatch*) = nullptr;

  /** In the write callback: the batch whose write completed. Frees it. */
  static void release(uv_write_t* req) noexcept { delete reinterpret_cast<QueuedBatch*>(req); }
};

enum class BatchWrite : std::uint8_t {
  Written,  // all of it went out now
  Queued,   // the rest waits in a uv_write (or the ring) whose callback gets `data` in req->data
  Failed,   // the stream is broken: close it
};

/**
 * Writes `batch` to `stream`. `frame` fills the batch's framing slot (bufs[0]); when empty the
 * slot is skipped (stdio lines need none). At most sizeof(QueuedBatch::frame) bytes. With a
 * `ring` (a socket stream only: it sends with sendmsg) the batch is queued there while the
 * stream has nothing queued in libuv; the result is then Queued.
 */
[[nodiscard]] BatchWrite write_batch_to(uv_stream_t* stream, OutBatch&& batch, std::string_view frame, void* data,
                                        uv_write_cb on_written, SendRing* ring = nullptr);

/** Where write_batch_to queued a batch, and what the queued one carries (net/socket.h uses it). */
struct BatchRoute {
  std::uint32_t tag = 0;
  void (*handed_over)(QueuedBatch*) = nullptr;
  bool in_ring = false;  // set: the batch waits in the ring (handed_over will be called)
};
[[nodiscard]] BatchWrite write_batch_to(uv_stream_t* stream, OutBatch&& batch, std::string_view frame, void* data,
                                        uv_write_cb on_written, SendRing* ring, BatchRoute& route);

/** Queues `bytes` (encrypted records) in `ring` as one send when reserve() allows: false, and `bytes` untouched,
 * when it does not (the caller then writes through libuv). `route` as above; set in_ring when queued. */
[[nodiscard]] bool queue_bytes_in_ring(uv_stream_t* stream, std::string& bytes, void* data, uv_write_cb on_written,
                                       SendRing& ring, BatchRoute& route);

/** Prepares the whole of `batch` (with `frame` in its slot, as above) as one queued write, not yet issued. */
[[nodiscard]] QueuedBatch* prepare_queued_batch(OutBatch&& batch, std::string_view frame, void* data);

}  // namespace mcpfan::detail

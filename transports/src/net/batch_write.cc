#include "net/batch_write.h"

#include <cstddef>
#include <cstring>

#include "net/send_ring.h"

namespace mcpfan::detail {

// Shard batches are iovecs; libuv documents uv_buf_t as iovec-compatible on Unix.
static_assert(sizeof(uv_buf_t) == sizeof(iovec) && offsetof(uv_buf_t, base) == offsetof(iovec, iov_base) &&
              offsetof(uv_buf_t, len) == offsetof(iovec, iov_len));

BatchWrite write_batch_to(uv_stream_t* stream, OutBatch&& batch, std::string_view frame, void* data,
                          uv_write_cb on_written, SendRing* ring) {
  BatchRoute route;
  return write_batch_to(stream, std::move(batch), frame, data, on_written, ring, route);
}

QueuedBatch* prepare_queued_batch(OutBatch&& batch, std::string_view frame, void* data) {
  const std::size_t first = frame.empty() ? 1 : 0;
  auto* q = new QueuedBatch{{}, std::move(batch), {}};
  q->req.data = data;
  q->bufs = reinterpret_cast<uv_buf_t*>(q->batch.bufs.data()) + first;
  q->nbufs = static_cast<unsigned>(q->batch.bufs.size() - first);
  if (!frame.empty()) {
    std::memcpy(q->frame, frame.data(), frame.size());
    q->bufs[0] = uv_buf_init(q->frame, static_cast<unsigned>(frame.size()));
  }
  return q;
}

bool queue_bytes_in_ring(uv_stream_t* stream, std::string& bytes, void* data, uv_write_cb on_written, SendRing& ring,
                         BatchRoute& route) {
  int fd = ring.reserve(stream);
  if (fd < 0) return false;
  auto* q = new QueuedBatch{};
  q->req.data = data;
  q->tag = route.tag;
  q->handed_over = route.handed_over;
  q->owned = std::move(bytes);
  bytes.clear();
  q->owned_buf = uv_buf_init(q->owned.data(), static_cast<unsigned>(q->owned.size()));
  route.in_ring = true;
  ring.queue(fd, stream, q, &q->owned_buf, 1, on_written);
  return true;
}

BatchWrite write_batch_to(uv_stream_t* stream, OutBatch&& batch, std::string_view frame, void* data,
                          uv_write_cb on_written, SendRing* ring, BatchRoute& route) {
  const std::size_t first = frame.empty() ? 1 : 0;
  if (int fd = ring ? ring->reserve(stream) : -1; fd >= 0) {
    auto* q = new QueuedBatch{{}, std::move(batch), {}};
    q->req.data = data;
    q->tag = route.tag;
    q->handed_over = route.handed_over;
    route.in_ring = true;
    auto* bufs = reinterpret_cast<uv_buf_t*>(q->batch.bufs.data()) + first;
    if (!frame.empty()) {
      std::memcpy(q->frame, frame.data(), frame.size());
      bufs[0] = uv_buf_init(q->frame, static_cast<unsigned>(frame.size()));
    }
    ring->queue(fd, stream, q, bufs, static_cast<unsigned>(q->batch.bufs.size() - first), on_written);
    return BatchWrite::Queued;
  }
  char local[sizeof(QueuedBatch::frame)];
  if (!frame.empty()) {
    std::memcpy(local, frame.data(), frame.size());
    batch.bufs[0] = iovec{local, frame.size()};
  }
  auto* bufs = reinterpret_cast<uv_buf_t*>(batch.bufs.data()) + first;
  auto nbufs = static_cast<unsigned>(batch.bufs.size() - first);
  int done = uv_try_write(stream, bufs, nbufs);
  if (done < 0 && done != UV_EAGAIN) return BatchWrite::Failed;
  std::size_t written = done > 0 ? static_cast<std::size_t>(done) : 0;
  unsigned i = 0;
  while (i < nbufs && written >= bufs[i].len) written -= bufs[i++].len;
  if (i == nbufs) return BatchWrite::Written;  // the batch's references go with it

  // The vector's heap buffer moves with the batch, so `bufs` stays valid; only the frame,
  // which lives on this stack, is copied into the request.
  auto* q = new QueuedBatch{{}, std::move(batch), {}};
  q->req.data = data;
  q->tag = route.tag;
  if (!frame.empty()) {
    std::memcpy(q->frame, local, frame.size());
    if (i == 0) bufs[0].base = q->frame;
  }
  bufs[i].base += written;
  bufs[i].len -= written;
  if (uv_write(&q->req, stream, bufs + i, nbufs - i, on_written) != 0) {
    delete q;
    return BatchWrite::Failed;
  }
  return BatchWrite::Queued;
}

}  // namespace mcpfan::detail

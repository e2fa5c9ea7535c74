#include "net/send_ring.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "net/batch_write.h"

namespace mcpfan::detail {

struct SendRing::Ring {
  io_uring ring{};
  bool set_up = false;  // io_uring_queue_init succeeded: there is a ring to exit
  ~Ring() {
    if (set_up) io_uring_queue_exit(&ring);
  }
};

std::unique_ptr<SendRing> SendRing::create(unsigned entries, SendRingStats& stats, void (*on_queued)(void*), void* arg,
                                           std::string* why) {
  if (entries < 1 || entries > kMaxEntries) {
    if (why) *why = "io_uring ring size " + std::to_string(entries) + " is outside 1.." + std::to_string(kMaxEntries);
    return nullptr;
  }
  auto ring = std::make_unique<Ring>();
  // One thread submits, and completions are run by it when it asks (no task-work interrupts):
  // the setup the ceiling measured cheapest. SUBMIT_ALL: one failing SQE does not hold back
  // the rest. Older kernels refuse these flags; a plain ring works the same, a little dearer.
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;
  int rc = io_uring_queue_init_params(entries, &ring->ring, &p);
  if (rc == -EINVAL) {
    p = io_uring_params{};
    rc = io_uring_queue_init_params(entries, &ring->ring, &p);
  }
  if (rc < 0) {
    if (why) *why = std::string("io_uring_setup failed: ") + std::strerror(-rc);
    return nullptr;
  }
  ring->set_up = true;
  stats.rings.fetch_add(1, std::memory_order_relaxed);
  return std::unique_ptr<SendRing>(new SendRing(std::move(ring), stats, on_queued, arg));
}

SendRing::SendRing(std::unique_ptr<Ring> ring, SendRingStats& stats, void (*on_queued)(void*), void* arg) noexcept
    : ring_(std::move(ring)), stats_(stats), on_queued_(on_queued), arg_(arg) {}

SendRing::~SendRing() {
  flush();  // nothing may stay queued: its batch and stream would be gone before the kernel read them
  stats_.rings.fetch_sub(1, std::memory_order_relaxed);
}

int SendRing::reserve(const uv_stream_t* stream) {
  // Room first: a flush runs callbacks, which may close streams, this one included.
  if (io_uring_sq_space_left(&ring_->ring) == 0) flush();
  const auto* h = reinterpret_cast<const uv_handle_t*>(stream);
  uv_os_fd_t fd = -1;
  if (uv_is_closing(h) || uv_stream_get_write_queue_size(stream) != 0 || uv_fileno(h, &fd) != 0) return -1;
  return fd;
}

void SendRing::queue(int fd, uv_stream_t* stream, QueuedBatch* q, uv_buf_t* bufs, unsigned nbufs,
                     uv_write_cb on_written) {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);  // reserve() left room
  q->stream = stream;
  q->on_written = on_written;
  q->bufs = bufs;
  q->nbufs = nbufs;
  q->msg = msghdr{};
  q->msg.msg_iov = reinterpret_cast<iovec*>(bufs);
  // sendmsg refuses more than IOV_MAX pieces (EMSGSIZE); a batch of more (a backlog of many
  // notifications) sends its first IOV_MAX here and the rest through libuv, which splits it.
  q->msg.msg_iovlen = std::min<std::size_t>(nbufs, IOV_MAX);
  // MSG_DONTWAIT: never parked in the kernel waiting for room, so flush() sees every
  // completion at once and libuv's queue takes the rest, in order.
  io_uring_prep_sendmsg(sqe, fd, &q->msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  io_uring_sqe_set_data(sqe, q);
  if (queued_++ == 0 && on_queued_) on_queued_(arg_);
}

void SendRing::flush() {
  while (queued_ > 0) {
    unsigned want = queued_;
    queued_ = 0;
    // Every send completes inside this call (MSG_DONTWAIT), so waiting for all is not blocking.
    int submitted = io_uring_submit_and_wait(&ring_->ring, want);
    while (submitted == -EINTR || submitted == -EAGAIN || submitted == -EBUSY) {
      submitted = io_uring_submit_and_wait(&ring_->ring, want);
    }
    if (submitted < 0) {
      // Not a condition of the sockets (those come back in CQEs): the ring itself is unusable,
      // and sends the kernel may still read cannot be given back safely.
      std::fprintf(stderr, "mcpfan: io_uring_submit failed: %s\n", std::strerror(-submitted));
      std::abort();
    }
    stats_.submits.fetch_add(1, std::memory_order_relaxed);
    // A short submit leaves the rest in the SQ; they are submitted on the next turn.
    queued_ += want - static_cast<unsigned>(submitted);

    // Collect first and release the CQ, then run callbacks: a callback may queue and flush
    // (a nested flush finds spare_ empty and allocates its own). No allocation per flush.
    std::vector<std::pair<QueuedBatch*, int>> done;
    done.swap(spare_);
    done.clear();
    while (done.size() < static_cast<std::size_t>(submitted)) {
      io_uring_cqe* cqe = nullptr;
      int rc = io_uring_wait_cqe(&ring_->ring, &cqe);
      if (rc == -EINTR) continue;
      if (rc < 0) {
        std::fprintf(stderr, "mcpfan: io_uring_wait_cqe failed: %s\n", std::strerror(-rc));
        std::abort();
      }
      unsigned head = 0, seen = 0;
      io_uring_for_each_cqe(&ring_->ring, head, cqe) {
        done.emplace_back(static_cast<QueuedBatch*>(io_uring_cqe_get_data(cqe)), cqe->res);
        ++seen;
      }
      io_uring_cq_advance(&ring_->ring, seen);
    }
    stats_.sends.fetch_add(done.size(), std::memory_order_relaxed);
    // One callback that throws must not strand the others' batches (nor leave through libuv).
    for (auto [q, res] : done) {
      try {
        complete(q, res);
      } catch (...) {
        stats_.exceptions.fetch_add(1, std::memory_order_relaxed);
      }
    }
    if (done.capacity() > spare_.capacity()) spare_.swap(done);
  }
}

void SendRing::complete(QueuedBatch* q, int res) {
  uv_write_cb cb = q->on_written;
  auto handed_over = [q] {
    if (q->handed_over) q->handed_over(q);
  };
  if (res < 0 && res != -EAGAIN) {  // libuv's error codes are -errno on Unix
    handed_over();
    return cb(&q->req, res);
  }
  std::size_t written = res > 0 ? static_cast<std::size_t>(res) : 0;
  unsigned i = 0;
  while (i < q->nbufs && written >= q->bufs[i].len) written -= q->bufs[i++].len;
  if (i == q->nbufs) {
    handed_over();
    return cb(&q->req, 0);
  }
  stats_.short_sends.fetch_add(1, std::memory_order_relaxed);
  q->bufs[i].base += written;
  q->bufs[i].len -= written;
  int rc = uv_write(&q->req, q->stream, q->bufs + i, q->nbufs - i, cb);
  handed_over();  // the rest is first in libuv's queue: what the writer held back goes behind it
  if (rc != 0) cb(&q->req, rc);
}

}  // namespace mcpfan::detail

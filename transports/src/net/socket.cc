#include "net/socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "net/batch_write.h"
#include "net/send_ring.h"
#include "tls/channel.h"

namespace mcpfan::detail::net {

namespace {
// A write of TLS records the connection did not ask for (handshake, alerts, tickets): its
// completion is no event of the connection's.
constexpr std::uint32_t kNoTag = 0xffffffffu;
}  // namespace

Socket::Socket(LoopIo& io, SocketEvents& events) noexcept : io_(io), events_(&events) {}
Socket::~Socket() = default;

struct Socket::BytesWrite {
  uv_write_t req;  // first member: the callback casts back
  std::string data;
  std::uint32_t tag;
};

template <class F>
void Socket::guard(F&& f) noexcept {
  try {
    f();
    return;
  } catch (...) {
    if (io_.callback_exceptions) io_.callback_exceptions->fetch_add(1, std::memory_order_relaxed);
  }
  try {
    events_->on_failure(*this);
  } catch (...) {
    if (io_.callback_exceptions) io_.callback_exceptions->fetch_add(1, std::memory_order_relaxed);
  }
}

int Socket::init_tcp() {
  int rc = uv_tcp_init(io_.loop, &handle_.tcp);
  if (rc != 0) return rc;
  handle_.handle.data = this;
  state_ = State::Open;
  is_tcp_ = ring_ok_ = true;
  return 0;
}

int Socket::open(int fd, bool readable) {
  // Once a handle is initialised only uv_close may end it, so it counts as opened at once;
  // the fd becomes libuv's only when the open call succeeds.
  int rc = 0;
  switch (uv_guess_handle(fd)) {
    case UV_NAMED_PIPE:  // pipes and Unix-domain sockets
      if ((rc = uv_pipe_init(io_.loop, &handle_.pipe, 0)) != 0) return rc;
      state_ = State::Open;
      rc = uv_pipe_open(&handle_.pipe, fd);
      break;
    case UV_TTY:
      if ((rc = uv_tty_init(io_.loop, &handle_.tty, fd, readable ? 1 : 0)) != 0) return rc;
      state_ = State::Open;
      break;
    case UV_TCP:
      if ((rc = uv_tcp_init(io_.loop, &handle_.tcp)) != 0) return rc;
      state_ = State::Open;
      is_tcp_ = true;
      rc = uv_tcp_open(&handle_.tcp, fd);
      break;
    default:
      return UV_EINVAL;  // a regular file cannot carry a stream
  }
  handle_.handle.data = this;
  // The ring sends with sendmsg: sockets only (a --unix client, an attached socket), not pipes or ttys.
  int type = 0;
  socklen_t len = sizeof type;
  ring_ok_ = rc == 0 && ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0;
  return rc;
}

void Socket::set_keepalive(unsigned keepalive_s, std::uint64_t user_timeout_ms) {
  if (!is_tcp_ || closing()) return;
  // Dead peers (a host gone without FIN) are found by keep-alive probes when idle, and by
  // TCP_USER_TIMEOUT when data sits unacknowledged; the write timeout covers live peers
  // that stop reading.
  uv_tcp_keepalive(&handle_.tcp, 1, keepalive_s);
  uv_os_fd_t fd;
  if (uv_fileno(&handle_.handle, &fd) != 0) return;
  int interval = 10, count = 3;
  auto user_timeout = static_cast<unsigned>(std::min<std::uint64_t>(user_timeout_ms, 0x7fffffff));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

void Socket::limit_unsent(int bytes) {
  uv_os_fd_t fd;
  if (is_tcp_ && !closing() && uv_fileno(&handle_.handle, &fd) == 0) {
    ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &bytes, sizeof bytes);
  }
}

bool Socket::peer_is_loopback() {
  if (!is_tcp_) return false;
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getpeername(&handle_.tcp, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (addr.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<sockaddr_in&>(addr).sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

int Socket::read_start() {
  if (state_ != State::Open) return UV_EBADF;
  return uv_read_start(
      &handle_.stream,
      [](uv_handle_t* h, std::size_t, uv_buf_t* buf) {
        auto* s = static_cast<Socket*>(h->data);
        *buf = uv_buf_init(s->io_.read_buffer, static_cast<unsigned>(s->io_.read_buffer_size));
      },
      [](uv_stream_t* st, ssize_t nread, const uv_buf_t* buf) {
        auto* s = static_cast<Socket*>(st->data);
        if (nread == 0) return;  // EAGAIN: nothing this time
        s->guard([&] {
          if (nread < 0) s->events_->on_read_end(*s, static_cast<int>(nread));
          else if (s->tls_) s->read_tls(buf->base, static_cast<std::size_t>(nread));
          else s->events_->on_data(*s, buf->base, static_cast<std::size_t>(nread));
        });
      });
}

void Socket::start_tls(std::unique_ptr<tls::Channel> channel) { tls_ = std::move(channel); }

bool Socket::tls_handshaking() const noexcept { return tls_ && !tls_->handshake_done(); }

std::string Socket::client_certificate() const { return tls_ ? tls_->client_cert_subject() : std::string(); }

void Socket::read_tls(const char* data, std::size_t len) {
  // Plaintext goes to the connection as it is decrypted; what it writes meanwhile is encrypted
  // into the same tls_out_, behind the handshake records made before it, so order holds.
  tls::Channel::Status st = tls_->feed(data, len, tls_out_, [&](const char* plain, std::size_t n) {
    if (state_ == State::Open) events_->on_data(*this, plain, n);
  });
  if (!tls_out_.empty() && state_ == State::Open) (void)send_records(kNoTag);
  if (state_ != State::Open) return;
  if (st == tls::Channel::Status::Failed) return events_->on_read_end(*this, UV_EPROTO);
  if (tls_->peer_closed()) events_->on_read_end(*this, UV_EOF);
}

Socket::Sent Socket::send_records(std::uint32_t tag) {
  std::string records = std::move(tls_out_);
  tls_out_.clear();
  return queue_bytes(std::move(records), tag);
}

void Socket::read_stop() {
  if (state_ == State::Open) uv_read_stop(&handle_.stream);
}

void Socket::write_queued() noexcept {
  if (writes_in_flight_++ == 0) write_progress_ms_ = uv_now(io_.loop);
}

void Socket::write_completed() noexcept {
  --writes_in_flight_;
  write_progress_ms_ = uv_now(io_.loop);
}

Socket::Sent Socket::write(std::string bytes, std::uint32_t tag) {
  if (state_ != State::Open) return Sent::Failed;
  if (tls_) {
    if (tls_->encrypt(bytes, tls_out_) == tls::Channel::Status::Failed) return Sent::Failed;
    return send_records(tag);
  }
  return queue_bytes(std::move(bytes), tag);
}

Socket::Sent Socket::queue_bytes(std::string bytes, std::uint32_t tag) {
  auto* w = new BytesWrite{{}, std::move(bytes), tag};
  w->req.data = this;
  if (must_wait()) {
    deferred_bytes_ += w->data.size();
    deferred_.push_back({Deferred::Kind::Bytes, w});
  } else if (issue_bytes(w) != 0) {
    return Sent::Failed;
  }
  write_queued();
  return Sent::Queued;
}

int Socket::issue_bytes(BytesWrite* w) {
  uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  int rc = uv_write(&w->req, &handle_.stream, &b, 1, bytes_written);
  if (rc != 0) delete w;
  return rc;
}

void Socket::bytes_written(uv_write_t* req, int status) {
  auto* w = reinterpret_cast<BytesWrite*>(req);
  auto* s = static_cast<Socket*>(req->data);
  std::uint32_t tag = w->tag;
  delete w;
  s->write_completed();
  if (tag == kNoTag) {
    if (status < 0 && !s->closing()) s->guard([&] { s->events_->on_read_end(*s, status); });
    return;
  }
  s->guard([&] { s->events_->on_written(*s, tag, status); });
}

Socket::Sent Socket::write_batch(OutBatch&& batch, std::string_view frame, std::uint32_t tag) {
  if (state_ != State::Open) return Sent::Failed;
  if (tls_) {
    // Encrypted at once into full records (the batch's buffers are let go here), then one write.
    OutBatch held(std::move(batch));
    if (!frame.empty()) held.bufs[0] = iovec{const_cast<char*>(frame.data()), frame.size()};
    std::size_t first = frame.empty() ? 1 : 0;
    if (tls_->encrypt(held.bufs.data() + first, held.bufs.size() - first, tls_out_) ==
        tls::Channel::Status::Failed) {
      return Sent::Failed;
    }
    // As the plaintext path: the loop's ring when it has one (the records go out with the
    // flush's other sends in one io_uring_enter), else the socket at once (uv_write would
    // re-arm the watcher with an epoll_ctl per completed write); the rest goes to libuv's queue.
    if (!must_wait() && ring_ok_ && io_.ring != nullptr) {
      BatchRoute route = ring_route(tag);
      if (queue_bytes_in_ring(&handle_.stream, tls_out_, this, batch_written, *io_.ring, route)) {
        ++in_ring_;
        write_queued();
        return Sent::Queued;
      }
    }
    if (!must_wait()) {
      uv_buf_t b = uv_buf_init(tls_out_.data(), static_cast<unsigned>(tls_out_.size()));
      int n = uv_try_write(&handle_.stream, &b, 1);
      if (n == static_cast<int>(tls_out_.size())) {
        tls_out_.clear();
        return Sent::Done;
      }
      if (n > 0) tls_out_.erase(0, static_cast<std::size_t>(n));
    }
    return send_records(tag);
  }
  if (must_wait()) {
    QueuedBatch* q = prepare_queued_batch(std::move(batch), frame, this);
    q->tag = tag;
    for (unsigned i = 0; i < q->nbufs; ++i) deferred_bytes_ += q->bufs[i].len;
    deferred_.push_back({Deferred::Kind::Batch, q});
    write_queued();
    return Sent::Queued;
  }
  BatchRoute route = ring_route(tag);
  BatchWrite r = write_batch_to(&handle_.stream, std::move(batch), frame, this, batch_written,
                                ring_ok_ ? io_.ring : nullptr, route);
  switch (r) {
    case BatchWrite::Written: return Sent::Done;
    case BatchWrite::Failed: return Sent::Failed;
    case BatchWrite::Queued: break;
  }
  if (route.in_ring) ++in_ring_;
  write_queued();
  return Sent::Queued;
}

BatchRoute Socket::ring_route(std::uint32_t tag) noexcept {
  BatchRoute route;
  route.tag = tag;
  route.handed_over = [](QueuedBatch* q) { static_cast<Socket*>(q->req.data)->handed_over(); };
  return route;
}

int Socket::issue_batch(QueuedBatch* q) {
  int rc = uv_write(&q->req, &handle_.stream, q->bufs, q->nbufs, batch_written);
  if (rc != 0) delete q;
  return rc;
}

void Socket::batch_written(uv_write_t* req, int status) {
  auto* s = static_cast<Socket*>(req->data);
  std::uint32_t tag = reinterpret_cast<QueuedBatch*>(req)->tag;
  QueuedBatch::release(req);
  s->write_completed();
  s->guard([&] { s->events_->on_written(*s, tag, status); });
}

bool Socket::shutdown() {
  if (state_ != State::Open) return false;
  if (tls_) {  // close_notify first: the peer tells a clean end from a cut one
    tls_->close_notify(tls_out_);
    if (!tls_out_.empty() && send_records(kNoTag) == Sent::Failed) return false;
  }
  if (must_wait()) {
    deferred_.push_back({Deferred::Kind::Shutdown, nullptr});
    return true;
  }
  return issue_shutdown();
}

bool Socket::issue_shutdown() {
  shutdown_req_.data = this;
  // libuv shuts the write side down once every write queued before it is out.
  return uv_shutdown(&shutdown_req_, &handle_.stream, [](uv_shutdown_t* req, int status) {
           auto* s = static_cast<Socket*>(req->data);
           if (status == UV_ECANCELED || s->closing()) return;  // closed meanwhile
           if (status < 0) s->guard([&] { s->events_->on_shutdown_failed(*s); });
         }) == 0;
}

void Socket::close() {
  if (state_ != State::Open) return;
  state_ = State::Closing;
  uv_read_stop(&handle_.stream);
  // A batch of this socket's still in the ring goes first: the ring reads its stream.
  if (must_wait()) {
    deferred_.push_back({Deferred::Kind::Close, nullptr});
    return;
  }
  issue_close();
}

void Socket::issue_close() {
  if (close_issued_) return;
  close_issued_ = true;
  uv_close(&handle_.handle, [](uv_handle_t* h) {
    auto* s = static_cast<Socket*>(h->data);
    s->state_ = State::Closed;
    s->guard([&] { s->events_->on_closed(*s); });
  });
}

void Socket::handed_over() {
  if (--in_ring_ > 0) return;
  // In the order written. A write issued here goes behind the rest of the ring's batch.
  std::vector<Deferred> list = std::move(deferred_);
  deferred_.clear();
  deferred_bytes_ = 0;
  for (Deferred& d : list) {
    switch (d.kind) {
      case Deferred::Kind::Bytes:
      case Deferred::Kind::Batch: {
        bool bytes = d.kind == Deferred::Kind::Bytes;
        auto* w = static_cast<BytesWrite*>(d.item);
        auto* q = static_cast<QueuedBatch*>(d.item);
        std::uint32_t tag = bytes ? w->tag : q->tag;
        int rc = UV_ECANCELED;  // an earlier item's failure closed the socket: the rest is cancelled
        if (!close_issued_) {
          rc = bytes ? issue_bytes(w) : issue_batch(q);  // each frees its item when it fails
        } else if (bytes) {
          delete w;
        } else {
          delete q;
        }
        if (rc != 0) {
          write_completed();
          if (tag != kNoTag) guard([&] { events_->on_written(*this, tag, rc); });
        }
        break;
      }
      case Deferred::Kind::Shutdown:
        if (!closing() && !issue_shutdown()) guard([&] { events_->on_shutdown_failed(*this); });
        break;
      case Deferred::Kind::Close:
        issue_close();
        break;
    }
  }
}

std::size_t Socket::queued_bytes() const noexcept {
  if (state_ == State::Unopened || state_ == State::Closed) return deferred_bytes_;
  return uv_stream_get_write_queue_size(&handle_.stream) + deferred_bytes_;
}

}  // namespace mcpfan::detail::net

#include "server/worker.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "server/conn.h"
#include "server/log.h"
#include "server/server_state.h"
#include "mcp/sessions.h"

namespace mcpfan::detail {

namespace {
template <class T>
Worker* self(T* handle) {
  return static_cast<Worker*>(handle->data);
}
}  // namespace

Worker::Worker(unsigned index, ServerState& state, std::function<StatsSnapshot()> snapshot)
    : index_(index),
      config_(state.config),
      hub_(*state.hub),
      shard_(state.hub->shard(index)),
      sessions_(state.sessions),
      limits_(state.limits),
      logger_(state.logger),
      clients_(state.clients),
      publishers_(state.publishers),
      acceptors_(state.acceptors),
      backplane_(state.backplane.get()),
      upstream_target_(state.upstream),
      snapshot_(std::move(snapshot)),
      publish_decoder_(PublishLimits{config_.mcp.max_uri_length}),
      rpc_decoder_(RpcLimits{config_.mcp.max_uri_length, config_.mcp.max_uris_per_listen}),
      read_buf_(64 * 1024, '\0') {
  uv_loop_init(&loop_);
  io_.loop = &loop_;
  io_.read_buffer = read_buf_.data();
  io_.read_buffer_size = read_buf_.size();
  io_.callback_exceptions = &stats_.callback_exceptions;
  for (auto* h : {reinterpret_cast<uv_handle_t*>(&inbox_async_), reinterpret_cast<uv_handle_t*>(&control_async_),
                  reinterpret_cast<uv_handle_t*>(&flush_check_), reinterpret_cast<uv_handle_t*>(&flush_idle_),
                  reinterpret_cast<uv_handle_t*>(&keepalive_timer_), reinterpret_cast<uv_handle_t*>(&grace_timer_),
                  reinterpret_cast<uv_handle_t*>(&listener_), reinterpret_cast<uv_handle_t*>(&publish_listener_),
                  reinterpret_cast<uv_handle_t*>(&unix_poll_),
                  reinterpret_cast<uv_handle_t*>(&session_timer_), reinterpret_cast<uv_handle_t*>(&sweep_timer_)}) {
    h->data = this;
  }
  // uv_async_send coalesces wake-ups: the callback drains in bounded batches and re-arms.
  uv_async_init(&loop_, &inbox_async_, [](uv_async_t* a) {
    Worker* w = self(a);
    bool more = true;  // after an exception, look again rather than strand queued payloads
    guarded(w->stats_, [&] { more = w->shard_.drain(); });
    if (more) uv_async_send(a);
  });
  uv_async_init(&loop_, &control_async_, [](uv_async_t* a) { self(a)->on_control(); });
  uv_check_init(&loop_, &flush_check_);
  uv_check_start(&flush_check_, [](uv_check_t* h) {
    Worker* w = self(h);
    if (w->self_posted_) {
      // Posted by this loop itself (a publish parsed here for a stream held here): drained
      // now, in the iteration that parsed it, without an eventfd round trip.
      w->self_posted_ = false;
      bool more = true;
      guarded(w->stats_, [&] { more = w->shard_.drain(); });
      if (more) w->self_post();
    }
    guarded(w->stats_, [&] { w->shard_.flush(uv_now(&w->loop_)); });
    guarded(w->stats_, [&] { w->flush_sends(); });  // the batches the shard flush queued: one submit per 256
    if (!w->shard_.has_dirty() && !w->self_posted_) uv_idle_stop(&w->flush_idle_);
  });
  uv_idle_init(&loop_, &flush_idle_);
  uv_timer_init(&loop_, &keepalive_timer_);
  uv_timer_init(&loop_, &grace_timer_);
  uv_timer_init(&loop_, &session_timer_);
  uv_timer_init(&loop_, &sweep_timer_);
  shard_.set_waker(
      [](void* a) {
        auto* w = static_cast<Worker*>(a);
        if (w->on_own_thread()) w->self_post();
        else w->wake(&w->inbox_async_);
      },
      this);
  shard_.set_on_dirty([](void* a) { uv_idle_start(static_cast<uv_idle_t*>(a), [](uv_idle_t*) {}); }, &flush_idle_);
}

Worker::~Worker() { join(); }

void Worker::start(int listen_fd, int publish_fd) {
  thread_ = std::thread([this, listen_fd, publish_fd] {
    thread_id_.store(std::this_thread::get_id());
    log::Bind logging(&logger_);
    run(listen_fd, publish_fd);
  });
}

void Worker::join() {
  if (thread_.joinable()) thread_.join();
}

bool Worker::post(ControlMsg msg) {
  // Under the wake lock: once the loop has closed its handles nobody would ever read the
  // queue, so a message is either queued before that (and handled or refused by the loop)
  // or refused here.
  std::lock_guard lock(wake_mu_);
  if (handles_closed_) return false;
  if (!control_.enqueue(std::move(msg))) return false;
  uv_async_send(&control_async_);
  return true;
}

void Worker::refuse_adopt(ControlMsg& msg, StdioEnd why) noexcept {
  if (msg.type != ControlMsg::Type::Adopt) return;
  ::close(msg.in_fd);
  if (msg.out_fd != msg.in_fd) ::close(msg.out_fd);
  // The host was given a handle: it hears of this client's end like any other's.
  if (msg.on_end) guarded(stats_, [&] { msg.on_end(why); });
}

void Worker::self_post() noexcept {
  // The check handle drains it at the end of this iteration; the idle handle keeps the loop
  // from blocking in between (a post from a timer or the check itself waits one turn).
  if (handles_closed_) return;  // stopped: nothing drains the inbox any more (as wake() refuses)
  self_posted_ = true;
  uv_idle_start(&flush_idle_, [](uv_idle_t*) {});
}

void Worker::wake(uv_async_t* handle) {
  // Other threads may post after this loop has closed its handles (a publish racing a
  // shutdown); the lock makes "closed" and "send" mutually exclusive.
  std::lock_guard lock(wake_mu_);
  if (!handles_closed_) uv_async_send(handle);
}

bool Worker::open_listener(uv_tcp_t& listener, int fd, const char* what) {
  uv_tcp_init(&loop_, &listener);
  int rc = uv_tcp_open(&listener, fd);
  if (rc != 0) ::close(fd);  // not libuv's: uv_close(listener) will not close it
  else rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener), SOMAXCONN, &Worker::on_connection);
  // After a successful uv_tcp_open the fd is libuv's: the listener's uv_close closes it, once.
  if (rc != 0) log::line(LogLevel::Error, "listen", "worker " + std::to_string(index_) + " cannot listen" + what + ": " + uv_strerror(rc));
  return rc == 0;
}

void Worker::run(int listen_fd, int publish_fd) {
  if (config_.io_uring_entries > 0) {
    std::string why;
    // A send queued outside the check callback (a timer, a close callback) must not wait for
    // the next event: the idle handle keeps the loop from blocking until the check flushes it.
    send_ring_ = SendRing::create(
        config_.io_uring_entries, stats_.sends, [](void* a) { uv_idle_start(static_cast<uv_idle_t*>(a), [](uv_idle_t*) {}); },
        &flush_idle_, &why);
    // Said by each loop that has none (the log's rate limit keeps it short): on old kernels
    // a later loop's ring can fail where the first one's did not (locked-memory limit).
    io_.ring = send_ring_.get();
    if (!send_ring_) {
      log::line("io_uring", "worker " + std::to_string(index_) + ": io_uring sends are off (" + why +
                                "): stream batches use libuv writes");
    }
  }
  if (upstream_target_) {
    proxy::UpstreamLimits ul;
    ul.connect_ms = config_.upstream.connect_ms;
    ul.first_byte_ms = config_.upstream.first_byte_ms;
    ul.idle_ms = config_.upstream.idle_ms;
    ul.max_idle = config_.upstream.max_idle;
    ul.keepalive_ms = config_.upstream.keepalive_ms;
    ul.resolve_ttl_ms = config_.upstream.resolve_ttl_ms;
    upstream_ = std::make_unique<proxy::UpstreamPool>(&loop_, *upstream_target_, ul, &stats_.upstream);
  }
  (void)open_listener(listener_, listen_fd, "");
  if (publish_fd >= 0) {
    (void)open_listener(publish_listener_, publish_fd, " on the operator listener");
    publish_open_ = true;  // initialised either way: begin_stop() closes the handle
  }
  if (unix_fd_ >= 0) {
    uv_poll_init(&loop_, &unix_poll_, unix_fd_);
    uv_poll_start(&unix_poll_, UV_READABLE, [](uv_poll_t* p, int status, int) {
      if (status == 0) guarded(self(p)->stats_, [&] { self(p)->accept_unix(); });
    });
  }
  // Keepalive sweeps run at a quarter of the interval, so an idle stream's comment comes
  // between 1 and 1.25 intervals after its last write.
  std::uint64_t period = std::max<std::uint64_t>(config_.http.keepalive_ms / 4, 10);
  uv_timer_start(
      &keepalive_timer_,
      [](uv_timer_t* t) {
        Worker* w = self(t);
        guarded(w->stats_, [&] { w->shard_.keepalive(uv_now(&w->loop_), w->config_.http.keepalive_ms); });
      },
      period, period);
  if (index_ == 0) {
    std::uint64_t every = std::clamp<std::uint64_t>(config_.mcp.session_idle_ms / 4, 10, 5000);
    uv_timer_start(
        &session_timer_,
        [](uv_timer_t* t) {
          Worker* w = self(t);
          guarded(w->stats_, [&] { (void)w->sessions_.expire(uv_now(&w->loop_), w->config_.mcp.session_idle_ms); });
        },
        every, every);
  }
  // Deadlines are checked by a sweep, not a timer per connection: a timer is ~120 bytes per
  // stream, and a deadline a quarter-period late is harmless.
  std::uint64_t shortest =
      std::min({config_.http.request_timeout_ms, config_.http.idle_timeout_ms, config_.http.write_timeout_ms});
  std::uint64_t sweep_every = std::clamp<std::uint64_t>(shortest / 4, 20, 1000);
  uv_timer_start(
      &sweep_timer_, [](uv_timer_t* t) { guarded(self(t)->stats_, [&] { self(t)->sweep(); }); }, sweep_every, sweep_every);
  uv_run(&loop_, UV_RUN_DEFAULT);
  upstream_.reset();  // closed in maybe_finish_stop(); the loop has run its close callbacks
  io_.ring = nullptr;
  send_ring_.reset();  // on this thread, which set it up
  uv_loop_close(&loop_);
}

void Worker::sweep() {
  std::uint64_t now = uv_now(&loop_);
  for (Conn* c = conns_; c;) {
    Conn* next = c->next_;  // sweep() may close c, which unlinks it only in its close callback
    c->sweep(now);
    c = next;
  }
}

void Worker::on_connection(uv_stream_t* server, int status) {
  Worker* w = self(server);
  if (status < 0) return;
  w->acceptors_.tcp(*w, server, /*operator_listener=*/server == reinterpret_cast<uv_stream_t*>(&w->publish_listener_));
}

void Worker::accept_unix() {
  // Each connection is one stdio-framed client, dealt round-robin to the worker loops.
  for (int i = 0; i < 256; ++i) {
    int fd = ::accept4(unix_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or an error the next readiness will show again
    Worker* to = peers_[next_peer_++ % peers_.size()];
    ControlMsg msg(ControlMsg::Type::Adopt, fd, fd);
    msg.from_unix_listener = true;
    if (!to->post(msg)) ::close(fd);  // that loop has stopped
  }
}

void Worker::link(Conn* c) noexcept {
  c->next_ = conns_;
  c->prev_ = nullptr;
  if (conns_) conns_->prev_ = c;
  conns_ = c;
}

void Worker::unlink(Conn* c) noexcept {
  if (c->prev_) c->prev_->next_ = c->next_;
  else conns_ = c->next_;
  if (c->next_) c->next_->prev_ = c->prev_;
  c->prev_ = c->next_ = nullptr;
  if (stopping_) maybe_finish_stop();
}

void Worker::on_control() {
  ControlMsg msg;
  for (int i = 0; i < 1024 && control_.try_dequeue(msg); ++i) {
    // One message's failure (an allocation) must not strand the ones queued behind it. An
    // Adopt that threw may have handed its fds to libuv already: they are not closed here
    // (a leak on allocation failure beats closing a descriptor twice).
    guarded(stats_, [&] {
      if (msg.type == ControlMsg::Type::Stop) {
        begin_stop();
      } else if (msg.type == ControlMsg::Type::Detach) {
        // Gone already (or never here): its on_end ran or is about to; nothing to do.
        if (auto it = stdio_clients_.find(msg.client); it != stdio_clients_.end()) it->second->detach();
      } else {
        std::string err;
        if (stopping_) {
          refuse_adopt(msg, StdioEnd::ServerStopped);
        } else if (!acceptors_.stdio(*this, msg, err)) {
          log::line("stdio_refused", "stdio client refused: " + err);
          // Its fds are closed; a process serving its own stdio must not run on without it.
          if (msg.on_end) guarded(stats_, [&] { msg.on_end(StdioEnd::Refused); });
        }
      }
    });
  }
  if (control_.size_approx() > 0) uv_async_send(&control_async_);
}

void Worker::begin_stop() {
  if (stopping_) return;
  stopping_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  if (publish_open_) uv_close(reinterpret_cast<uv_handle_t*>(&publish_listener_), nullptr);
  if (unix_fd_ >= 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&unix_poll_), nullptr);
    ::close(unix_fd_);
  }
  // Listens get their final result and end once it is written; the rest close now.
  for (Conn* c = conns_; c;) {
    Conn* next = c->next_;
    c->begin_shutdown();
    c = next;
  }
  uv_timer_start(
      &grace_timer_,
      [](uv_timer_t* t) {
        Worker* w = self(t);
        for (Conn* c = w->conns_; c; c = c->next_) c->force_close();
      },
      config_.shutdown_grace_ms, 0);
  maybe_finish_stop();
}

void Worker::maybe_finish_stop() {
  if (conns_ || handles_closed_) return;
  flush_sends();  // empty with every connection closed (each socket waited for its send); the idle handle goes now
  {
    std::lock_guard lock(wake_mu_);
    handles_closed_ = true;
  }
  // Nobody reads the control queue after this: what was queued before the close is refused
  // here (an Adopt's fds closed), and post() refuses the rest.
  ControlMsg msg;
  while (control_.try_dequeue(msg)) refuse_adopt(msg, StdioEnd::ServerStopped);
  if (upstream_) upstream_->close();  // every connection is gone: no call is in flight
  for (auto* h : {reinterpret_cast<uv_handle_t*>(&inbox_async_), reinterpret_cast<uv_handle_t*>(&control_async_),
                  reinterpret_cast<uv_handle_t*>(&flush_check_), reinterpret_cast<uv_handle_t*>(&flush_idle_),
                  reinterpret_cast<uv_handle_t*>(&keepalive_timer_), reinterpret_cast<uv_handle_t*>(&grace_timer_),
                  reinterpret_cast<uv_handle_t*>(&session_timer_), reinterpret_cast<uv_handle_t*>(&sweep_timer_)}) {
    uv_close(h, nullptr);
  }
}

}  // namespace mcpfan::detail

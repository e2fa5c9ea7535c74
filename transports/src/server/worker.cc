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
    : ctx_(index, state, std::move(snapshot)),
      logger_(state.logger),
      acceptors_(state.acceptors),
      upstream_target_(state.upstream) {
  ctx_.on_unlinked_ = [](void* a) { static_cast<Worker*>(a)->maybe_finish_stop(); };
  ctx_.on_unlinked_arg_ = this;
  ctx_.post_ = [this](std::function<void()> fn) {
    ControlMsg msg(ControlMsg::Type::Call);
    msg.call = std::move(fn);
    return post(std::move(msg));
  };
  for (auto* h : {reinterpret_cast<uv_handle_t*>(&inbox_async_), reinterpret_cast<uv_handle_t*>(&control_async_),
                  reinterpret_cast<uv_handle_t*>(&flush_check_), reinterpret_cast<uv_handle_t*>(&flush_idle_),
                  reinterpret_cast<uv_handle_t*>(&keepalive_timer_), reinterpret_cast<uv_handle_t*>(&grace_timer_),
                  reinterpret_cast<uv_handle_t*>(&listener_), reinterpret_cast<uv_handle_t*>(&publish_listener_),
                  reinterpret_cast<uv_handle_t*>(&unix_poll_),
                  reinterpret_cast<uv_handle_t*>(&session_timer_), reinterpret_cast<uv_handle_t*>(&sweep_timer_)}) {
    h->data = this;
  }
  // uv_async_send coalesces wake-ups: the callback drains in bounded batches and re-arms.
  uv_async_init(&ctx_.loop_, &inbox_async_, [](uv_async_t* a) {
    Worker* w = self(a);
    bool more = true;  // after an exception, look again rather than strand queued payloads
    guarded(w->ctx_.stats_, [&] { more = w->ctx_.shard_.drain(); });
    if (more) uv_async_send(a);
  });
  uv_async_init(&ctx_.loop_, &control_async_, [](uv_async_t* a) { self(a)->on_control(); });
  uv_check_init(&ctx_.loop_, &flush_check_);
  uv_check_start(&flush_check_, [](uv_check_t* h) {
    Worker* w = self(h);
    if (w->self_posted_) {
      // Posted by this loop itself (a publish parsed here for a stream held here): drained
      // now, in the iteration that parsed it, without an eventfd round trip.
      w->self_posted_ = false;
      bool more = true;
      guarded(w->ctx_.stats_, [&] { more = w->ctx_.shard_.drain(); });
      if (more) w->self_post();
    }
    guarded(w->ctx_.stats_, [&] { w->ctx_.shard_.flush(uv_now(&w->ctx_.loop_)); });
    guarded(w->ctx_.stats_, [&] { w->flush_sends(); });  // the batches the shard flush queued: one submit per 256
    if (!w->ctx_.shard_.has_dirty() && !w->self_posted_) uv_idle_stop(&w->flush_idle_);
  });
  uv_idle_init(&ctx_.loop_, &flush_idle_);
  uv_timer_init(&ctx_.loop_, &keepalive_timer_);
  uv_timer_init(&ctx_.loop_, &grace_timer_);
  uv_timer_init(&ctx_.loop_, &session_timer_);
  uv_timer_init(&ctx_.loop_, &sweep_timer_);
  ctx_.shard_.set_waker(
      [](void* a) {
        auto* w = static_cast<Worker*>(a);
        if (w->on_own_thread()) w->self_post();
        else w->wake(&w->inbox_async_);
      },
      this);
  ctx_.shard_.set_on_dirty([](void* a) { uv_idle_start(static_cast<uv_idle_t*>(a), [](uv_idle_t*) {}); }, &flush_idle_);
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
  if (msg.on_end) guarded(ctx_.stats_, [&] { msg.on_end(why); });
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
  uv_tcp_init(&ctx_.loop_, &listener);
  int rc = uv_tcp_open(&listener, fd);
  if (rc != 0) ::close(fd);  // not libuv's: uv_close(listener) will not close it
  else rc = uv_listen(reinterpret_cast<uv_stream_t*>(&listener), SOMAXCONN, &Worker::on_connection);
  // After a successful uv_tcp_open the fd is libuv's: the listener's uv_close closes it, once.
  if (rc != 0)
    log::line(LogLevel::Error, "listen",
              "worker " + std::to_string(ctx_.index_) + " cannot listen" + what + ": " + uv_strerror(rc));
  return rc == 0;
}

void Worker::run(int listen_fd, int publish_fd) {
  if (ctx_.config_.io_uring_entries > 0) {
    std::string why;
    // A send queued outside the check callback (a timer, a close callback) must not wait for
    // the next event: the idle handle keeps the loop from blocking until the check flushes it.
    send_ring_ = SendRing::create(
        ctx_.config_.io_uring_entries, ctx_.stats_.sends,
        [](void* a) { uv_idle_start(static_cast<uv_idle_t*>(a), [](uv_idle_t*) {}); }, &flush_idle_, &why);
    // Said by each loop that has none (the log's rate limit keeps it short): on old kernels
    // a later loop's ring can fail where the first one's did not (locked-memory limit).
    ctx_.io_.ring = send_ring_.get();
    if (!send_ring_) {
      log::line("io_uring", "worker " + std::to_string(ctx_.index_) + ": io_uring sends are off (" + why +
                                "): stream batches use libuv writes");
    }
  }
  if (upstream_target_) {
    proxy::UpstreamLimits ul;
    ul.connect_ms = ctx_.config_.upstream.connect_ms;
    ul.first_byte_ms = ctx_.config_.upstream.first_byte_ms;
    ul.idle_ms = ctx_.config_.upstream.idle_ms;
    ul.max_idle = ctx_.config_.upstream.max_idle;
    ul.keepalive_ms = ctx_.config_.upstream.keepalive_ms;
    ul.resolve_ttl_ms = ctx_.config_.upstream.resolve_ttl_ms;
    ctx_.upstream_ = std::make_unique<proxy::UpstreamPool>(&ctx_.loop_, *upstream_target_, ul, &ctx_.stats_.upstream);
    if (TaskOwners* owners = ctx_.clients_.task_owners()) {  // --upstream-task-poll
      ctx_.task_poller_ = std::make_unique<TaskPoller>(ctx_, *ctx_.upstream_, *owners, ctx_.stats_.tasks);
    }
  }
  (void)open_listener(listener_, listen_fd, "");
  if (publish_fd >= 0) {
    (void)open_listener(publish_listener_, publish_fd, " on the operator listener");
    publish_open_ = true;  // initialised either way: begin_stop() closes the handle
  }
  if (unix_fd_ >= 0) {
    uv_poll_init(&ctx_.loop_, &unix_poll_, unix_fd_);
    uv_poll_start(&unix_poll_, UV_READABLE, [](uv_poll_t* p, int status, int) {
      if (status == 0) guarded(self(p)->ctx_.stats_, [&] { self(p)->accept_unix(); });
    });
  }
  // Keepalive sweeps run at a quarter of the interval, so an idle stream's comment comes
  // between 1 and 1.25 intervals after its last write.
  std::uint64_t period = std::max<std::uint64_t>(ctx_.config_.http.keepalive_ms / 4, 10);
  uv_timer_start(
      &keepalive_timer_,
      [](uv_timer_t* t) {
        Worker* w = self(t);
        guarded(w->ctx_.stats_,
                [&] { w->ctx_.shard_.keepalive(uv_now(&w->ctx_.loop_), w->ctx_.config_.http.keepalive_ms); });
      },
      period, period);
  if (ctx_.index_ == 0) {
    std::uint64_t every = std::clamp<std::uint64_t>(ctx_.config_.mcp.session_idle_ms / 4, 10, 5000);
    uv_timer_start(
        &session_timer_,
        [](uv_timer_t* t) {
          Worker* w = self(t);
          guarded(w->ctx_.stats_,
                  [&] { (void)w->ctx_.sessions_.expire(uv_now(&w->ctx_.loop_), w->ctx_.config_.mcp.session_idle_ms); });
        },
        every, every);
  }
  // Deadlines are checked by a sweep, not a timer per connection: a timer is ~120 bytes per
  // stream, and a deadline a quarter-period late is harmless.
  const HttpConfig& http = ctx_.config_.http;
  std::uint64_t shortest = std::min({http.request_timeout_ms, http.idle_timeout_ms, http.write_timeout_ms});
  std::uint64_t sweep_every = std::clamp<std::uint64_t>(shortest / 4, 20, 1000);
  uv_timer_start(
      &sweep_timer_, [](uv_timer_t* t) { guarded(self(t)->ctx_.stats_, [&] { self(t)->sweep(); }); }, sweep_every,
      sweep_every);
  uv_run(&ctx_.loop_, UV_RUN_DEFAULT);
  ctx_.task_poller_.reset();  // closed in maybe_finish_stop(), before the pool
  ctx_.upstream_.reset();  // closed in maybe_finish_stop(); the loop has run its close callbacks
  ctx_.io_.ring = nullptr;
  send_ring_.reset();  // on this thread, which set it up
  uv_loop_close(&ctx_.loop_);
}

void Worker::sweep() {
  std::uint64_t now = uv_now(&ctx_.loop_);
  for (Conn* c = ctx_.conns_; c;) {
    Conn* next = c->next_;  // sweep() may close c, which unlinks it only in its close callback
    c->sweep(now);
    c = next;
  }
}

void Worker::on_connection(uv_stream_t* server, int status) {
  Worker* w = self(server);
  if (status < 0) return;
  w->acceptors_.tcp(w->ctx_, server,
                    /*operator_listener=*/server == reinterpret_cast<uv_stream_t*>(&w->publish_listener_));
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

void Worker::on_control() {
  ControlMsg msg;
  for (int i = 0; i < 1024 && control_.try_dequeue(msg); ++i) {
    // One message's failure (an allocation) must not strand the ones queued behind it. An
    // Adopt that threw may have handed its fds to libuv already: they are not closed here
    // (a leak on allocation failure beats closing a descriptor twice).
    guarded(ctx_.stats_, [&] {
      if (msg.type == ControlMsg::Type::Stop) {
        begin_stop();
      } else if (msg.type == ControlMsg::Type::Call) {
        msg.call();
      } else if (msg.type == ControlMsg::Type::Detach) {
        // Gone already (or never here): its on_end ran or is about to; nothing to do.
        if (auto it = ctx_.stdio_clients_.find(msg.client); it != ctx_.stdio_clients_.end()) it->second->detach();
      } else {
        std::string err;
        if (ctx_.stopping_) {
          refuse_adopt(msg, StdioEnd::ServerStopped);
        } else if (!acceptors_.stdio(ctx_, msg, err)) {
          log::line("stdio_refused", "stdio client refused: " + err);
          // Its fds are closed; a process serving its own stdio must not run on without it.
          if (msg.on_end) guarded(ctx_.stats_, [&] { msg.on_end(StdioEnd::Refused); });
        }
      }
    });
  }
  if (control_.size_approx() > 0) uv_async_send(&control_async_);
}

void Worker::begin_stop() {
  if (ctx_.stopping_) return;
  ctx_.stopping_ = true;
  uv_close(reinterpret_cast<uv_handle_t*>(&listener_), nullptr);
  if (publish_open_) uv_close(reinterpret_cast<uv_handle_t*>(&publish_listener_), nullptr);
  if (unix_fd_ >= 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(&unix_poll_), nullptr);
    ::close(unix_fd_);
  }
  // Listens get their final result and end once it is written; the rest close now.
  for (Conn* c = ctx_.conns_; c;) {
    Conn* next = c->next_;
    c->begin_shutdown();
    c = next;
  }
  uv_timer_start(
      &grace_timer_,
      [](uv_timer_t* t) {
        Worker* w = self(t);
        for (Conn* c = w->ctx_.conns_; c; c = c->next_) c->force_close();
      },
      ctx_.config_.shutdown_grace_ms, 0);
  maybe_finish_stop();
}

void Worker::maybe_finish_stop() {
  if (ctx_.conns_ || handles_closed_) return;
  flush_sends();  // empty with every connection closed (each socket waited for its send); the idle handle goes now
  {
    std::lock_guard lock(wake_mu_);
    handles_closed_ = true;
  }
  // Nobody reads the control queue after this: what was queued before the close is refused
  // here (an Adopt's fds closed), and post() refuses the rest.
  ControlMsg msg;
  while (control_.try_dequeue(msg)) refuse_adopt(msg, StdioEnd::ServerStopped);
  if (ctx_.task_poller_) ctx_.task_poller_->close();  // its calls cancelled, its timer closed
  if (ctx_.upstream_) ctx_.upstream_->close();  // every connection is gone: no call is in flight
  for (auto* h : {reinterpret_cast<uv_handle_t*>(&inbox_async_), reinterpret_cast<uv_handle_t*>(&control_async_),
                  reinterpret_cast<uv_handle_t*>(&flush_check_), reinterpret_cast<uv_handle_t*>(&flush_idle_),
                  reinterpret_cast<uv_handle_t*>(&keepalive_timer_), reinterpret_cast<uv_handle_t*>(&grace_timer_),
                  reinterpret_cast<uv_handle_t*>(&session_timer_), reinterpret_cast<uv_handle_t*>(&sweep_timer_)}) {
    uv_close(h, nullptr);
  }
}

}  // namespace mcpfan::detail

#pragma once
// One worker loop: a thread running a libuv loop, with its listening sockets, its timers and
// its control queue. What its connections use is its LoopContext (server/loop_context.h),
// which it owns: they never see the thread or the listeners. Other threads talk to it only
// through the shard's inbox (publishes) and the control queue below (stop, adopt, detach),
// each with a uv_async_t.
#include <uv.h>

#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mcpfan/transport/server.h"
#include "server/log.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

class Worker;
struct ServerState;

/** A control message from another thread. */
struct ControlMsg;

/**
 * How a loop serves its clients, installed in ServerState by install_transports() before
 * the workers start: the worker runs loops and knows no transport (docs/design.md "The rooms of transports/").
 */
struct Acceptors {
  /** Accepts the connection waiting on `listener` (--listen's, or --publish-listen's: `operator_listener`) and serves
   * it. */
  void (*tcp)(LoopContext& ctx, uv_stream_t* listener, bool operator_listener) = nullptr;
  /**
   * Serves an Adopt's stdio-framed client. False, with `err` set, when it cannot: its fds are
   * closed and its on_end is left in `msg` for the caller to tell.
   */
  bool (*stdio)(LoopContext& ctx, ControlMsg& msg, std::string& err) = nullptr;
  /** Serves a connection as HTTP/2 from now on (LoopContext::hand_over_h2). */
  void (*h2)(LoopContext& ctx, std::unique_ptr<net::Socket> sock, bool operator_listener,
             std::string_view first) = nullptr;
};

struct ControlMsg {
  enum class Type { Stop, Adopt, Detach, Call };
  ControlMsg() = default;
  explicit ControlMsg(Type t) noexcept : type(t) {}
  ControlMsg(Type t, int in, int out) noexcept : type(t), in_fd(in), out_fd(out) {}

  Type type = Type::Stop;
  int in_fd = -1;    // Adopt: a stdio-framed client's fds (equal for a socket)
  int out_fd = -1;
  bool from_unix_listener = false;  // a --unix client: authenticates unless --unix-tenant is set
  std::uint64_t client = 0;         // Adopt, Detach: the StdioClient's number (0: a --unix client, no handle)
  StdioEndFn on_end;                // Adopt: may be empty
  std::function<void()> call;       // Call: runs on the loop (LoopContext::post)
};

class Worker {
 public:
  /** Keeps references to the parts of `state` its connections use; `state` outlives the worker. */
  Worker(unsigned index, ServerState& state, std::function<StatsSnapshot()> snapshot);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // ---- controlling thread ----
  /** `publish_fd`: this worker's socket of the operator listener (--publish-listen), or -1. */
  void start(int listen_fd, int publish_fd = -1);
  void join();
  void set_peers(std::vector<Worker*> peers) { peers_ = std::move(peers); }
  /** Accept stdio-framed clients on this listening Unix socket and deal them out to peers. */
  void set_unix_listener(int fd) noexcept { unix_fd_ = fd; }
  // ---- any thread ----
  /**
   * Queues a control message. False once the loop has closed (stopped): the message is not
   * taken, and an Adopt's fds stay the caller's. A message taken is always acted on: fds of
   * an Adopt that arrives while the loop stops are closed, never leaked.
   */
  [[nodiscard]] bool post(ControlMsg msg);
  /** True when called on this worker's own thread. */
  [[nodiscard]] bool on_own_thread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }
  [[nodiscard]] const WorkerStats& stats() const noexcept { return ctx_.stats(); }
  /** What its connections use; loop-affine (route tests and the acceptors reach it here). */
  [[nodiscard]] LoopContext& context() noexcept { return ctx_; }

 private:
  void run(int listen_fd, int publish_fd);
  bool open_listener(uv_tcp_t& listener, int fd, const char* what);
  void on_control();
  void begin_stop();
  void maybe_finish_stop();
  void wake(uv_async_t* handle);
  /** A post to this worker's shard from its own loop: drained by the check handle, no wake-up. */
  void self_post() noexcept;
  /** Sends what the ring holds (after each shard flush, and at the stop). */
  void flush_sends() {
    if (send_ring_) send_ring_->flush();
  }
  /** An Adopt the loop will not serve: closes its fds and tells its on_end (`why`). */
  void refuse_adopt(ControlMsg& msg, StdioEnd why) noexcept;
  static void on_connection(uv_stream_t* server, int status);
  void accept_unix();
  void sweep();

  LoopContext ctx_;
  log::Logger& logger_;  // bound to the loop's thread: what its connections log goes to this Server's sink
  const Acceptors& acceptors_;  // the server's: how this loop serves TCP and stdio clients
  const std::optional<proxy::UpstreamTarget>& upstream_target_;
  std::unique_ptr<SendRing> send_ring_;            // made in run(), on the loop's thread (a single-issuer ring)
  std::vector<Worker*> peers_;

  uv_tcp_t listener_{};
  uv_tcp_t publish_listener_{};  // the operator listener (--publish-listen), when publish_open_
  bool publish_open_ = false;
  uv_async_t inbox_async_{};    // the shard's waker: payloads to drain
  uv_async_t control_async_{};  // stop / adopt
  uv_check_t flush_check_{};    // one flush per loop iteration, after I/O
  uv_idle_t flush_idle_{};      // keeps the loop from blocking while streams are dirty
  uv_timer_t keepalive_timer_{};
  uv_timer_t grace_timer_{};
  uv_timer_t session_timer_{};  // idle-session expiry (worker 0 only)
  uv_timer_t sweep_timer_{};    // connection deadlines: request, idle and write timeouts
  uv_poll_t unix_poll_{};       // the Unix listener (worker 0 only)
  int unix_fd_ = -1;
  unsigned next_peer_ = 0;
  moodycamel::ConcurrentQueue<ControlMsg> control_;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  bool handles_closed_ = false;  // guarded by wake_mu_ for cross-thread readers
  bool self_posted_ = false;     // loop-affine: the shard's inbox has posts of this loop's own
  std::mutex wake_mu_;
};

}  // namespace mcpfan::detail

#pragma once
// One worker loop: a thread running a libuv loop that owns its listening socket, its
// connections and its engine Shard. Other threads talk to it only through the shard's
// inbox (publishes) and the control queue below (stop, cancel), each with a uv_async_t.
#include <uv.h>

#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <functional>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "mcpfan/hub.h"
#include "mcpfan/publish_decoder.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/transport/server.h"
#include "proxy/upstream.h"
#include "server/log.h"
#include "net/send_ring.h"
#include "net/socket.h"
#include "server/stats_snapshot.h"

namespace mcpfan::detail {

class Conn;
class Worker;
class ClientCore;
class SessionRegistry;
class Limits;
struct Publishers;
struct ServerState;
class Backplane;
namespace proxy {
class UpstreamPool;
}

/** Counters a worker keeps beyond its shard's. Written by the loop, read by /metrics. */
struct WorkerStats {
  std::atomic<std::int64_t> connections{0};
  std::atomic<std::uint64_t> http_requests{0};
  std::atomic<std::uint64_t> http_errors{0};  // 4xx/5xx answers
  std::atomic<std::uint64_t> callback_exceptions{0};  // caught at a libuv callback boundary
  std::atomic<std::uint64_t> read_pauses{0};  // reading stopped until a client's unread answers drain
  std::atomic<std::uint64_t> proxied_requests{0};   // requests sent to the --upstream server
  std::atomic<std::uint64_t> upstream_failures{0};  // of those: unreachable, timed out, invalid, cut short, too large
  proxy::UpstreamCounters upstream;                 // this loop's upstream pool (connections, retries)
  SendRingStats sends;  // this loop's io_uring sends (send_ring.h)
};

/**
 * Runs `f` inside a libuv callback: no exception may leave one (libuv is C; it would end in
 * std::terminate). An exception is counted and swallowed; `on_error` then cleans up what the
 * callback was working on (typically: close that one connection). Returns false if f threw.
 */
template <class F, class G>
bool guarded(WorkerStats& stats, F&& f, G&& on_error) noexcept {
  try {
    f();
    return true;
  } catch (...) {
    stats.callback_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
  try {
    on_error();
  } catch (...) {
    stats.callback_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
  return false;
}
template <class F>
bool guarded(WorkerStats& stats, F&& f) noexcept {
  return guarded(stats, std::forward<F>(f), [] {});
}

/** Told once when an attached stdio client ends (Server::attach_stdio's on_end, bound to its handle). */
using StdioEndFn = std::function<void(StdioEnd)>;

/** A control message from another thread. */
struct ControlMsg;

/**
 * How a loop serves its clients, installed in ServerState by install_transports() before
 * the workers start: the worker runs loops and knows no transport (docs/design.md "The rooms of transports/").
 */
struct Acceptors {
  /** Accepts the connection waiting on `listener` (--listen's, or --publish-listen's: `operator_listener`) and serves it. */
  void (*tcp)(Worker& w, uv_stream_t* listener, bool operator_listener) = nullptr;
  /**
   * Serves an Adopt's stdio-framed client. False, with `err` set, when it cannot: its fds are
   * closed and its on_end is left in `msg` for the caller to tell.
   */
  bool (*stdio)(Worker& w, ControlMsg& msg, std::string& err) = nullptr;
};

struct ControlMsg {
  enum class Type { Stop, Adopt, Detach };
  ControlMsg() = default;
  explicit ControlMsg(Type t) noexcept : type(t) {}
  ControlMsg(Type t, int in, int out) noexcept : type(t), in_fd(in), out_fd(out) {}

  Type type = Type::Stop;
  int in_fd = -1;    // Adopt: a stdio-framed client's fds (equal for a socket)
  int out_fd = -1;
  bool from_unix_listener = false;  // a --unix client: authenticates unless --unix-tenant is set
  std::uint64_t client = 0;         // Adopt, Detach: the StdioClient's number (0: a --unix client, no handle)
  StdioEndFn on_end;                // Adopt: may be empty
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
  // ---- any thread ----
  /**
   * Queues a control message. False once the loop has closed (stopped): the message is not
   * taken, and an Adopt's fds stay the caller's. A message taken is always acted on: fds of
   * an Adopt that arrives while the loop stops are closed, never leaked.
   */
  [[nodiscard]] bool post(ControlMsg msg);
  /** True when called on this worker's own thread. */
  [[nodiscard]] bool on_own_thread() const noexcept { return std::this_thread::get_id() == thread_id_.load(); }
  [[nodiscard]] const WorkerStats& stats() const noexcept { return stats_; }

  // ---- loop-affine (connections call these) ----
  [[nodiscard]] uv_loop_t* loop() noexcept { return &loop_; }
  [[nodiscard]] unsigned index() const noexcept { return index_; }
  [[nodiscard]] SessionRegistry& sessions() noexcept { return sessions_; }
  [[nodiscard]] Shard& shard() noexcept { return shard_; }
  [[nodiscard]] Hub& hub() noexcept { return hub_; }
  [[nodiscard]] Limits& limits() noexcept { return limits_; }
  /** MCP client admission (auth, tenants, ceilings): what HTTP and stdio clients share. */
  [[nodiscard]] ClientCore& clients() noexcept { return clients_; }
  /** Publisher keys and rates: what /v1/publish checks. */
  [[nodiscard]] Publishers& publishers() noexcept { return publishers_; }
  /** The backplane, or null (no --nats). Lives while the worker does. */
  [[nodiscard]] Backplane* backplane() noexcept { return backplane_; }
  /** This loop's connections to the --upstream MCP server, or null (no --upstream). Lives while the loop runs. */
  [[nodiscard]] proxy::UpstreamPool* upstream() noexcept { return upstream_.get(); }
  [[nodiscard]] const ServerConfig& config() const noexcept { return config_; }
  [[nodiscard]] PublishDecoder& publish_decoder() noexcept { return publish_decoder_; }
  [[nodiscard]] RpcDecoder& rpc_decoder() noexcept { return rpc_decoder_; }
  [[nodiscard]] WorkerStats& stats() noexcept { return stats_; }
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  /** What this loop's sockets share (net/socket.h): the loop, its io_uring sends, its read buffer. */
  [[nodiscard]] net::LoopIo& io() noexcept { return io_; }
  /** The whole server's numbers now, for /metrics and /status.json. */
  [[nodiscard]] StatsSnapshot stats_snapshot() const { return snapshot_(); }
  void link(Conn* c) noexcept;
  void unlink(Conn* c) noexcept;
  void set_peers(std::vector<Worker*> peers) { peers_ = std::move(peers); }
  /** Accept stdio-framed clients on this listening Unix socket and deal them out to peers. */
  void set_unix_listener(int fd) noexcept { unix_fd_ = fd; }
  /** An attached stdio client by its handle's number, for detach_stdio (the stdio connection registers itself). */
  void register_stdio(std::uint64_t number, Conn* c) { if (number != 0) stdio_clients_[number] = c; }
  void unregister_stdio(std::uint64_t number) noexcept { if (number != 0) stdio_clients_.erase(number); }

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

  unsigned index_;
  const ServerConfig& config_;
  Hub& hub_;
  Shard& shard_;
  SessionRegistry& sessions_;
  Limits& limits_;
  log::Logger& logger_;  // bound to the loop's thread: what its connections log goes to this Server's sink
  ClientCore& clients_;
  Publishers& publishers_;
  const Acceptors& acceptors_;  // the server's: how this loop serves TCP and stdio clients
  Backplane* backplane_;
  const std::optional<proxy::UpstreamTarget>& upstream_target_;
  std::unique_ptr<proxy::UpstreamPool> upstream_;  // made and closed on the loop
  std::unique_ptr<SendRing> send_ring_;            // made in run(), on the loop's thread (a single-issuer ring)
  std::function<StatsSnapshot()> snapshot_;
  WorkerStats stats_;
  PublishDecoder publish_decoder_;
  RpcDecoder rpc_decoder_;
  std::string read_buf_;  // the loop-wide read buffer: every read is consumed before the next, so one suffices
  net::LoopIo io_;
  std::vector<Worker*> peers_;

  uv_loop_t loop_{};
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
  // Attached stdio clients with a handle, for Detach; one entry per live StdioConn, so it
  // is bounded by the connections (each removed when its connection is freed).
  std::unordered_map<std::uint64_t, Conn*> stdio_clients_;
  moodycamel::ConcurrentQueue<ControlMsg> control_;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  Conn* conns_ = nullptr;   // intrusive list of open connections
  bool stopping_ = false;
  bool handles_closed_ = false;  // guarded by wake_mu_ for cross-thread readers
  bool self_posted_ = false;     // loop-affine: the shard's inbox has posts of this loop's own
  std::mutex wake_mu_;
};

}  // namespace mcpfan::detail

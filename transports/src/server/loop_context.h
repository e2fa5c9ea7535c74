#pragma once
// What the connections and routes of one worker loop work with, and nothing more (as h2o's
// h2o_context_t): this loop's own parts (its libuv loop, engine Shard, socket I/O, decoders,
// counters, upstream pool, connection list) and references to the server's shared ones (the
// configuration, hub, sessions, limits, client core, publishers, backplane). The Worker
// (server/worker.h) owns one and runs the thread, the listeners, the timers and the control
// queue around it; connections never see those. Route unit tests build one without a Worker.
//
// Thread affinity: loop-affine (the loop's thread), except stats() const, which other threads
// read (/metrics). Lifetime: its Worker's; the shared parts outlive it (ServerState).
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "mcpfan/hub.h"
#include "mcpfan/publish_decoder.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/transport/server.h"
#include "net/send_ring.h"
#include "net/socket.h"
#include "proxy/upstream.h"
#include "server/stats_snapshot.h"
#include "server/task_poller.h"

namespace mcpfan::detail {

namespace tls {
class ServerContext;
}
class Conn;
class ClientCore;
class SessionRegistry;
class Limits;
struct Publishers;
struct ServerState;
struct Acceptors;
class Backplane;

/** Counters a loop keeps beyond its shard's. Written by the loop, read by /metrics. */
struct WorkerStats {
  std::atomic<std::int64_t> connections{0};
  std::atomic<std::uint64_t> http_requests{0};
  std::atomic<std::uint64_t> http_errors{0};  // 4xx/5xx answers
  std::atomic<std::uint64_t> callback_exceptions{0};  // caught at a libuv callback boundary
  std::atomic<std::uint64_t> read_pauses{0};  // reading stopped until a client's unread answers drain
  std::atomic<std::int64_t> h2_connections{0};  // of `connections`: those speaking HTTP/2
  std::atomic<std::uint64_t> h2_flushes{0};     // socket writes of HTTP/2 connections (one per connection per turn)
  std::atomic<std::uint64_t> proxied_requests{0};   // requests sent to the --upstream server
  std::atomic<std::uint64_t> upstream_failures{0};  // of those: unreachable, timed out, invalid, cut short, too large
  proxy::UpstreamCounters upstream;                 // this loop's upstream pool (connections, retries)
  TaskPollStats tasks;                              // this loop's poll-to-push (server/task_poller.h)
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

class LoopContext {
 public:
  /** Initialises the loop; `state` outlives the context. `snapshot`: the whole server's numbers, for /metrics. */
  LoopContext(unsigned index, ServerState& state, std::function<StatsSnapshot()> snapshot);
  ~LoopContext();
  LoopContext(const LoopContext&) = delete;
  LoopContext& operator=(const LoopContext&) = delete;

  // ---- this loop's own ----
  [[nodiscard]] uv_loop_t* loop() noexcept { return &loop_; }
  [[nodiscard]] unsigned index() const noexcept { return index_; }
  [[nodiscard]] Shard& shard() noexcept { return shard_; }
  /** What this loop's sockets share (net/socket.h): the loop, its io_uring sends, its read buffer. */
  [[nodiscard]] net::LoopIo& io() noexcept { return io_; }
  [[nodiscard]] PublishDecoder& publish_decoder() noexcept { return publish_decoder_; }
  [[nodiscard]] RpcDecoder& rpc_decoder() noexcept { return rpc_decoder_; }
  [[nodiscard]] WorkerStats& stats() noexcept { return stats_; }
  [[nodiscard]] const WorkerStats& stats() const noexcept { return stats_; }
  /** This loop's connections to the --upstream MCP server, or null (no --upstream). Lives while the loop runs. */
  [[nodiscard]] proxy::UpstreamPool* upstream() noexcept { return upstream_.get(); }
  /** This loop's poll-to-push (--upstream-task-poll), or null. Lives while the loop runs. */
  [[nodiscard]] TaskPoller* task_poller() noexcept { return task_poller_.get(); }
  /** The loop is stopping: no new stream or connection is begun. */
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  /**
   * Any thread: runs `fn` on this loop (an answer from another thread, e.g. the OAuth agent's).
   * False once the loop has stopped (or in a route test without a Worker): `fn` was not taken
   * and is destroyed on the caller's thread, so it must hold nothing loop-affine to destroy.
   */
  [[nodiscard]] bool post(std::function<void()> fn) { return post_ ? post_(std::move(fn)) : false; }
  /** The whole server's numbers now, for /metrics and /status.json. */
  [[nodiscard]] StatsSnapshot stats_snapshot() const { return snapshot_(); }

  // ---- the server's, shared by every loop ----
  [[nodiscard]] const ServerConfig& config() const noexcept { return config_; }
  [[nodiscard]] Hub& hub() noexcept { return hub_; }
  [[nodiscard]] SessionRegistry& sessions() noexcept { return sessions_; }
  [[nodiscard]] Limits& limits() noexcept { return limits_; }
  /** MCP client admission (auth, tenants, ceilings): what HTTP and stdio clients share. */
  [[nodiscard]] ClientCore& clients() noexcept { return clients_; }
  /** Publisher keys and rates: what /v1/publish checks. */
  [[nodiscard]] Publishers& publishers() noexcept { return publishers_; }
  /** TLS for a listener (--tls-cert, --publish-tls-cert: `operator_listener`), or null: plaintext. */
  [[nodiscard]] tls::ServerContext* tls(bool operator_listener) noexcept {
    return operator_listener ? publish_tls_ : tls_;
  }
  /** The backplane, or null (no --nats). Lives while the context does. */
  [[nodiscard]] Backplane* backplane() noexcept { return backplane_; }

  /**
   * Serves `sock` as HTTP/2 from now on: an HTTP/1.1 connection read the client preface, or TLS
   * chose h2 by ALPN. `first`: the bytes read so far, not yet consumed. How is the composition
   * root's (install_transports.cc), so that HTTP/1.1 names no HTTP/2 code.
   */
  void hand_over_h2(std::unique_ptr<net::Socket> sock, bool operator_listener, std::string_view first);

  // ---- the connections of the loop (each links itself when made, unlinks when freed) ----
  void link(Conn* c) noexcept;
  void unlink(Conn* c) noexcept;
  /** An attached stdio client by its handle's number, for Server::detach_stdio (the stdio connection registers itself).
   */
  void register_stdio(std::uint64_t number, Conn* c) {
    if (number != 0) stdio_clients_[number] = c;
  }
  void unregister_stdio(std::uint64_t number) noexcept {
    if (number != 0) stdio_clients_.erase(number);
  }

 private:
  friend class Worker;  // runs the loop: sets stopping_, the upstream pool and the ring, walks conns_

  unsigned index_;
  const ServerConfig& config_;
  Hub& hub_;
  Shard& shard_;
  SessionRegistry& sessions_;
  Limits& limits_;
  ClientCore& clients_;
  Publishers& publishers_;
  Backplane* backplane_;
  const Acceptors& acceptors_;
  tls::ServerContext* tls_;  // ServerState's (set by start() before the workers are made); outlive the context
  tls::ServerContext* publish_tls_;
  std::function<StatsSnapshot()> snapshot_;
  std::function<bool(std::function<void()>)> post_;  // the Worker's control queue
  WorkerStats stats_;
  PublishDecoder publish_decoder_;
  RpcDecoder rpc_decoder_;
  std::string read_buf_;  // the loop-wide read buffer: every read is consumed before the next, so one suffices
  net::LoopIo io_;
  std::unique_ptr<proxy::UpstreamPool> upstream_;  // made and closed on the loop by the Worker
  std::unique_ptr<TaskPoller> task_poller_;        // the same, closed before the pool
  uv_loop_t loop_{};
  Conn* conns_ = nullptr;  // intrusive list of open connections
  bool stopping_ = false;
  void (*on_unlinked_)(void*) = nullptr;  // the Worker's: a stopping loop finishes once the last connection goes
  void* on_unlinked_arg_ = nullptr;
  // Attached stdio clients with a handle, for Detach; one entry per live stdio connection, so
  // it is bounded by the connections (each removed when its connection is freed).
  std::unordered_map<std::uint64_t, Conn*> stdio_clients_;
};

}  // namespace mcpfan::detail

#pragma once
/**
 * The mcpfan network server: W libuv worker loops, each accepting on its own SO_REUSEPORT
 * socket and owning its connections and one engine Shard; HTTP/1.1 for /mcp (MCP
 * Streamable HTTP, `subscriptions/listen` over SSE), /v1/publish, /livez, /readyz, /healthz
 * and /metrics.
 *
 * Thread affinity: construct, start(), stop() and destroy from one controlling thread (not
 * from a worker: callbacks such as StdioOptions::on_end run on worker threads, and stop()
 * called there refuses with an error instead of joining its own thread). attach_stdio(),
 * detach_stdio(), hub() and collect_metrics() are thread-safe.
 *
 * Signals: the host must ignore SIGPIPE (signal(SIGPIPE, SIG_IGN), as the mcpfan program
 * does) before start(): a write to a pipe whose reader has gone (an attached stdio client
 * that exited) raises it, and its default action ends the process.
 *
 * Logging: records (transport/log.h) go to ServerConfig::log.sink, or to stderr when it is
 * empty: NATS connect, disconnect, reconnect, the outage queue's release and a first connect
 * that fails (the node then serves locally and retries); upstream failures; client and
 * publisher authentication failures; streams closed as slow consumers; every limit hit; a
 * worker's listener or io_uring problems; stdio clients refused. Worker loops and NATS
 * threads only queue a record (bounded, rate-limited per kind, never blocking); one log
 * thread per Server calls the sink, from the first record until stop() (or the destructor)
 * has delivered what was queued. Nothing else of the Server's writes to stderr, but for the
 * last words of a process about to abort (an io_uring that fails, an invariant). The start-up
 * summary (version, listeners, workers, auth, backplane, upstream) is the host's to log: the
 * mcpfan program does.
 *
 * Lifetimes: hub() stays valid until the Server is destroyed. stop() first closes the hub
 * (publishes in progress finish, later ones return false and deliver nothing; debounced
 * updates go out), then ends every stream and joins the workers. Publishing concurrently
 * with the destructor is undefined: stop() first, then let publishing threads go, then
 * destroy.
 */
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mcpfan/hub.h"
#include "mcpfan/result.h"
#include "mcpfan/transport/host_auth.h"
#include "mcpfan/transport/log.h"
#include "mcpfan/transport/metrics.h"
#include "mcpfan/transport/server_config.h"

namespace mcpfan {

/**
 * Names one stdio client attached by Server::attach_stdio(): a typed value, not a bare
 * integer, that detach_stdio() and the client's StdioOptions::on_end take. Copyable; it
 * names that client only on the Server that returned it, and is never reused there (a
 * handle of a client that has ended names nothing). Default-constructed: names nothing.
 */
class StdioClient {
 public:
  StdioClient() = default;
  [[nodiscard]] explicit operator bool() const noexcept { return number_ != 0; }
  /** A number for the host's logs and maps: unique within the Server, 0 for none. */
  [[nodiscard]] std::uint64_t number() const noexcept { return number_; }
  friend bool operator==(const StdioClient&, const StdioClient&) = default;

 private:
  friend class Server;
  StdioClient(std::uint64_t server, std::uint64_t number) noexcept : server_(server), number_(number) {}
  std::uint64_t server_ = 0;  // which Server issued it (a process-wide serial)
  std::uint64_t number_ = 0;
};

/** Why a stdio client ended. */
enum class StdioEnd : std::uint8_t {
  InputEnded,     // its input reached EOF; every answer and each listen's final result was written
  Detached,       // Server::detach_stdio(); the same orderly end
  ServerStopped,  // Server::stop()
  Refused,        // its fds could not be served (not a pipe, socket or tty; one regular file as both ends)
  Failed,         // a write failed or stalled past write_timeout_ms, or it fell behind past max_pending_bytes
};

struct StdioOptions {
  /**
   * Called once for the client, on a worker thread, when it has ended and its fds are
   * closed (or, for Refused, handed back closed). Hand the news to the host's own thread
   * (e.g. uv_async_send); it may call attach_stdio() or detach_stdio() but not stop(). It
   * must stay callable until stop() returns. Empty: nobody is told.
   */
  std::function<void(StdioClient, StdioEnd)> on_end;
};

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /**
   * What start() would refuse, checked without binding a port, starting a thread or connecting
   * to NATS (the mcpfan program's --check-config, safe beside a running server): the ranges of
   * the numeric fields, the listen addresses and the loopback rule (ServerConfig::listen.insecure),
   * the key files (read and parsed: a JWT secret of at least 32 bytes, a PEM public key, the
   * publisher keys), the Unix socket path, the upstream URL and the NATS URLs, prefix,
   * credentials and CA files. Returns the one-line summary reload() would return, or the first
   * problem (-32602) naming the flag. Cannot see what only binding or connecting tells (a port
   * in use, a NATS server that refuses). Thread-safe: reads `config` and files only.
   */
  [[nodiscard]] static Result<std::string> check(const ServerConfig& config);

  /**
   * Checks as check() does (nothing is bound before that passes), then binds and starts the
   * worker threads; returns the bound port. Once only.
   */
  [[nodiscard]] Result<std::uint16_t> start();
  /**
   * Closes the hub, ends every listen with its final result, closes every connection, joins
   * the workers. Idempotent. Refused (an error, nothing done) when called on a worker thread.
   */
  Status stop();
  /**
   * Readiness off: GET /readyz answers 503 ("draining") from now on, and /healthz reports
   * draining; everything else is served as before, until stop(). stop() implies it.
   * Thread-safe and idempotent; any time after construction.
   */
  void drain() noexcept;

  /**
   * Serves one stdio-framed client on these fds (equal for a socket), on the next worker
   * in turn, and returns its handle. Thread-safe. On success the server owns the fds; on
   * error (not started yet, or stopping: -32603) they stay the caller's, nothing else
   * happens and options.on_end is never called. Otherwise options.on_end is called exactly
   * once, when the client ends (StdioEnd says why): after its input ended and every answer
   * (and each listen's final result) was written, or at once when the fds cannot be served.
   * Regular files are served (read and written in libuv's threadpool); one regular file
   * cannot be both ends. libuv closes the fds it was given: pass duplicates of 0, 1 and 2
   * (libuv asserts it never closes those).
   */
  [[nodiscard]] Result<StdioClient> attach_stdio(int in_fd, int out_fd, StdioOptions options = {});
  /**
   * Ends a client as if its input had ended: what it sent is answered, each listen gets its
   * final result, then its fds are closed and its on_end runs (StdioEnd::Detached).
   * Thread-safe and asynchronous: it returns before the client has ended. A client that has
   * already ended (or is ending) is left alone: not an error, on_end runs once all the same.
   * Errors (-32602): a handle that names nothing (default-constructed), or one another
   * Server issued; (-32603) before start() or after stop().
   */
  Status detach_stdio(StdioClient client);

  /** The operator listener's bound port after start(), 0 without config.listen.publish_host. */
  [[nodiscard]] std::uint16_t publish_port() const noexcept;

  /**
   * Applies what can change without dropping a stream (SIGHUP in the mcpfan program), read
   * from `next`: the client token keys (auth.jwt_secret_file, auth.jwt_public_key_file: the
   * files are read again), the publisher keys (auth.publish_keys_file; the rate buckets start
   * full), the publish rate and burst, and the per-tenant ceilings (tenants.max_connections/
   * streams/subscriptions/idle_sessions_per_tenant): the settings settings.h declares
   * reloadable (a test holds the two together). Every other field of `next` is ignored. All
   * or nothing: on an error (a file that does not load, auth turned on or off, which needs a
   * restart) nothing changes and the error names the problem. Returns a one-line summary of what is in force.
   * Call from the controlling thread after start(); workers keep serving meanwhile: a request
   * finishes with the keys it started with.
   */
  [[nodiscard]] Result<std::string> reload(const ServerConfig& next);

  /**
   * Walks every family of GET /metrics, with its values at this instant, into the host's
   * `sink` (mcpfan/transport/metrics.h): the same walk /metrics renders as text, so the two
   * cannot disagree. Call it from the host's own scrape or timer.
   * Thread-safe: any thread, concurrently with serving, publishing, reload(), stop() and other
   * collect_metrics() calls; the sink is called synchronously on the calling thread and not
   * after this returns. Cost: one pass over the workers', shards' and tenants' counters, as
   * one GET /metrics (no lock held while the sink runs).
   * Before start() returns: an error, and the sink is not called. After stop(): the final
   * totals (the backplane's families are gone with the backplane). Not concurrently with the
   * destructor.
   */
  Status collect_metrics(MetricsSink& sink) const;

  [[nodiscard]] Hub& hub() noexcept;
  [[nodiscard]] const ServerConfig& config() const noexcept;  // as started: reload() does not change it

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mcpfan

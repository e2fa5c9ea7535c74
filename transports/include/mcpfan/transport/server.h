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
 * Logging: records (transport/log.h) go to ServerConfig::log_sink, or to stderr when it is
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

namespace mcpfan {

struct ServerConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;          // 0 = ephemeral; start() returns the bound port
  unsigned workers = 0;               // 0 = one per core
  /**
   * SSE stream batches are sent through one io_uring per worker, this many submission
   * entries (the batches of one loop turn go out 256 per system call instead of one writev
   * each). 0: libuv writes only. Where the kernel refuses io_uring (too old, a seccomp
   * filter) the server says so once and uses libuv writes; /metrics mcpfan_io_uring_workers.
   */
  unsigned io_uring_entries = 256;
  /**
   * A listening TCP socket of the host's own (bound and listen()ed by it, or inherited, e.g.
   * by socket activation), served instead of binding host:port; -1 (default): bind host:port.
   * start() serves a duplicate per worker and returns its port; the host's fd stays the
   * host's (close it when it likes, the duplicates keep the socket open until stop()). libuv
   * makes the shared socket non-blocking. Not a listening stream socket: start() fails with
   * -32602 and nothing started. `host` still names the default Host allow-list entry: set
   * allow_hosts for a socket on another address.
   */
  int listen_fd = -1;
  /**
   * false (default): host:port and publish_host:publish_port are this Server's alone. An
   * address some other socket listens on (another process, even one whose SO_REUSEPORT
   * sockets the kernel would let join) fails start() with "--listen HOST:PORT: address in
   * use (...)" (or --publish-listen) and nothing started. true: join such a group of
   * SO_REUSEPORT listeners of the same user, and the kernel spreads connections over both
   * processes (several processes on one port on purpose, e.g. a zero-downtime restart).
   * Either way the workers of one Server share each listener with SO_REUSEPORT.
   */
  bool reuse_port = false;
  /**
   * false (default): a listener that is not on a loopback address (host, publish_host, or the
   * address of listen_fd) needs authentication for what it serves, or start() and check() fail
   * with -32602 naming the listener and what is missing: client authentication (jwt_secret_file,
   * jwt_public_key_file or authenticate_client) for /mcp, and publish_keys_file for /v1/publish
   * (both on host:port without publish_host; with publish_host each listener needs only its
   * own). true: serve such a listener without it (the mcpfan program's --insecure).
   */
  bool insecure = false;
  std::size_t max_body = 1u << 20;    // bytes; larger bodies get 413
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_url_length = 8 * 1024;
  std::size_t max_uri_length = 4096;  // longest resource URI accepted
  std::size_t max_uris_per_listen = 1024;
  std::uint64_t keepalive_ms = 15000; // SSE keepalive comment interval
  std::uint64_t shutdown_grace_ms = 1500;
  /**
   * Between drain() (SIGTERM in the mcpfan program) and stop(): how long the node keeps
   * serving everything while GET /readyz answers 503, so that load balancers take it out
   * before its listeners close. 0 (default): stop at once. The Server does not act on it
   * itself: the mcpfan program waits this long between drain() and stop() on SIGTERM, and a
   * host embedding mcpfan does the same with its own timer.
   */
  std::uint64_t drain_delay_ms = 0;
  /**
   * GET /readyz while the NATS backplane is disconnected: "ignore" (default: still 200; the
   * node serves its own streams, and 503 on every node at once would take the whole tier out
   * of a load balancer) or "require" (503: new clients go to nodes that reach the cluster).
   */
  std::string readyz_backplane = "ignore";
  std::vector<std::string> allow_origins;  // empty: http(s)://localhost|127.0.0.1|[::1][:port]
  std::vector<std::string> allow_hosts;    // Host header allow-list; empty: localhost|127.0.0.1|[::1]|listen host
  std::uint64_t session_idle_ms = 300000;  // a 2025-era session with no open stream expires after this
  std::size_t session_replay_bytes = 256 * 1024;  // a 2025 session's journal for Last-Event-ID resumes
  std::uint64_t debounce_ms = 0;           // minimum interval between fan-outs of one (tenant, method, uri); 0 = off
  std::size_t max_line_bytes = 1u << 20;  // longest stdio-framed message

  // ---- connection limits (each hit is counted in mcpfan_limit_hits_total) ----
  std::uint64_t request_timeout_ms = 10000;  // a request must arrive whole this long after it starts (408)
  std::uint64_t idle_timeout_ms = 60000;     // a keep-alive connection between requests closes after this
  std::uint64_t write_timeout_ms = 30000;    // writes making no progress this long close the connection
  std::uint32_t max_requests_per_connection = 10000;  // the last one is answered with Connection: close (0 = unlimited)
  std::uint32_t tcp_keepalive_s = 60;        // TCP keep-alive probes after this idle time (0 = off)

  // ---- tenants (0 = unlimited) ----
  std::int64_t max_connections_per_tenant = 0;
  std::int64_t max_streams_per_tenant = 0;        // listens + 2025-era sessions
  std::int64_t max_subscriptions_per_tenant = 0;  // resource URIs subscribed
  std::size_t max_tenants = 10000;                // distinct tenants with clients; more are refused
  // 2025-era sessions without an open GET stream (made by initialize, held until
  // --session-idle-ms): without a ceiling one client pipelining initialize holds gigabytes.
  std::size_t max_idle_sessions = 20000;            // in all (503 past it)
  std::int64_t max_idle_sessions_per_tenant = 5000; // per tenant (429 past it)
  std::size_t max_listens_per_connection = 256;     // 2026 listens one stdio client may hold
  std::size_t metrics_tenants = 100;              // tenants labelled by name in /metrics; the rest sum as "_other"

  // ---- logging (transport/log.h; what is logged and on which thread: "Logging" above) ----
  /**
   * Receives every record at or above log_level, on the Server's log thread (never a worker
   * loop; LogSink says when it is called and for how long). Empty (default): the built-in
   * sink, which writes log_format lines to stderr through a bounded queue and its own thread
   * (a stderr nobody drains never stops a loop). With a sink of its own, the Server writes
   * nothing to stderr.
   */
  LogSink log_sink;
  LogLevel log_level = LogLevel::Info;
  LogFormat log_format = LogFormat::Text;  // the built-in sink's; ignored with log_sink

  // ---- authentication (all empty: no auth, every client is tenant "default") ----
  std::string jwt_secret_file;      // HS256 secret for client tokens
  std::string jwt_public_key_file;  // RS256/ES256 public key (PEM) for client tokens
  std::string publish_keys_file;    // lines "KEY TENANT" ("*" = any tenant)
  std::string unix_tenant;          // --unix clients belong to this tenant without a token
  /**
   * The host's own client authentication in place of JWTs (transport/host_auth.h: when it is
   * called, on which threads, the outcomes). Empty: not used. Set together with
   * jwt_secret_file or jwt_public_key_file, start() fails (-32602) and starts nothing.
   * Fixed at start: reload() keeps it and refuses JWT files while it is set.
   */
  ClientAuthenticator authenticate_client;
  double publish_rate = 0;          // notifications per second per publisher key (0 = unlimited)
  double publish_burst = 0;         // bucket size; 0 = one second's worth
  std::string unix_path;                  // non-empty: stdio-framed clients on this Unix socket
  // ---- the operator listener (empty publish_host: every path on the one listener) ----
  // Non-empty: the operator paths (/v1/publish, /metrics; router.h is_operator_path) are served
  // only on publish_host:publish_port and answer 404 on the public listener, which keeps /mcp
  // and /healthz; the operator listener answers /mcp with 404 (clients belong on the public one).
  std::string publish_host;
  std::uint16_t publish_port = 0;         // 0 = ephemeral; publish_port() returns the bound port

  // ---- NATS backplane (empty `nats`: one process, in memory) ----
  std::string nats;                 // comma-separated nats:// URLs
  std::string nats_prefix = "mcpfan";  // subjects are <prefix>.v1.… (transports/src/nats/subjects.h)
  std::string node_name;            // this node's NATS connection name
  std::string nats_creds_file;      // NATS user credentials file, optional
  std::string nats_tls_ca_file;     // CA bundle: require TLS to the NATS servers, optional
  std::uint64_t nats_linger_ms = 5000;  // interest kept this long after its last subscriber
  int nats_outage_buffer_bytes = 8 << 20;  // for other nodes while disconnected; a publish past it gets 503
  std::int64_t nats_receive_buffer_bytes = 64 << 20;  // received from other nodes, not yet delivered; past it dropped (counted)
  std::uint64_t nats_settle_ms = 1000;      // after a reconnect, before what waited is sent (peers re-subscribe: 570 ms measured at 19,000 subjects)
  std::size_t nats_max_subjects = 1'000'000;
  std::uint64_t nats_batch_window_us = 1000;  // after a send to NATS, later ones wait up to this long to leave together
  std::string nats_io = "libuv";    // the NATS socket IO: "libuv" (the backplane's own loop) or "threads" (nats.c's)
  bool nats_publish_batching = false;  // nats.c's flusher thread waits 1 ms to batch; off: sent at once (libuv: at the loop's next turn)
  int nats_delivery_threads = 1;  // nats.c's shared delivery pool; 0 = its default, a thread per subscription  // past it the tenant with the most subjects is folded into one
  // ---- front proxy (empty `upstream`: mcpfan serves only what it serves itself) ----
  std::string upstream;             // http://HOST:PORT/path of an MCP server (an IP or a name): every request mcpfan does not serve goes there
  /**
   * A resolved --upstream host name is reused for new connections this long; a failed
   * connect forgets it at once. 0: resolve for every new connection.
   */
  std::uint64_t upstream_resolve_ttl_ms = 5000;
  std::uint64_t upstream_connect_ms = 5000;      // connecting to it (502 past it)
  std::uint64_t upstream_first_byte_ms = 30000;  // the first byte of its answer (504 past it)
  std::uint64_t upstream_idle_ms = 300000;       // a gap in a streaming answer (the stream is cut)
  std::size_t upstream_max_idle = 16;            // pooled keep-alive connections per worker
  std::uint64_t upstream_keepalive_ms = 4000;    // a pooled connection idle this long is closed: below the upstream's keep-alive timeout
  std::size_t upstream_max_answer_bytes = 1u << 20;  // an answer mcpfan rewrites (initialize, server/discover) is read whole up to this
  bool upstream_forward_subscribe = false;       // also send 2025 resources/(un)subscribe to the upstream
  ShardOptions shard;
};

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
   * the numeric fields, the listen addresses and the loopback rule (ServerConfig::insecure),
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

  /** The operator listener's bound port after start(), 0 without config.publish_host. */
  [[nodiscard]] std::uint16_t publish_port() const noexcept;

  /**
   * Applies what can change without dropping a stream (SIGHUP in the mcpfan program), read
   * from `next`: the client token keys (jwt_secret_file, jwt_public_key_file: the files are
   * read again), the publisher keys (publish_keys_file; the rate buckets start full), the
   * publish rate and burst, and the per-tenant ceilings (max_connections/streams/subscriptions/
   * idle_sessions_per_tenant). Every other field of `next` is ignored. All or nothing: on an
   * error (a file that does not load, auth turned on or off, which needs a restart) nothing
   * changes and the error names the problem. Returns a one-line summary of what is in force.
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

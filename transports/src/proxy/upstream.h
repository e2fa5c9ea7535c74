#pragma once
// The upstream leg of the front proxy (docs/protocol.md "Front proxy"): HTTP/1.1 requests to one upstream MCP
// server, from one worker loop, over keep-alive connections that the loop pools. The answer
// is streamed to a sink as it arrives (status and headers, then body bytes with the chunked
// framing removed), never buffered whole; an SSE answer is just a body that does not end.
//
//  - Bounded: at most `max_idle` idle connections are kept; the answer's head is bounded
//    (`max_head_bytes`); a body without an end is not (that is an SSE stream) but the sink
//    can pause() the call, which stops reading the upstream socket (backpressure).
//  - Timed: connecting (`connect_ms`), the first byte of the answer (`first_byte_ms`), and
//    the gap between two reads once it streams (`idle_ms`); each expiry is a failure with
//    its own kind, so the proxy can answer 502 or 504.
//  - Retries (RFC 9110 §9.2.2): a request on a reused connection that the upstream had closed
//    meanwhile is sent once more on a fresh connection only when the upstream cannot have
//    received it (not one byte of it was written: the socket refused the first write), or,
//    for an idempotent method, when no byte of an answer came back. A POST the upstream may
//    have read is never sent twice: it fails (Closed) and the client gets a 502.
//  - A pooled connection idle for `keepalive_ms` is closed, not reused: set below the
//    upstream's own keep-alive timeout, a request never races the upstream's close.
//  - Host names: looked up with uv_getaddrinfo (libuv's threadpool; the loop never waits),
//    one look-up per pool at a time, the calls that need it waiting. The answer serves new
//    connections for `resolve_ttl_ms`; a connect that fails on every address forgets it, so
//    the next connection looks the name up again (an upstream that moved is found). Each
//    address is tried in turn (localhost may answer ::1 first while the upstream listens on
//    127.0.0.1). A failed look-up fails the waiting calls with Resolve, naming the host.
//    Names under .invalid fail at once without a look-up (RFC 6761 §6.4).
//
// Thread affinity: every method and every sink call on the loop given to the constructor.
// Lifetime: a call ends with exactly one of on_end() / on_failure() (or cancel(), after
// which the sink hears nothing); the caller forgets the call then. close() ends every call
// (their sinks hear on_failure(Closed)) and closes the connections; the pool may be
// destroyed once close() was called and the loop has run its close callbacks
// (closed() is true). A look-up still running then finishes on the threadpool and its
// callback, on the loop, only frees itself.
#include <http_parser.h>
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcpfan/result.h"
#include "tls/context.h"

namespace mcpfan::detail::proxy {

/** Where the upstream is: from `http://host:port/path` or `https://host:port/path`. */
struct UpstreamTarget {
  std::string host;       // an IP address (v4 or v6, without brackets) or a host name
  std::uint16_t port = 80;
  std::string path = "/";  // the MCP endpoint's path on the upstream
  std::string authority;   // host[:port] as written: the Host header
  bool https = false;      // https://: every connection speaks TLS (SNI and the certificate checked for `host`)
  // https: the TLS client (its trust roots); set by the caller (preflight) before a pool uses the target.
  std::shared_ptr<tls::ClientContext> tls{};
};
/** Parses an `http://` or `https://` URL (the host an IP literal or a name); the error names the problem. */
[[nodiscard]] Result<UpstreamTarget> parse_upstream_url(std::string_view url);

/** One request for the upstream: its bytes and what the pool must know of it. */
struct ForwardedRequest {
  std::string bytes;        // head and body, as written on the wire
  bool head = false;        // a HEAD: the answer ends at its head, whatever its Content-Length says
  bool idempotent = false;  // GET, HEAD, OPTIONS, PUT, DELETE, TRACE (RFC 9110 §9.2.2): may be retried
};

struct UpstreamLimits {
  std::uint64_t connect_ms = 5000;
  std::uint64_t first_byte_ms = 30000;
  std::uint64_t idle_ms = 300000;
  std::size_t max_head_bytes = 64 * 1024;
  std::size_t max_idle = 16;
  std::uint64_t keepalive_ms = 4000;  // a pooled connection idle this long is closed (Node's server closes at 5 s)
  std::uint64_t resolve_ttl_ms = 5000;  // a host name's addresses serve new connections this long; 0: look up for each
};

enum class UpstreamFailure {
  Connect,    // refused, unreachable, or not connected within connect_ms
  FirstByte,  // no byte of an answer within first_byte_ms
  Idle,       // a streaming answer went quiet for idle_ms
  Protocol,   // not HTTP/1.x, or a head past max_head_bytes
  Closed,     // the upstream closed the connection before the answer was complete
  Resolve,    // the host name did not resolve (the resolver's error in the message)
};
[[nodiscard]] std::string_view failure_name(UpstreamFailure f) noexcept;

using HeaderList = std::vector<std::pair<std::string, std::string>>;
/** The first header named `name` (case-insensitive), or null. */
[[nodiscard]] const std::string* find_header(const HeaderList& headers, std::string_view name) noexcept;
/** Whether the answer's Content-Type is text/event-stream. */
[[nodiscard]] bool is_event_stream(const HeaderList& headers) noexcept;

class UpstreamSink {
 public:
  virtual ~UpstreamSink() = default;
  /** The answer's status line and headers (names as sent). */
  virtual void on_head(int status, const HeaderList& headers) = 0;
  /** Body bytes as they arrive, chunked framing removed. */
  virtual void on_body(std::string_view bytes) = 0;
  /** The answer is complete. Terminal. */
  virtual void on_end() = 0;
  /** The call failed (before or after on_head). Terminal. */
  virtual void on_failure(UpstreamFailure kind, const std::string& what) = 0;
};

/**
 * What a pool counts. Written on the pool's loop, readable from any thread (relaxed atomics):
 * the owner may keep them (a worker's stats, read by /metrics) and outlive the pool.
 */
struct UpstreamCounters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> connects{0};     // TCP connections opened
  std::atomic<std::uint64_t> reused{0};       // requests sent on a pooled connection
  std::atomic<std::uint64_t> retried{0};      // sent again after a stale pooled connection
  std::atomic<std::uint64_t> not_retried{
      0};  // a stale pooled connection failed a request it may have received: not sent twice
  std::atomic<std::uint64_t> expired{0};      // pooled connections closed after keepalive_ms idle
  std::atomic<std::uint64_t> failures{0};
  std::atomic<std::uint64_t> resolutions{0};       // host name look-ups that answered
  std::atomic<std::uint64_t> resolve_failures{0};  // look-ups that failed
};

class UpstreamPool;
/** One request in flight; valid until its terminal sink call or cancel(). */
struct UpstreamCall;
struct Conn;

class UpstreamPool {
 public:
  struct Stats {
    std::uint64_t requests = 0;
    std::uint64_t connects = 0;     // TCP connections opened
    std::uint64_t reused = 0;       // requests sent on a pooled connection
    std::uint64_t retried = 0;      // sent again after a stale pooled connection
    std::uint64_t not_retried = 0;  // a stale pooled connection failed a request it may have received: not sent twice
    std::uint64_t expired = 0;      // pooled connections closed after keepalive_ms idle
    std::uint64_t failures = 0;
    std::uint64_t resolutions = 0;
    std::uint64_t resolve_failures = 0;
    std::size_t idle = 0;           // pooled now
    std::size_t active = 0;         // calls in flight now
  };

  /** `counters`: where it counts (null: its own); must outlive the pool. */
  UpstreamPool(uv_loop_t* loop, UpstreamTarget target, UpstreamLimits limits = {},
               UpstreamCounters* counters = nullptr);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  /**
   * Sends `request` (a whole HTTP/1.1 request: head and body; the caller writes the Host,
   * Content-Length and the headers it forwards) and streams the answer to `sink`.
   */
  UpstreamCall* start(ForwardedRequest request, UpstreamSink* sink);
  /** Ends a call now; its sink hears nothing more; its connection is closed, not pooled. */
  void cancel(UpstreamCall* call);
  /** Backpressure: stop / start reading the call's answer. */
  void pause(UpstreamCall* call);
  void resume(UpstreamCall* call);
  /** Fails every call (on_failure(Closed)) and closes every connection. Idempotent; not from a sink callback. */
  void close();
  [[nodiscard]] bool closed() const noexcept;
  [[nodiscard]] const UpstreamTarget& target() const noexcept { return target_; }
  [[nodiscard]] Stats stats() const;

 private:
  Conn* open_conn(UpstreamCall* c);  // a Conn with its handles initialised, owned by c
  void connect(UpstreamCall* c);  // on a fresh connection (after a look-up, for a name whose addresses are stale)
  void dial(UpstreamCall* c, std::shared_ptr<const std::vector<sockaddr_storage>> addrs, std::size_t index);
  void resolve();                 // starts the look-up the waiting calls need
  void resolved(int status, std::vector<sockaddr_storage> addrs);
  void forget(UpstreamCall* c);   // out of active_ and waiting_
  void send_on(UpstreamCall* c);  // writes the request, reads the answer
  /** A pooled connection failed `c` before any answer: sent again on a fresh one if that is safe, else failed. */
  void stale(UpstreamCall* c, bool nothing_sent, std::string what);
  void pool_idle(Conn* conn);     // keeps it for keepalive_ms
  void start_reading(Conn* conn);
  void on_read(Conn* conn, ssize_t n, const uv_buf_t* buf);
  void on_records(Conn* conn, const char* data, std::size_t len);  // https: records in, the answer's bytes out
  void on_answer_bytes(Conn* conn, const char* data, std::size_t n);
  [[nodiscard]] bool start_tls(Conn* conn);  // false: the call failed
  void write_records(Conn* conn);
  void arm(UpstreamCall* c, std::uint64_t ms, UpstreamFailure kind);
  void finish(UpstreamCall* c, bool reusable);  // on_end(); the connection pooled or closed
  void fail(UpstreamCall* c, UpstreamFailure kind, std::string what);  // on_failure(); closed
  void drop(UpstreamCall* c);    // no sink call; closed
  void unhook(UpstreamCall* c);  // closes the call's connection, if any
  void close_conn(Conn* conn);   // frees it once libuv has run the close callbacks

  uv_loop_t* loop_;
  UpstreamTarget target_;
  UpstreamLimits limits_;
  std::vector<Conn*> idle_;            // pooled connections, most recent last
  std::vector<UpstreamCall*> active_;  // calls in flight
  struct Lookup;                       // a uv_getaddrinfo in flight; outlives the pool if need be (upstream.cc)
  Lookup* lookup_ = nullptr;
  std::vector<UpstreamCall*> waiting_;  // calls whose connection waits for lookup_
  std::shared_ptr<const std::vector<sockaddr_storage>> addrs_;  // the literal, or the last look-up's answer
  std::uint64_t resolved_at_ = 0;      // uv_now() of that answer
  bool host_is_name_ = false;          // target_.host is not an IP literal: looked up
  std::size_t closing_ = 0;            // handles whose close callback has not run yet
  bool shut_ = false;
  UpstreamCounters own_counters_;
  UpstreamCounters& counters_;
};

}  // namespace mcpfan::detail::proxy

#pragma once
// One client connection speaking HTTP/2 (RFC 9113) with nghttp2, over TLS (ALPN "h2") or in
// cleartext with prior knowledge (h2c). It begins as an HTTP/1.1 connection: the HTTP/1.1
// connection (http1/connection.h) hands its socket over when ALPN chose h2 or the first bytes
// are the HTTP/2 preface. Each stream is an H2Stream (http2/stream.h), an Exchange the routes
// answer as they answer HTTP/1.1, so every route works the same over both.
//
// Writes: whatever the streams and nghttp2 have to send this loop turn goes out in one socket
// write, at the turn's end (a uv_check handle): a publish that reaches 1,000 listens on one
// connection is one write, not 1,000. The event bytes are copied once, from the shard's shared
// buffers into that write (nghttp2's own buffer is skipped: NGHTTP2_DATA_FLAG_NO_COPY).
//
// Hostile peers are bounded and counted (mcpfan_limit_hits_total{limit="h2_..."}), and the
// connection ends with a GOAWAY naming the reason: rapid reset, CONTINUATION, SETTINGS, PING
// and PRIORITY floods, header lists past --max-header-bytes, streams whose window stays shut
// (reset alone), more streams than SETTINGS_MAX_CONCURRENT_STREAMS.
//
// Thread affinity: loop-affine (its worker). Lifetime: frees itself once its socket and its
// check handle are closed; its streams go with it.
#include <nghttp2/nghttp2.h>
#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mcp/limits.h"
#include "mcp/usage.h"
#include "net/socket.h"
#include "server/conn.h"

namespace mcpfan::detail {

class LoopContext;
class H2Stream;

class Http2Conn final : public Conn, private net::SocketEvents {
 public:
  /**
   * Serves `sock` (reading already) as HTTP/2 from now on; `first` are the bytes read that made
   * it HTTP/2 (the client preface, or the first bytes after a TLS handshake that chose h2).
   */
  static void adopt(LoopContext& w, std::unique_ptr<net::Socket> sock, bool operator_listener, std::string_view first);
  ~Http2Conn() override;
  Http2Conn(const Http2Conn&) = delete;
  Http2Conn& operator=(const Http2Conn&) = delete;

  // ---- what its streams use ----
  [[nodiscard]] LoopContext& context() noexcept { return w_; }
  [[nodiscard]] nghttp2_session* session() noexcept { return session_; }
  [[nodiscard]] bool peer_is_loopback() { return sock_->peer_is_loopback(); }
  [[nodiscard]] bool operator_listener() const noexcept { return operator_listener_; }
  /** The common name of the client's verified TLS certificate; empty: none. */
  [[nodiscard]] std::string client_certificate() const { return sock_->client_certificate(); }
  /** Request body bytes its streams hold now: they count what they buffer and what they let go. */
  void body_held(std::size_t added) noexcept { body_bytes_ += added; }
  void body_freed(std::size_t freed) noexcept { body_bytes_ -= std::min(body_bytes_, freed); }
  /** A stream whose answer the upstream writes: told when the connection drains (until proxy_ended()). */
  void proxy_started(H2Stream* s);
  void proxy_ended(H2Stream* s) noexcept;
  [[nodiscard]] TenantBinding& binding() noexcept { return binding_; }
  /** Something was queued or submitted: the turn's flush sends it. */
  void want_flush();
  /** A stream framed the last byte of a batch: after_send() is called on it once the flush has run. */
  void after_send(H2Stream* s) { sent_.push_back(s); }
  /** Bytes waiting to be written (the socket's queue and this turn's output). */
  [[nodiscard]] std::size_t unwritten() const noexcept { return sock_->queued_bytes() + out_.size(); }
  /** A limit was hit on this connection: counted. */
  void hit(Limit l);
  /** Ends the connection: GOAWAY(`error_code`, `reason`) counting `why`, then the close once it is written. */
  void go_away(std::uint32_t error_code, std::optional<Limit> why, std::string_view reason);

  // Conn
  void begin_shutdown() override;
  void force_close() override { close(); }
  void sweep(std::uint64_t now_ms) override;

 private:
  Http2Conn(LoopContext& w, std::unique_ptr<net::Socket> sock, bool operator_listener);
  void start(std::string_view first);
  void close();
  void flush();
  void receive(const char* data, std::size_t len);
  /** A fatal nghttp2 error: counted by its kind, then GOAWAY and close. */
  void failed(int nghttp2_error);
  void maybe_finish();  // shutting down or going away, and nothing is left: close
  /** After the client's FIN: a stream whose upstream answer is still being written. */
  [[nodiscard]] bool answers_pending() const noexcept;
  void free_closed();  // streams nghttp2 closed during the last call
  void freed();        // both handles are closed: the last step

  // net::SocketEvents
  void on_data(net::Socket& s, const char* data, std::size_t len) override { receive(data, len); }
  void on_read_end(net::Socket& s, int status) override;
  void on_written(net::Socket& s, std::uint32_t tag, int status) override;
  void on_shutdown_failed(net::Socket&) override { close(); }
  void on_closed(net::Socket& s) override;
  void on_failure(net::Socket&) override { close(); }

  // nghttp2 callbacks (connection.cc / callbacks.cc)
  friend struct H2Callbacks;
  /** A token bucket: false once more than `burst` frames came faster than `per_s` a second. */
  struct Bucket {
    double tokens;
    std::uint64_t at_ms = 0;
    bool take(std::uint64_t now_ms, double burst, double per_s) noexcept;
  };

  LoopContext& w_;
  std::unique_ptr<net::Socket> sock_;
  nghttp2_session* session_ = nullptr;
  uv_check_t flush_check_{};
  // Started with the check handle: a flush asked for from the worker's own check callback (the
  // shard's flush writes the streams' notifications there) would otherwise wait for the loop's
  // next wake-up, as a check handle started during the check phase first runs in the next turn.
  uv_idle_t flush_idle_{};
  const bool operator_listener_;
  TenantBinding binding_;
  std::unordered_map<std::int32_t, std::unique_ptr<H2Stream>> streams_;
  std::vector<std::unique_ptr<H2Stream>> closed_;  // freed after the nghttp2 call that closed them
  std::vector<H2Stream*> sent_;
  std::vector<H2Stream*> proxied_;  // streams with a ProxiedAnswer in flight (proxy_started)
  std::string out_;             // this turn's bytes: frames nghttp2 serialized, DATA payloads copied from the streams
  std::size_t body_bytes_ = 0;  // request bodies buffered by its streams, bounded as one
  std::uint64_t idle_since_ms_ = 0;  // no open stream since then (0: some are open)
  std::uint64_t goaway_ms_ = 0;
  std::size_t discarded_ = 0;  // read after the GOAWAY and dropped
  Bucket resets_, pings_, settings_, priorities_;
  unsigned header_refusals_ = 0;
  unsigned refused_streams_ = 0;
  unsigned handles_open_ = 0;  // the socket, the check and the idle handle: freed when all are closed
  bool flush_pending_ = false;
  bool in_flush_ = false;
  bool flush_again_ = false;  // asked to flush while flushing
  bool shutting_down_ = false;
  bool going_away_ = false;
  bool peer_eof_ = false;      // the peer's FIN came: close once the last frames are written
  bool last_written_ = false;  // the GOAWAY and what preceded it are written
  bool closing_ = false;
};

}  // namespace mcpfan::detail

#pragma once
// One HTTP/2 stream of an Http2Conn (http2/connection.h): one request and its answer, so one
// Exchange (http/exchange.h) the routes answer as they answer an HTTP/1.1 request. Its request
// head and body arrive through the connection's nghttp2 callbacks and become an HttpRequest
// value; a listen or a 2025 session GET turns it into the StreamCarrier of an EventStream,
// whose batches go out as DATA frames; a forwarded request into the AnswerCarrier of a
// ProxiedAnswer. What it sends waits in its own queue until nghttp2 asks for it (flow control:
// a stream whose window is closed holds its queue; the shard coalesces behind it and closes it
// as a slow consumer at --max-pending-bytes, without stalling the other streams).
//
// Thread affinity: loop-affine (its connection's worker). Lifetime: owned by its connection,
// made when the client's HEADERS open it, freed once nghttp2 has closed it (or with the
// connection); the shard, the session and the upstream leg name its EventStream only until
// close().
#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/event_stream.h"
#include "http/exchange.h"
#include "http/proxied_answer.h"
#include "http/request.h"
#include "mcpfan/shard.h"

namespace mcpfan::detail {

class Http2Conn;

class H2Stream final : public StreamingExchange, private StreamCarrier, private AnswerCarrier {
 public:
  H2Stream(Http2Conn& conn, std::int32_t id);
  ~H2Stream() override;
  H2Stream(const H2Stream&) = delete;
  H2Stream& operator=(const H2Stream&) = delete;

  [[nodiscard]] std::int32_t id() const noexcept { return id_; }

  // ---- the request, from the connection's nghttp2 callbacks ----
  /** One field of the head (nghttp2 has checked its syntax). False: refused (too large); the stream is reset. */
  [[nodiscard]] bool on_header(std::string_view name, std::string_view value);
  /** Body bytes. */
  void on_body(const std::uint8_t* data, std::size_t len);
  /** END_STREAM: the request is whole and is routed now. */
  void on_request_end();
  /** nghttp2 is done with the stream (answered, reset by either side, or the connection ends). */
  void on_closed();
  /** A request begun and not yet whole. */
  [[nodiscard]] bool receiving() const noexcept { return !routed_ && !closed_ && !reset_; }
  [[nodiscard]] std::uint64_t begun_ms() const noexcept { return begun_ms_; }
  /** Carries an EventStream (a listen, a 2025 session's GET). */
  [[nodiscard]] bool streaming() const noexcept { return streaming_; }
  /** Suspended (Exchange::suspend) since `since_ms`: waits for the OAuth agent. */
  [[nodiscard]] bool waiting_since(std::uint64_t& since_ms) const noexcept {
    since_ms = wait_begun_ms_;
    return wait_token_ != nullptr;
  }
  /** A wait that outlived the request timeout: answered 503. */
  void wait_timed_out(std::uint64_t timeout_ms);
  /** The upstream answers it (--upstream), and has not finished. */
  [[nodiscard]] bool proxying() const noexcept { return proxy_ != nullptr; }

  // ---- its answer's bytes, for the connection's nghttp2 data source ----
  /** How much of its queue the next DATA frame carries (at most `max`), and whether that ends the stream. */
  ssize_t next_frame(std::size_t max, std::uint32_t* data_flags);
  /** Appends the DATA frame's header and `length` bytes of the queue to `out`, consuming them. */
  void emit_frame(const std::uint8_t* framehd, std::size_t length, std::string& out);
  /** Bytes queued and not yet framed. */
  [[nodiscard]] std::size_t queued() const noexcept { return out_bytes_; }
  /** Has bytes waiting and nghttp2 took none of them since `since_ms` (its window stayed closed). */
  [[nodiscard]] bool stalled(std::uint64_t now_ms, std::uint64_t timeout_ms) const noexcept {
    return out_bytes_ > 0 && now_ms - progress_ms_ >= timeout_ms;
  }
  /** A framed batch was handed on: the event stream may get the next one (called after nghttp2's send). */
  void after_send();

  // ---- the connection's ----
  /** Server shutdown: a listen gets its final result, a session stream its end; other answers run out. */
  void begin_shutdown();
  /** Abandons the stream with RST_STREAM(`error_code`). */
  void reset(std::uint32_t error_code);

  // ---- Exchange (http/exchange.h) ----
  using Exchange::respond;
  [[nodiscard]] EventStream& event_stream() noexcept override { return events_; }
  [[nodiscard]] LoopContext& context() noexcept override;
  [[nodiscard]] bool peer_is_loopback() override;
  [[nodiscard]] bool on_operator_listener() const noexcept override;
  [[nodiscard]] std::string client_certificate() const override;
  [[nodiscard]] TenantBinding& binding() noexcept override;
  void respond(Response r) override;
  void forward(proxy::UpstreamPool& pool, proxy::ForwardedRequest request, std::string id_json,
               AnswerRewrite rewrite,
               std::unique_ptr<AnswerObserver> observer) override;
  [[nodiscard]] Resume suspend(const HttpRequest& req) override;

 private:
  /** Hands req_ to the routes (the first time, and again after a suspend()). */
  void route();
  void resume_waiting(std::shared_ptr<const AuthWait> waited);
  /** One piece of the queue: bytes of its own, or a shard batch whose buffers it holds. */
  struct Piece {
    std::string bytes;
    std::optional<OutBatch> batch;
    std::size_t iov = 1;     // the batch's next iovec (bufs[0] is the HTTP/1.1 framing slot, unused here)
    std::size_t off = 0;     // within bytes, or within that iovec
    bool batch_end = false;  // the event stream's batch ends with this piece: tell it once it is framed
  };

  // StreamCarrier: the EventStream's bytes as DATA frames
  void stream_started() override;
  void write_head() override;
  [[nodiscard]] Wrote write_events(OutBatch&& batch) override;
  void write_end() override;
  void abort() override;
  // AnswerCarrier: a proxied answer as HEADERS and DATA
  void answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                   bool no_body) override;
  void answer_body(std::string_view bytes) override;
  void answer_end() override;
  [[nodiscard]] bool answer_backlogged() const noexcept override;
  void answer_error(Response r) override { respond(std::move(r)); }
  void answer_done(bool complete) override;

  /** HEADERS with `fields` (already lower-case-able); the body follows from the queue unless `end`. */
  void submit_head(int status, std::string_view content_type, const std::vector<Field>& fields,
                   std::optional<std::size_t> length, bool end);
  void queue(std::string bytes);
  void finish_body();  // END_STREAM after what is queued
  void wake();         // there is something to send: nghttp2 asks for it at the flush
  void refuse(int status, std::string message);
  /** Lets the request go (routed, refused or reset), and its body out of the connection's count. */
  void free_request() noexcept;

  Http2Conn& conn_;
  const std::int32_t id_;
  std::unique_ptr<HttpRequest> req_;  // while the request arrives: freed once routed (a listen holds none)
  std::uint64_t begun_ms_;
  std::uint64_t progress_ms_ = 0;
  std::size_t header_bytes_ = 0;
  std::size_t out_bytes_ = 0;
  // Its queue: pieces from out_head_ on. A vector, not a deque: libstdc++'s deque allocates
  // ~600 bytes when made, and most streams (answered at once, or idle listens) queue little.
  std::vector<Piece> out_;
  std::size_t out_head_ = 0;
  std::optional<std::pair<int, std::string>> refused_;  // the request broke a limit: answered at its end
  bool routed_ = false;                                 // the request was whole and handed to the routes
  bool head_sent_ = false;                              // HEADERS submitted
  bool body_done_ = false;                              // the body's end is queued (END_STREAM once the queue is empty)
  bool deferred_ = false;                               // the data source said "nothing now": resume it when bytes come
  bool closed_ = false;                                 // nghttp2 closed it
  bool reset_ = false;                                  // we reset it: nothing more is sent
  bool streaming_ = false;                              // carries an EventStream
  bool batch_out_ = false;                              // a batch was framed whole: after_send() tells the event stream
  bool head_request_ = false;
  EventStream events_;
  std::unique_ptr<ProxiedAnswer> proxy_;
  std::unique_ptr<ProxiedAnswer> retired_;
  std::shared_ptr<char> wait_token_;  // suspended: its Resume holds a weak reference; req_ is kept meanwhile
  std::uint64_t wait_begun_ms_ = 0;
};

}  // namespace mcpfan::detail

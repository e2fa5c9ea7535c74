#pragma once
// One accepted TCP connection speaking HTTP/1.1 (until its first bytes say HTTP/2: then it
// hands its socket to an HTTP/2 connection, http2/connection.h): requests (http1/request_parser.h: keep-alive,
// pipelining, chunked bodies) become HttpRequest values handed to the routes with the
// connection as their Exchange (http/exchange.h), answered in order. A `subscriptions/listen` or
// a 2025 session's GET turns it into the carrier of an EventStream (http/event_stream.h), which
// knows what the stream means; the connection only frames it in chunks. All its bytes go
// through its net::Socket. Loop-affine. Freed only once its socket has closed.
// Its code is in three files: connection.cc (reading, answering, closing, timeouts),
// connection_requests.cc (what it does with each parsed request: http1/request_parser.h reads them),
// connection_streams.cc (carrying a stream, in chunks).
#include <uv.h>

#include <memory>
#include <optional>
#include <string>

#include "http/event_stream.h"
#include "http/exchange.h"
#include "http/proxied_answer.h"
#include "http1/request_parser.h"
#include "mcp/limits.h"
#include "mcp/sessions.h"
#include "mcp/usage.h"
#include "mcpfan/shard.h"
#include "net/socket.h"
#include "proxy/upstream.h"
#include "server/conn.h"

namespace mcpfan::detail {

class LoopContext;
class Http1Conn final : public Conn,
                        public StreamingExchange,
                        private StreamCarrier,
                        private AnswerCarrier,
                        private RequestParser::Events,
                        private net::SocketEvents {
 public:
  /** `operator_listener`: accepted on --publish-listen's listener (router.cc serves the operator paths there). */
  Http1Conn(LoopContext& w, bool operator_listener);
  ~Http1Conn();
  Http1Conn(const Http1Conn&) = delete;
  Http1Conn& operator=(const Http1Conn&) = delete;

  /** Its socket, to uv_accept() into (the only writer of the connection: net/socket.h). */
  [[nodiscard]] net::Socket& socket() noexcept { return *sock_; }
  void start();
  /** Idempotent; frees the connection once libuv has closed the handle. */
  void close();
  /**
   * Closes after an answer, as nginx's lingering close does: the queued writes finish, the
   * write side is shut down, and input is read and discarded until the peer's EOF, a quiet
   * spell or a byte cap, then close(). Closing with unread input in the receive buffer makes
   * the kernel send a reset, and the peer then loses answers it had not read yet (a 413 sent
   * while the client was still uploading, the answers before a Connection: close).
   */
  void linger();

  // ---- Exchange: what the routes do with the request being answered (http/exchange.h) ----
  using Exchange::respond;
  [[nodiscard]] EventStream& event_stream() noexcept override { return events_; }
  [[nodiscard]] LoopContext& context() noexcept override { return w_; }
  [[nodiscard]] bool peer_is_loopback() override { return sock_->peer_is_loopback(); }
  [[nodiscard]] bool on_operator_listener() const noexcept override { return operator_listener_; }
  [[nodiscard]] std::string client_certificate() const override { return sock_->client_certificate(); }
  [[nodiscard]] TenantBinding& binding() noexcept override { return binding_; }
  /** Writes a complete response; the connection closes after it unless keep-alive holds. */
  void respond(Response r) override;
  /**
   * The request just parsed is answered by a ProxiedAnswer (http/proxied_answer.h); later
   * pipelined requests wait (their bytes are kept, bounded) until it calls answer_done().
   */
  void forward(proxy::UpstreamPool& pool, proxy::ForwardedRequest request, std::string id_json,
               AnswerRewrite rewrite,
               std::unique_ptr<AnswerObserver> observer) override;
  /** Waiting: later pipelined requests wait (bounded) as behind a proxied answer. */
  [[nodiscard]] Resume suspend(const HttpRequest& req) override;

  // Conn
  void begin_shutdown() override;
  void force_close() override { close(); }
  void sweep(std::uint64_t now_ms) override;

 private:
  enum class Mode : std::uint8_t { Requests, Proxying, Waiting, Listen, Draining, Lingering, Closing };
  enum class Deadline : std::uint8_t { None, Request, Idle };

  // What its writes are, given back when one completes.
  enum WriteTag : std::uint32_t { kAnswer, kLastAnswer, kBatch };

  // net::SocketEvents
  void on_data(net::Socket& s, const char* data, std::size_t len) override;
  void on_read_end(net::Socket& s, int status) override;
  void on_written(net::Socket& s, std::uint32_t tag, int status) override;
  void on_shutdown_failed(net::Socket&) override { close(); }
  void on_closed(net::Socket& s) override;
  void on_failure(net::Socket&) override { close(); }
  // StreamCarrier (connection_streams.cc): the EventStream's bytes as HTTP/1.1 chunks
  void stream_started() override;
  void write_head() override;
  [[nodiscard]] Wrote write_events(OutBatch&& batch) override;
  void write_end() override;
  void abort() override { close(); }

  // AnswerCarrier (connection.cc): a proxied answer as HTTP/1.1, Content-Length or chunks
  void answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                   bool no_body) override;
  void answer_body(std::string_view bytes) override;
  void answer_end() override;
  [[nodiscard]] bool answer_backlogged() const noexcept override;
  void answer_error(Response r) override { respond(std::move(r)); }
  /**
   * Written whole (`complete`: then the next request is read, or the connection closes if
   * keep-alive is off), or cut short (the connection closes: the client sees an answer that
   * did not end).
   */
  void answer_done(bool complete) override;
  /** Whether the connection stays open after the answer being written (else: Connection: close). */
  [[nodiscard]] bool keeps_alive();

  void answer_written(bool last);
  /** The request a suspend() kept is routed again (Waiting only). */
  void resume_waiting(std::shared_ptr<const AuthWait> waited);
  /** Between requests again: the idle deadline, then the pipelined input kept meanwhile. */
  void continue_requests();
  /** The answer to the request in hand comes later (Proxying, Waiting): input meanwhile is kept. */
  [[nodiscard]] bool answer_pending() const noexcept { return mode_ == Mode::Proxying || mode_ == Mode::Waiting; }
  void parse(const char* data, std::size_t len);
  void parse_some(const char* data, std::size_t len);
  /** Bytes of answers queued and not yet written (streams are bounded by their shard). */
  [[nodiscard]] std::size_t unwritten() const noexcept;
  /** Stops reading while answers back up; the unparsed rest of the read waits in stash_. */
  void pause_reading(const char* rest, std::size_t len);
  void maybe_resume_reading();
  void start_reading();
  void pause_parser();
  void write_raw(std::string data, bool then_close);
  void keep_proxied_input(const char* data, std::size_t len);  // Proxying: bytes of later requests
  void reject(int status, std::string_view message);
  /**
   * The connection's first bytes: HTTP/2's preface (h2c with prior knowledge) hands the socket
   * to an HTTP/2 connection. True: consumed (a part of the preface waits in stash_, or the
   * socket was handed over and this connection is gone).
   */
  [[nodiscard]] bool sniff(const char* data, std::size_t len);
  void hand_over_h2(std::string_view first);

  // RequestParser::Events (connection_requests.cc)
  void request_begun() override;
  void head_parsed(HttpRequest& req) override;
  void request_complete(HttpRequest& req) override;

  LoopContext& w_;
  std::unique_ptr<net::Socket> sock_;  // handed to an HTTP/2 connection when the client speaks HTTP/2
  RequestParser parser_;
  Mode mode_ = Mode::Requests;
  bool close_after_ = false;  // respond() found keep-alive off
  bool answer_chunked_ = false;  // Proxying: the upstream's answer goes out in chunks (no length given)
  bool in_message_ = false;  // between the first byte of a request and its end
  bool head_ = false;        // the request being answered is a HEAD whose headers were parsed
  bool read_paused_ = false; // answers backed up: not reading until they drain
  bool in_parse_ = false;    // inside parse(): it goes on with the rest itself
  bool peer_eof_ = false;    // the client half-closed while the upstream answered: close once answered
  bool sniffing_ = true;     // no byte read yet that says HTTP/1.1 (sniff())
  Deadline deadline_ = Deadline::None;
  std::uint64_t deadline_ms_ = 0;
  std::uint32_t requests_ = 0;
  TenantBinding binding_;     // counted against its tenant's connections
  const bool operator_listener_;  // accepted on the --publish-listen listener
  std::uint64_t linger_until_ms_ = 0;   // Lingering: close when nothing arrived by then...
  std::uint64_t linger_end_ms_ = 0;     // ...or at this time, whatever arrives
  std::size_t lingered_bytes_ = 0;      // input discarded while lingering
  std::string stash_;                   // unparsed input kept while reading is paused
  EventStream events_;  // Listen: the stream this connection carries (idle before)
  std::unique_ptr<ProxiedAnswer> proxy_;    // Proxying: the request the upstream answers
  std::unique_ptr<ProxiedAnswer> retired_;  // an answer that ended inside its own callback: freed later
  std::unique_ptr<HttpRequest> waiting_req_;  // Waiting: the request routed again on resume
  std::shared_ptr<char> wait_token_;          // Waiting: its Resume holds a weak reference (gone: do nothing)
};

}  // namespace mcpfan::detail

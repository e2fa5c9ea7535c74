#include "http1/connection.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <strings.h>

#include "http/router.h"
#include "http1/response_writer.h"
#include "mcp/messages.h"
#include "mcp/sessions.h"
#include "server/loop_context.h"
#include "tls/channel.h"

namespace mcpfan::detail {

namespace {

// Reading stops while this many bytes of answers are unwritten, and resumes below the second.
constexpr std::size_t kPauseBytes = 256 * 1024;
constexpr std::size_t kResumeBytes = 64 * 1024;
// Lingering close (nginx: lingering_timeout 5 s, lingering_time 30 s): close once nothing
// arrived for kLingerQuietMs, after kLingerMaxMs in all, or past kLingerMaxBytes discarded.
constexpr std::uint64_t kLingerQuietMs = 2000;
constexpr std::uint64_t kLingerMaxMs = 10000;
constexpr std::size_t kLingerMaxBytes = 16u << 20;

}  // namespace

namespace {
RequestLimits request_limits(const ServerConfig& cfg) {
  return {cfg.http.max_url_length, cfg.http.max_header_bytes, cfg.http.max_body};
}
}  // namespace

Http1Conn::Http1Conn(LoopContext& w, bool operator_listener)
    // The field list is kept only where a request may be forwarded (--upstream).
    : w_(w),
      sock_(std::make_unique<net::Socket>(w.io(), static_cast<net::SocketEvents&>(*this))),
      parser_(*this, request_limits(w.config()), w.upstream() != nullptr),
      binding_(w.limits()),
      operator_listener_(operator_listener),
      events_(w, *this) {
  if (int rc = sock_->init_tcp(); rc != 0) throw std::runtime_error(std::string("uv_tcp_init: ") + uv_strerror(rc));
  w_.link(this);
  w_.stats().connections.fetch_add(1, std::memory_order_relaxed);
}

Http1Conn::~Http1Conn() = default;

void Http1Conn::start() {
  uv_tcp_nodelay(reinterpret_cast<uv_tcp_t*>(sock_->stream()), 1);
  const ServerConfig& cfg = w_.config();
  if (cfg.http.tcp_keepalive_s > 0) sock_->set_keepalive(cfg.http.tcp_keepalive_s, cfg.http.write_timeout_ms);
  // The first request must arrive within the request timeout: a connection that sends
  // nothing holds a descriptor as surely as one that sends slowly. Over TLS the handshake
  // comes first, within its own bound.
  deadline_ = Deadline::Request;
  deadline_ms_ = uv_now(w_.loop()) + cfg.http.request_timeout_ms;
  if (tls::ServerContext* ctx = w_.tls(operator_listener_)) {
    SSL* ssl = ctx->new_ssl();
    if (!ssl) return close();
    sock_->start_tls(std::make_unique<tls::Channel>(ssl));
    deadline_ms_ = uv_now(w_.loop()) + cfg.tls.handshake_timeout_ms;
  }
  start_reading();
}

void Http1Conn::start_reading() {
  if (sock_->read_start() != 0) close();
}

void Http1Conn::linger() {
  if (mode_ == Mode::Closing || mode_ == Mode::Lingering) return;
  mode_ = Mode::Lingering;
  stash_.clear();
  std::uint64_t now = uv_now(w_.loop());
  linger_until_ms_ = now + kLingerQuietMs;
  linger_end_ms_ = now + kLingerMaxMs;
  // After every answer queued before it (the socket keeps the order).
  if (!sock_->shutdown()) {
    close();
    return;
  }
  if (read_paused_) {  // input must be drained now, or the close would still reset
    read_paused_ = false;
    start_reading();
  }
}

void Http1Conn::close() {
  if (mode_ == Mode::Closing) return;
  mode_ = Mode::Closing;
  if (proxy_) {  // freed with the connection: close() may be called from the exchange's own callback
    proxy_->cancel();
    retired_ = std::move(proxy_);
  }
  wait_token_.reset();  // a suspended request's Resume does nothing now
  events_.close();
  binding_.release();  // last: it holds the tenant's entry, reclaimed only at zero usage
  sock_->close();  // on_closed() follows, once the socket's last write is handed over
}

void Http1Conn::on_closed(net::Socket&) {
  w_.unlink(this);
  w_.stats().connections.fetch_sub(1, std::memory_order_relaxed);
  delete this;
}

void Http1Conn::on_read_end(net::Socket&, int status) {
  // EOF or error: for a listen this is the client cancelling.
  if (status == UV_EOF && answer_pending()) {
    // A half-close ends the client's requests, not its wish for the answer (RFC 9112 §9.6):
    // the upstream's answer is written, then the connection closes. A client that is gone
    // for good is found by the first write that fails, and the exchange is cancelled then.
    peer_eof_ = true;
    read_paused_ = true;
    sock_->read_stop();
    return;
  }
  close();
}

void Http1Conn::on_data(net::Socket&, const char* data, std::size_t len) {
  if (mode_ == Mode::Lingering) {
    lingered_bytes_ += len;
    linger_until_ms_ = uv_now(w_.loop()) + kLingerQuietMs;
    if (lingered_bytes_ > kLingerMaxBytes) close();
    return;
  }
  if (answer_pending()) return keep_proxied_input(data, len);
  if (mode_ != Mode::Requests) return;  // bytes after a listen are ignored
  if (sniffing_ && sniff(data, len)) return;
  parse(data, len);
}

bool Http1Conn::sniff(const char* data, std::size_t len) {
  static constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  if (const tls::Channel* tls = sock_->tls()) {
    // Over TLS, ALPN said which: h2 (only offered without --no-h2), or HTTP/1.1 (also without ALPN).
    if (tls->alpn() == "h2") {
      hand_over_h2(std::string_view(data, len));
      return true;
    }
    sniffing_ = false;
    return false;
  }
  if (w_.config().http2.off) {
    sniffing_ = false;
    return false;
  }
  const bool stashed = !stash_.empty();
  if (stashed) stash_.append(data, len);
  std::string_view have = stashed ? std::string_view(stash_) : std::string_view(data, len);
  std::size_t n = std::min(have.size(), kPreface.size());
  if (have.substr(0, n) != kPreface.substr(0, n)) {  // HTTP/1.1 (or garbage, which the parser answers)
    sniffing_ = false;
    if (!stashed) return false;
    std::string bytes = std::move(stash_);
    stash_.clear();
    parse(bytes.data(), bytes.size());
    return true;
  }
  if (have.size() < kPreface.size()) {  // a part of the preface: wait for the rest
    if (!stashed) stash_.assign(data, len);
    return true;
  }
  std::string first(have);
  hand_over_h2(first);
  return true;
}

void Http1Conn::hand_over_h2(std::string_view first) {
  sniffing_ = false;
  w_.unlink(this);
  w_.stats().connections.fetch_sub(1, std::memory_order_relaxed);
  // From here the socket and its events are the HTTP/2 connection's; nothing of this one runs again.
  w_.hand_over_h2(std::move(sock_), operator_listener_, first);
  delete this;
}

std::size_t Http1Conn::unwritten() const noexcept { return sock_->queued_bytes(); }

void Http1Conn::pause_reading(const char* rest, std::size_t len) {
  stash_.assign(rest, len);  // at most one read buffer's worth
  if (!read_paused_) {
    read_paused_ = true;
    sock_->read_stop();
    w_.stats().read_pauses.fetch_add(1, std::memory_order_relaxed);
  }
}

void Http1Conn::maybe_resume_reading() {
  if (!read_paused_ || mode_ != Mode::Requests || unwritten() > kResumeBytes) return;
  read_paused_ = false;
  std::string rest = std::move(stash_);
  stash_.clear();
  start_reading();
  if (!rest.empty()) parse(rest.data(), rest.size());
}

void Http1Conn::parse(const char* data, std::size_t len) {
  in_parse_ = true;
  parse_some(data, len);
  in_parse_ = false;
  if (!peer_eof_) return;
  // Every request before the client's FIN is answered; a stream it opened meanwhile is
  // cancelled by that FIN, as a stream's EOF always is.
  if (mode_ == Mode::Requests) linger();
  else if (mode_ == Mode::Listen) close();
}

void Http1Conn::parse_some(const char* data, std::size_t len) {
  std::size_t off = 0;
  while (off < len && mode_ == Mode::Requests) {
    std::size_t n = 0;
    RequestParser::Status st = parser_.execute(data + off, len - off, n);
    off += n;
    switch (st) {
      case RequestParser::Status::Failed:  // an exception in a request's handling: nothing sensible to answer
        w_.stats().callback_exceptions.fetch_add(1, std::memory_order_relaxed);
        close();
        return;
      case RequestParser::Status::Rejected: {
        const RequestRejection& r = parser_.rejection();
        if (r.limit) w_.limits().hit(*r.limit);
        head_ = r.head;  // a HEAD's error answer has no body either
        reject(r.status, r.message);
        return;
      }
      case RequestParser::Status::Paused:  // a request was answered; continue with the pipelined rest
        parser_.resume();
        if (answer_pending()) {  // the upstream answers it, or it waits: the rest waits for that answer
          keep_proxied_input(data + off, len - off);
          return;
        }
        // A client that pipelines without reading stops being read once its answers back up,
        // so it cannot grow the server's memory; the rest of this read waits for the drain.
        if (mode_ == Mode::Requests && off < len && unwritten() > kPauseBytes) {
          pause_reading(data + off, len - off);
          return;
        }
        continue;
      case RequestParser::Status::Ok:
        break;
    }
    if (n == 0) break;
  }
}

void Http1Conn::reject(int status, std::string_view message) {
  close_after_ = true;
  respond(status, "application/json", json_error_body(message));
}

void Http1Conn::respond(Response r) {
  if (mode_ == Mode::Closing) return;
  if (r.status >= 400) w_.stats().http_errors.fetch_add(1, std::memory_order_relaxed);
  bool keep = !close_after_ && parser_.keep_alive() && !w_.stopping();
  // A HEAD answer has no content. Not the parser's method: it guesses HEAD from "HELLO", and
  // keeps the last request's after it (found by fuzz_http).
  write_raw(render_response(r, keep, head_), !keep);
  if (!keep) {
    mode_ = Mode::Draining;  // stop parsing; the close follows the write
    pause_parser();
  }
}

void Http1Conn::pause_parser() { parser_.pause(); }

void Http1Conn::write_raw(std::string data, bool then_close) {
  if (sock_->write(std::move(data), then_close ? kLastAnswer : kAnswer) == net::Socket::Sent::Failed) close();
}

void Http1Conn::on_written(net::Socket&, std::uint32_t tag, int status) {
  if (status < 0) return close();
  if (tag == kBatch) return events_.batch_written();
  answer_written(tag == kLastAnswer);
}

void Http1Conn::answer_written(bool last) {
  if (last) return linger();
  if (proxy_ && unwritten() <= kResumeBytes) proxy_->drained();
  maybe_resume_reading();
}

void Http1Conn::sweep(std::uint64_t now) {
  if (mode_ == Mode::Closing) return;
  if (mode_ == Mode::Lingering) {
    if (now >= linger_until_ms_ || now >= linger_end_ms_) close();
    return;
  }
  const ServerConfig& cfg = w_.config();
  if (sock_->write_stalled(now, cfg.http.write_timeout_ms)) {
    // A peer that stopped reading (or vanished): its unwritten bytes would otherwise stay
    // until the pending-bytes bound, which a quiet stream never reaches.
    w_.limits().hit(Limit::WriteTimeout);
    close();
    return;
  }
  if (deadline_ == Deadline::None || now < deadline_ms_) return;
  if (deadline_ == Deadline::Idle) {
    w_.limits().hit(Limit::IdleTimeout);
    close();
  } else if (sock_->tls_handshaking()) {
    w_.limits().hit(Limit::TlsHandshakeTimeout);  // a stalled or slow handshake
    close();
  } else {
    w_.limits().hit(Limit::RequestTimeout);
    deadline_ = Deadline::None;
    if (in_message_ && mode_ == Mode::Requests) {
      reject(408, "request not received in full within " + std::to_string(cfg.http.request_timeout_ms) + " ms");
    } else if (mode_ == Mode::Waiting) {
      // What it waited for never answered (each wait has a shorter bound of its own): answered, not dropped.
      wait_token_.reset();
      waiting_req_.reset();
      mode_ = Mode::Requests;
      reject(503, "authorization did not complete within " + std::to_string(cfg.http.request_timeout_ms) + " ms");
    } else {
      close();
    }
  }
}

bool Http1Conn::keeps_alive() { return !close_after_ && parser_.keep_alive() && !w_.stopping(); }

void Http1Conn::forward(proxy::UpstreamPool& pool, proxy::ForwardedRequest request, std::string id_json,
                        AnswerRewrite rewrite, std::unique_ptr<AnswerObserver> observer) {
  auto exchange = std::make_unique<ProxiedAnswer>(w_, static_cast<AnswerCarrier&>(*this), std::move(id_json), head_);
  if (rewrite) exchange->rewrite_with(std::move(rewrite));
  if (observer) exchange->observe_with(std::move(observer));
  ProxiedAnswer* x = exchange.get();
  // The upstream's own timeouts (connect, first byte, idle) govern from here.
  mode_ = Mode::Proxying;
  deadline_ = Deadline::None;
  proxy_ = std::move(exchange);
  x->start(pool, std::move(request));  // may end at once (pool closed): answer_done() then ran
}

void Http1Conn::answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                            bool no_body) {
  if (mode_ == Mode::Closing) return;
  answer_chunked_ = !no_body && !length;
  write_raw(render_answer_head(status, fields, length, answer_chunked_, keeps_alive()), false);
}

void Http1Conn::answer_body(std::string_view bytes) {
  if (mode_ == Mode::Closing || bytes.empty()) return;
  write_raw(answer_chunked_ ? render_chunk(bytes) : std::string(bytes), false);
}

void Http1Conn::answer_end() {
  if (mode_ != Mode::Closing && answer_chunked_) write_raw("0\r\n\r\n", false);
}

bool Http1Conn::answer_backlogged() const noexcept { return unwritten() > kPauseBytes; }

void Http1Conn::keep_proxied_input(const char* data, std::size_t len) {
  // A client may pipeline its next request, or close (read as EOF, which cancels the
  // exchange): reading goes on, but what it brings waits, up to a bound.
  stash_.append(data, len);
  if (stash_.size() > kPauseBytes && !read_paused_) {
    read_paused_ = true;
    sock_->read_stop();
    w_.stats().read_pauses.fetch_add(1, std::memory_order_relaxed);
  }
}

void Http1Conn::answer_done(bool complete) {
  retired_ = std::move(proxy_);  // we may be inside its callback: freed at the next exchange or with the connection
  answer_chunked_ = false;
  head_ = false;  // the proxied request is answered (an early error answer to a HEAD had no body)
  if (mode_ != Mode::Proxying) return;  // an error answer without keep-alive, or closing
  if (!complete) return close();
  if (!keeps_alive()) return linger();
  mode_ = Mode::Requests;
  continue_requests();
}

void Http1Conn::continue_requests() {
  deadline_ = Deadline::Idle;
  deadline_ms_ = uv_now(w_.loop()) + w_.config().http.idle_timeout_ms;
  if (in_parse_) return;  // parse() goes on with the rest of its input itself
  std::string rest = std::move(stash_);
  stash_.clear();
  if (read_paused_ && !peer_eof_) {
    read_paused_ = false;
    start_reading();
  }
  if (!rest.empty()) parse(rest.data(), rest.size());
  else if (peer_eof_) linger();
}


Exchange::Resume Http1Conn::suspend(const HttpRequest& req) {
  mode_ = Mode::Waiting;
  waiting_req_ = std::make_unique<HttpRequest>(req);
  wait_token_ = std::make_shared<char>(0);
  deadline_ = Deadline::Request;
  deadline_ms_ = uv_now(w_.loop()) + w_.config().http.request_timeout_ms;
  std::weak_ptr<char> token = wait_token_;
  return [this, token](std::shared_ptr<const AuthWait> waited) {
    if (!token.expired()) resume_waiting(std::move(waited));  // else: closed, or timed out meanwhile
  };
}

void Http1Conn::resume_waiting(std::shared_ptr<const AuthWait> waited) {
  if (mode_ != Mode::Waiting) return;
  wait_token_.reset();
  std::unique_ptr<HttpRequest> req = std::move(waiting_req_);
  req->waited = std::move(waited);
  mode_ = Mode::Requests;
  deadline_ = Deadline::None;
  try {
    route_request(*this, *req);
  } catch (const std::exception&) {
    close_after_ = true;
    respond(500, "application/json", R"({"error":"internal error"})");
  }
  if (mode_ != Mode::Proxying) head_ = false;
  if (mode_ == Mode::Requests) continue_requests();
}

}  // namespace mcpfan::detail

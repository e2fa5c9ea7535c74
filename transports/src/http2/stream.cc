#include "http2/stream.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "http/field_syntax.h"
#include "http/router.h"
#include "http2/connection.h"
#include "mcp/messages.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {

// A proxied answer's upstream is paused while this many bytes wait on its stream (or the
// connection), and read again below the second: as on an HTTP/1.1 connection.
constexpr std::size_t kPauseBytes = 256 * 1024;
constexpr std::size_t kResumeBytes = 64 * 1024;

// Fields that name a property of one HTTP/1.1 connection: RFC 9113 §8.2.2 forbids them.
bool connection_specific(std::string_view name) {
  return ieq(name, "connection") || ieq(name, "keep-alive") || ieq(name, "proxy-connection") ||
         ieq(name, "transfer-encoding") || ieq(name, "upgrade");
}

std::optional<unsigned> method_of(std::string_view name) {
  // http_parser's names, the one list both HTTP layers share (http/request.h).
  for (unsigned m = 0; m <= HTTP_SOURCE; ++m) {
    if (name == http_method_str(static_cast<http_method>(m))) return m;
  }
  return std::nullopt;
}

ssize_t read_source(nghttp2_session*, std::int32_t, std::uint8_t*, std::size_t length, std::uint32_t* flags,
                    nghttp2_data_source* source, void*) {
  return static_cast<H2Stream*>(source->ptr)->next_frame(length, flags);
}

}  // namespace

H2Stream::H2Stream(Http2Conn& conn, std::int32_t id)
    : conn_(conn),
      id_(id),
      req_(std::make_unique<HttpRequest>()),
      begun_ms_(uv_now(conn.context().loop())),
      events_(conn.context(), *this) {}

H2Stream::~H2Stream() = default;

LoopContext& H2Stream::context() noexcept {
  return conn_.context();
}
bool H2Stream::peer_is_loopback() {
  return conn_.peer_is_loopback();
}
bool H2Stream::on_operator_listener() const noexcept {
  return conn_.operator_listener();
}
TenantBinding& H2Stream::binding() noexcept {
  return conn_.binding();
}
std::string H2Stream::client_certificate() const {
  return conn_.client_certificate();
}

bool H2Stream::on_header(std::string_view name, std::string_view value) {
  const HttpConfig& cfg = conn_.context().config().http;
  // Counted as SETTINGS_MAX_HEADER_LIST_SIZE counts (RFC 9113 §6.5.2): decoded sizes, so an
  // HPACK bomb (a few bytes that decode to a huge list) is measured by what it decodes to.
  header_bytes_ += name.size() + value.size() + 32;
  // Known even when the head is refused (431, or 414 before :method): that answer has no body either.
  if (name == ":method" && value == "HEAD") head_request_ = true;
  if (refused_ || !req_) return true;
  if (header_bytes_ > cfg.max_header_bytes) {
    refused_.emplace(431, "request headers longer than " + std::to_string(cfg.max_header_bytes) + " bytes");
    *req_ = HttpRequest{};
    return false;
  }
  req_->header_bytes = header_bytes_;
  if (!name.empty() && name[0] == ':') {
    if (name == ":method") {
      auto m = method_of(value);
      if (!m)
        refused_.emplace(501, "method " + std::string(value.substr(0, 32)) + " is not implemented");
      else if (*m == HTTP_CONNECT)
        refused_.emplace(405, "CONNECT is not allowed: mcpfan is not a tunnel");
      else
        req_->method = *m;
    } else if (name == ":path") {
      if (value.size() > cfg.max_url_length) {
        conn_.context().limits().hit(Limit::UrlLength);
        refused_.emplace(414, "request target longer than " + std::to_string(cfg.max_url_length) + " bytes");
      } else {
        req_->url = value;
      }
    } else if (name == ":authority") {
      if (req_->host.empty()) req_->host = value;
    }
    return true;  // :scheme; nghttp2 refuses any other pseudo-header
  }
  if (std::string* dst = req_->named_field(name)) {
    if (dst == &req_->host && !req_->host.empty()) return true;  // :authority wins (RFC 9113 §8.3.1)
    if (!dst->empty()) *dst += ", ";
    *dst += value;
  }
  if (conn_.context().upstream()) req_->fields.push_back({std::string(name), std::string(value)});
  return true;
}

void H2Stream::on_body(const std::uint8_t* data, std::size_t len) {
  if (refused_ || !req_) return;
  std::size_t max = conn_.context().config().http.max_body;
  if (req_->body.size() + len > max) {
    conn_.context().limits().hit(Limit::BodyBytes);
    refused_.emplace(413, "request body larger than " + std::to_string(max) + " bytes");
    conn_.body_freed(req_->body.size());
    req_->body = std::string();
    return;
  }
  req_->body.append(reinterpret_cast<const char*>(data), len);
  conn_.body_held(len);
}

void H2Stream::free_request() noexcept {
  if (!req_) return;
  conn_.body_freed(req_->body.size());
  req_.reset();
}

void H2Stream::on_request_end() {
  if (routed_ || closed_) return;
  routed_ = true;
  LoopContext& ctx = conn_.context();
  ctx.stats().http_requests.fetch_add(1, std::memory_order_relaxed);
  if (refused_) {
    auto [status, message] = std::move(*refused_);
    refused_.reset();
    free_request();
    return refuse(status, std::move(message));
  }
  if (req_->url.empty()) {
    free_request();
    return refuse(400, "request without :path");
  }
  route();
}

void H2Stream::route() {
  try {
    route_request(*this, *req_);
  } catch (const std::exception&) {
    if (!head_sent_)
      respond(500, "application/json", R"({"error":"internal error"})");
    else
      reset(NGHTTP2_INTERNAL_ERROR);
  }
  // What the routes kept they copied: a listen's stream holds no request (a suspended one keeps it).
  if (!wait_token_) free_request();
}

Exchange::Resume H2Stream::suspend(const HttpRequest&) {
  // The request suspended is req_ itself: kept (and its body counted) until it is routed again.
  wait_token_ = std::make_shared<char>(0);
  wait_begun_ms_ = uv_now(conn_.context().loop());
  std::weak_ptr<char> token = wait_token_;
  return [this, token](std::shared_ptr<const AuthWait> waited) {
    if (!token.expired()) resume_waiting(std::move(waited));  // else: closed, reset or timed out meanwhile
  };
}

void H2Stream::resume_waiting(std::shared_ptr<const AuthWait> waited) {
  wait_token_.reset();
  if (closed_ || reset_ || !req_) return free_request();
  req_->waited = std::move(waited);
  route();
}

void H2Stream::wait_timed_out(std::uint64_t timeout_ms) {
  if (!wait_token_) return;
  wait_token_.reset();
  free_request();
  refuse(503, "authorization did not complete within " + std::to_string(timeout_ms) + " ms");
}

void H2Stream::refuse(int status, std::string message) {
  respond(status, "application/json", json_error_body(message));
}

void H2Stream::on_closed() {
  if (closed_) return;
  closed_ = true;
  if (!routed_) free_request();  // a routed one is freed by on_request_end(), which may be running now
  if (wait_token_) {             // suspended: nothing will route it again
    wait_token_.reset();
    free_request();
  }
  if (proxy_) {
    proxy_->cancel();
    retired_ = std::move(proxy_);
    conn_.proxy_ended(this);
  }
  events_.close();
  out_.clear();
  out_head_ = 0;
  out_bytes_ = 0;
}

void H2Stream::reset(std::uint32_t error_code) {
  if (closed_ || reset_) return;
  reset_ = true;
  if (!routed_) free_request();  // what more of it arrives is not read (a routed one: on_request_end())
  out_.clear();
  out_head_ = 0;
  out_bytes_ = 0;
  nghttp2_submit_rst_stream(conn_.session(), NGHTTP2_FLAG_NONE, id_, error_code);
  conn_.want_flush();
}

void H2Stream::begin_shutdown() {
  if (events_.open())
    events_.shutdown();
  else if (!routed_)
    reset(NGHTTP2_REFUSED_STREAM);  // not begun: the client may retry it elsewhere
}

// ---- the answer ----

void H2Stream::respond(Response r) {
  if (closed_ || head_sent_ || reset_) return;
  if (r.status >= 400) conn_.context().stats().http_errors.fetch_add(1, std::memory_order_relaxed);
  const bool body = !r.body.empty() && !head_request_;
  submit_head(r.status, r.content_type, r.headers, r.body.size(), !body);
  if (!body) return;
  queue(std::move(r.body));
  finish_body();
}

void H2Stream::submit_head(int status, std::string_view content_type, const std::vector<Field>& fields,
                           std::optional<std::size_t> length, bool end) {
  if (closed_ || head_sent_ || reset_) return;
  head_sent_ = true;
  // nghttp2 copies names and values: these only live through the call.
  std::vector<std::string> names;
  names.reserve(fields.size());
  std::vector<nghttp2_nv> nva;
  nva.reserve(fields.size() + 3);
  auto add = [&](std::string_view n, std::string_view v) {
    nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(n.data())),
                   reinterpret_cast<std::uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                   NGHTTP2_NV_FLAG_NONE});
  };
  std::string status_text = std::to_string(status);
  std::string length_text = length ? std::to_string(*length) : std::string();
  add(":status", status_text);
  if (!content_type.empty()) add("content-type", content_type);
  if (length) add("content-length", length_text);
  for (const Field& f : fields) {
    if (connection_specific(f.name) || (length && ieq(f.name, "content-length"))) continue;
    std::string& n = names.emplace_back(f.name);
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    add(n, f.value);
  }
  nghttp2_data_provider source{};
  source.source.ptr = this;
  source.read_callback = read_source;
  if (nghttp2_submit_response(conn_.session(), id_, nva.data(), nva.size(), end ? nullptr : &source) != 0) {
    reset(NGHTTP2_INTERNAL_ERROR);
    return;
  }
  conn_.want_flush();
}

void H2Stream::queue(std::string bytes) {
  if (closed_ || reset_ || bytes.empty()) return;
  if (out_bytes_ == 0) progress_ms_ = uv_now(conn_.context().loop());
  out_bytes_ += bytes.size();
  Piece& p = out_.emplace_back();
  p.bytes = std::move(bytes);
  wake();
}

void H2Stream::finish_body() {
  body_done_ = true;
  wake();
}

void H2Stream::wake() {
  if (deferred_ && !closed_) {
    deferred_ = false;
    nghttp2_session_resume_data(conn_.session(), id_);
  }
  conn_.want_flush();
}

ssize_t H2Stream::next_frame(std::size_t max, std::uint32_t* data_flags) {
  if (out_bytes_ == 0) {
    if (body_done_) {
      *data_flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  std::size_t n = std::min(max, out_bytes_);
  *data_flags |= NGHTTP2_DATA_FLAG_NO_COPY;
  if (n == out_bytes_ && body_done_) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

void H2Stream::emit_frame(const std::uint8_t* framehd, std::size_t length, std::string& out) {
  out.append(reinterpret_cast<const char*>(framehd), 9);
  std::size_t left = length;
  while (left > 0 && out_head_ < out_.size()) {
    Piece& p = out_[out_head_];
    if (p.batch) {
      std::vector<iovec>& bufs = p.batch->bufs;
      while (left > 0 && p.iov < bufs.size()) {
        const iovec& v = bufs[p.iov];
        std::size_t take = std::min(left, v.iov_len - p.off);
        out.append(static_cast<const char*>(v.iov_base) + p.off, take);
        left -= take;
        p.off += take;
        if (p.off == v.iov_len) {
          ++p.iov;
          p.off = 0;
        }
      }
      while (p.iov < bufs.size() && bufs[p.iov].iov_len == p.off) {  // empty pieces at its end
        ++p.iov;
        p.off = 0;
      }
      if (p.iov < bufs.size()) break;
    } else {
      std::size_t take = std::min(left, p.bytes.size() - p.off);
      out.append(p.bytes, p.off, take);
      left -= take;
      p.off += take;
      if (p.off < p.bytes.size()) break;
    }
    if (p.batch_end && !batch_out_) {
      batch_out_ = true;
      conn_.after_send(this);
    }
    p.batch.reset();  // its batch's buffers go back now
    p.bytes = std::string();
    if (++out_head_ == out_.size()) {
      out_.clear();  // keeps its capacity: a stream queues again soon
      out_head_ = 0;
    }
  }
  out_bytes_ -= length - left;
  progress_ms_ = uv_now(conn_.context().loop());
}

void H2Stream::after_send() {
  if (closed_) return;
  if (batch_out_) {
    batch_out_ = false;
    events_.batch_written();  // the shard may hand over the next batch now
  }
  if (proxy_ && out_bytes_ <= kResumeBytes && conn_.unwritten() <= kPauseBytes) proxy_->drained();
}

// ---- StreamCarrier: an EventStream as DATA frames ----

void H2Stream::stream_started() {
  streaming_ = true;
}

void H2Stream::write_head() {
  static const std::vector<Field> kFields = {{"cache-control", "no-cache"}};
  submit_head(200, "text/event-stream", kFields, std::nullopt, false);
}

StreamCarrier::Wrote H2Stream::write_events(OutBatch&& batch) {
  if (closed_ || reset_) return Wrote::Failed;
  if (batch.bytes == 0) return Wrote::Done;
  if (out_bytes_ == 0) progress_ms_ = uv_now(conn_.context().loop());
  out_bytes_ += batch.bytes;
  Piece& p = out_.emplace_back();
  p.batch.emplace(std::move(batch));
  p.batch_end = true;
  wake();
  return Wrote::Queued;
}

void H2Stream::write_end() {
  finish_body();
}

void H2Stream::abort() {
  // The stream alone ends: the connection's other streams go on.
  reset(NGHTTP2_CANCEL);
}

// ---- AnswerCarrier: a proxied answer ----

void H2Stream::forward(proxy::UpstreamPool& pool, proxy::ForwardedRequest request, std::string id_json,
                       AnswerRewrite rewrite, std::unique_ptr<AnswerObserver> observer) {
  auto exchange = std::make_unique<ProxiedAnswer>(conn_.context(), static_cast<AnswerCarrier&>(*this),
                                                  std::move(id_json), head_request_);
  if (rewrite) exchange->rewrite_with(std::move(rewrite));
  if (observer) exchange->observe_with(std::move(observer));
  ProxiedAnswer* x = exchange.get();
  proxy_ = std::move(exchange);
  conn_.proxy_started(this);
  x->start(pool, std::move(request));  // may end at once: answer_done() then ran
}

void H2Stream::answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                           bool no_body) {
  submit_head(status, {}, fields, length, no_body);
}

void H2Stream::answer_body(std::string_view bytes) {
  queue(std::string(bytes));
}

void H2Stream::answer_end() {
  finish_body();
}

bool H2Stream::answer_backlogged() const noexcept {
  return out_bytes_ > kPauseBytes || conn_.unwritten() > kPauseBytes;
}

void H2Stream::answer_done(bool complete) {
  retired_ = std::move(proxy_);  // we may be inside its callback: freed with the stream
  conn_.proxy_ended(this);
  if (!complete) reset(NGHTTP2_INTERNAL_ERROR);  // the client sees an answer cut short
}

}  // namespace mcpfan::detail

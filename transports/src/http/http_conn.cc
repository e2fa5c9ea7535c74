#include "http/http_conn.h"

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>

#include "http/router.h"
#include "mcp/messages.h"
#include "mcp/sessions.h"
#include "server/worker.h"

namespace mcpfan::detail {

// Shard batches are iovecs; libuv documents uv_buf_t as iovec-compatible on Unix.
static_assert(sizeof(uv_buf_t) == sizeof(iovec) && offsetof(uv_buf_t, base) == offsetof(iovec, iov_base) &&
              offsetof(uv_buf_t, len) == offsetof(iovec, iov_len));

namespace {

struct RawWrite {
  uv_write_t req;
  std::string data;
  HttpConn* conn;
  bool then_close;
};

struct BatchWrite {
  uv_write_t req;
  OutBatch batch;
  char chunk_header[24];
};

const char* reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
  }
}

bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

constexpr char kChunkEnd[] = "\r\n";
// Reading stops while this many bytes of answers are unwritten, and resumes below the second.
constexpr std::size_t kPauseBytes = 256 * 1024;
constexpr std::size_t kResumeBytes = 64 * 1024;
// Lingering close (nginx: lingering_timeout 5 s, lingering_time 30 s): close once nothing
// arrived for kLingerQuietMs, after kLingerMaxMs in all, or past kLingerMaxBytes discarded.
constexpr std::uint64_t kLingerQuietMs = 2000;
constexpr std::uint64_t kLingerMaxMs = 10000;
constexpr std::size_t kLingerMaxBytes = 16u << 20;
// Unsent bytes a stream may leave in the kernel. Past this the socket refuses more, so a
// slow reader's backlog stays in mcpfan, where newer updates coalesce with older ones,
// instead of megabytes of stale frames queueing in an auto-tuned send buffer.
constexpr int kNotSentLowat = 128 * 1024;

}  // namespace

void HttpRequest::clear() {
  method = 0;
  url.clear();
  content_type.clear();
  accept.clear();
  origin.clear();
  host.clear();
  protocol_version.clear();
  mcp_method.clear();
  expect.clear();
  session_id.clear();
  authorization.clear();
  body.clear();
  header_bytes = 0;
}

const http_parser_settings HttpConn::kSettings = [] {
  http_parser_settings s{};
  s.on_message_begin = &HttpConn::on_message_begin;
  s.on_url = &HttpConn::on_url;
  s.on_header_field = &HttpConn::on_header_field;
  s.on_header_value = &HttpConn::on_header_value;
  s.on_headers_complete = &HttpConn::on_headers_complete;
  s.on_body = &HttpConn::on_body;
  s.on_message_complete = &HttpConn::on_message_complete;
  return s;
}();

HttpConn::HttpConn(Worker& w) : w_(w) {
  uv_tcp_init(w_.loop(), &tcp_);
  tcp_.data = this;
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  w_.link(this);
  w_.stats().connections.fetch_add(1, std::memory_order_relaxed);
}

void HttpConn::start() {
  uv_tcp_nodelay(&tcp_, 1);
  const ServerConfig& cfg = w_.config();
  if (cfg.tcp_keepalive_s > 0) {
    // Dead peers (a host gone without FIN) are found by keep-alive probes when idle, and by
    // TCP_USER_TIMEOUT when data sits unacknowledged; the write timeout covers live peers
    // that stop reading.
    uv_tcp_keepalive(&tcp_, 1, cfg.tcp_keepalive_s);
    uv_os_fd_t fd;
    if (uv_fileno(reinterpret_cast<uv_handle_t*>(&tcp_), &fd) == 0) {
      int interval = 10, count = 3;
      auto user_timeout = static_cast<unsigned>(std::min<std::uint64_t>(cfg.write_timeout_ms, 0x7fffffff));
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
      ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
    }
  }
  // The first request must arrive within the request timeout: a connection that sends
  // nothing holds a descriptor as surely as one that sends slowly.
  deadline_ = Deadline::Request;
  deadline_ms_ = uv_now(w_.loop()) + cfg.request_timeout_ms;
  start_reading();
}

void HttpConn::start_reading() {
  int rc = uv_read_start(
      reinterpret_cast<uv_stream_t*>(&tcp_),
      [](uv_handle_t* h, std::size_t, uv_buf_t* buf) { *buf = static_cast<HttpConn*>(h->data)->w_.read_buffer(); },
      [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
        auto* c = static_cast<HttpConn*>(s->data);
        guarded(c->w_.stats(), [&] { c->on_read(nread, buf); }, [&] { c->close(); });
      });
  if (rc != 0) close();
}

void HttpConn::linger() {
  if (mode_ == Mode::Closing || mode_ == Mode::Lingering) return;
  mode_ = Mode::Lingering;
  stash_.clear();
  std::uint64_t now = uv_now(w_.loop());
  linger_until_ms_ = now + kLingerQuietMs;
  linger_end_ms_ = now + kLingerMaxMs;
  shutdown_req_.data = this;
  // libuv shuts the write side down once every queued write is out.
  int rc = uv_shutdown(&shutdown_req_, reinterpret_cast<uv_stream_t*>(&tcp_), [](uv_shutdown_t* req, int status) {
    auto* c = static_cast<HttpConn*>(req->data);
    if (status == UV_ECANCELED || c->mode_ == Mode::Closing) return;  // closed meanwhile
    if (status < 0) c->close();
  });
  if (rc != 0) {
    close();
    return;
  }
  if (read_paused_) {  // input must be drained now, or the close would still reset
    read_paused_ = false;
    start_reading();
  }
}

void HttpConn::close() {
  if (mode_ == Mode::Closing) return;
  mode_ = Mode::Closing;
  if (stream_open_) {
    stream_open_ = false;
    w_.shard().close_stream(stream_);
  }
  release_session();
  release_usage();
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
  uv_close(reinterpret_cast<uv_handle_t*>(&tcp_), [](uv_handle_t* h) {
    auto* c = static_cast<HttpConn*>(h->data);
    c->w_.unlink(c);
    c->w_.stats().connections.fetch_sub(1, std::memory_order_relaxed);
    delete c;
  });
}

void HttpConn::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (nread < 0) {  // EOF or error: for a listen this is the client cancelling
    close();
    return;
  }
  if (mode_ == Mode::Lingering) {
    lingered_bytes_ += static_cast<std::size_t>(nread);
    linger_until_ms_ = uv_now(w_.loop()) + kLingerQuietMs;
    if (lingered_bytes_ > kLingerMaxBytes) close();
    return;
  }
  if (nread == 0 || mode_ != Mode::Requests) return;  // bytes after a listen are ignored
  parse(buf->base, static_cast<std::size_t>(nread));
}

std::size_t HttpConn::unwritten() const noexcept {
  return uv_stream_get_write_queue_size(reinterpret_cast<const uv_stream_t*>(&tcp_));
}

void HttpConn::pause_reading(const char* rest, std::size_t len) {
  stash_.assign(rest, len);  // at most one read buffer's worth
  if (!read_paused_) {
    read_paused_ = true;
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&tcp_));
    w_.stats().read_pauses.fetch_add(1, std::memory_order_relaxed);
  }
}

void HttpConn::maybe_resume_reading() {
  if (!read_paused_ || mode_ != Mode::Requests || unwritten() > kResumeBytes) return;
  read_paused_ = false;
  std::string rest = std::move(stash_);
  stash_.clear();
  start_reading();
  if (!rest.empty()) parse(rest.data(), rest.size());
}

void HttpConn::parse(const char* data, std::size_t len) {
  std::size_t off = 0;
  while (off < len && mode_ == Mode::Requests) {
    std::size_t n = http_parser_execute(&parser_, &kSettings, data + off, len - off);
    off += n;
    if (failed_) {  // a parser callback threw: nothing sensible to answer
      close();
      return;
    }
    auto err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_PAUSED) {  // a request was answered; continue with the pipelined rest
      http_parser_pause(&parser_, 0);
      // A client that pipelines without reading stops being read once its answers back up,
      // so it cannot grow the server's memory; the rest of this read waits for the drain.
      if (mode_ == Mode::Requests && off < len && unwritten() > kPauseBytes) {
        pause_reading(data + off, len - off);
        return;
      }
      continue;
    }
    if (err != HPE_OK) {
      if (reject_status_ != 0) {
        reject(reject_status_, reject_message_);
      } else {
        reject(400, std::string("malformed HTTP request: ") + http_errno_description(err));
      }
      return;
    }
    if (n == 0) break;
  }
}

void HttpConn::reject(int status, std::string_view message) {
  close_after_ = true;
  respond(status, "application/json", json_error_body(message));
}

void HttpConn::respond(int status, std::string_view content_type, std::string_view body, std::string_view extra_headers) {
  if (mode_ == Mode::Closing) return;
  if (status >= 400) w_.stats().http_errors.fetch_add(1, std::memory_order_relaxed);
  bool keep = !close_after_ && http_should_keep_alive(&parser_) && !w_.stopping();
  std::string out;
  out.reserve(160 + body.size() + extra_headers.size());
  char line[64];
  std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", status, reason_phrase(status));
  out += line;
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += keep ? "\r\n" : "\r\nConnection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  // A HEAD answer has the headers of a GET and no content. Not the parser's method: it
  // guesses HEAD from "HELLO", and keeps the last request's after it (found by fuzz_http).
  if (!head_) out += body;
  write_raw(std::move(out), !keep);
  if (!keep) {
    mode_ = Mode::Draining;  // stop parsing; the close follows the write
    pause_parser();
  }
}

void HttpConn::pause_parser() {
  // http_parser asserts when paused after an error; a rejected request has stopped it anyway.
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_OK) http_parser_pause(&parser_, 1);
}

void HttpConn::write_raw(std::string data, bool then_close) {
  auto* wr = new RawWrite{{}, std::move(data), this, then_close};
  wr->req.data = wr;
  uv_buf_t b = uv_buf_init(wr->data.data(), static_cast<unsigned>(wr->data.size()));
  int rc = uv_write(&wr->req, reinterpret_cast<uv_stream_t*>(&tcp_), &b, 1, [](uv_write_t* req, int status) {
    auto* wr = static_cast<RawWrite*>(req->data);
    HttpConn* c = wr->conn;
    bool then_close = wr->then_close;
    delete wr;
    c->write_progressed();
    if (status < 0) {
      c->close();
    } else if (then_close) {
      c->linger();
    } else {
      guarded(c->w_.stats(), [&] { c->maybe_resume_reading(); }, [&] { c->close(); });
    }
  });
  if (rc != 0) {
    delete wr;
    close();
    return;
  }
  write_queued();
}

void HttpConn::write_queued() {
  if (writes_queued_++ == 0) write_progress_ms_ = uv_now(w_.loop());
}

void HttpConn::write_progressed() {
  --writes_queued_;
  write_progress_ms_ = uv_now(w_.loop());
}

void HttpConn::sweep(std::uint64_t now) {
  if (mode_ == Mode::Closing) return;
  if (mode_ == Mode::Lingering) {
    if (now >= linger_until_ms_ || now >= linger_end_ms_) close();
    return;
  }
  const ServerConfig& cfg = w_.config();
  if (writes_queued_ > 0 && now - write_progress_ms_ >= cfg.write_timeout_ms) {
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
  } else {
    w_.limits().hit(Limit::RequestTimeout);
    deadline_ = Deadline::None;
    if (in_message_ && mode_ == Mode::Requests) {
      reject(408, "request not received in full within " + std::to_string(cfg.request_timeout_ms) + " ms");
    } else {
      close();
    }
  }
}

void HttpConn::start_sse() {
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(&tcp_), &fd) == 0) {
    ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &kNotSentLowat, sizeof kNotSentLowat);
  }
  mode_ = Mode::Listen;
  deadline_ = Deadline::None;  // a stream is idle by nature; its writes are what is timed
  pause_parser();
  write_raw(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n",
      false);
  stream_ = w_.shard().open_stream(this, Framing::Sse);
  stream_open_ = true;
  // A stream reads no more requests: drop what parsing them needed.
  req_.clear();
  req_.body.shrink_to_fit();
  field_.shrink_to_fit();
  value_.shrink_to_fit();
}

void HttpConn::begin_listen(const Filter& filter, std::string id, std::string ack_event) {
  start_sse();
  listen_id_ = std::move(id);
  Shard& shard = w_.shard();
  // First on the stream: nothing is drained before it. An ack past the pending-bytes bound
  // (thousands of long URIs echoed back) ends the stream before it starts.
  if (shard.send(stream_, std::move(ack_event)) != SendStatus::Ok) {
    stream_open_ = false;
    close();
    return;
  }
  (void)shard.subscribe(stream_, filter, listen_id_);
}

void HttpConn::begin_session_stream(std::shared_ptr<Session> session) {
  start_sse();
  Filter f;
  f.tenant = session->tenant;
  f.kinds = kind_bit(Kind::ToolsListChanged) | kind_bit(Kind::PromptsListChanged) | kind_bit(Kind::ResourcesListChanged);
  f.uris.assign(session->uris.begin(), session->uris.end());
  session->sub = w_.shard().subscribe(stream_, f, {});  // no id: 2025 notifications carry none
  session->owner = static_cast<int>(w_.index());
  session->conn = this;
  w_.sessions().stream_opened(*session);  // the registry's mutex is held by the caller
  session_ = std::move(session);
}

std::optional<Limit> HttpConn::bind_tenant(TenantId tenant, TenantRef ref) {
  if (tenant == conn_tenant_) return std::nullopt;  // `ref` goes: the connection holds one already
  Limits& limits = w_.limits();
  if (!limits.acquire(tenant, Resource::Connections)) return limits.refusal(tenant, Resource::Connections);
  if (conn_tenant_ != Limits::kNoTenant) limits.release(conn_tenant_, Resource::Connections);
  conn_tenant_ = tenant;
  conn_tenant_ref_ = std::move(ref);  // the old tenant's reference goes after its usage
  return std::nullopt;
}

void HttpConn::hold_stream_usage(TenantId tenant, std::int64_t subscriptions) {
  stream_tenant_ = tenant;
  stream_subs_ = subscriptions;
}

void HttpConn::release_usage() {
  Limits& limits = w_.limits();
  if (conn_tenant_ != Limits::kNoTenant) limits.release(conn_tenant_, Resource::Connections);
  if (stream_tenant_ != Limits::kNoTenant) {
    limits.release(stream_tenant_, Resource::Streams);
    limits.release(stream_tenant_, Resource::Subscriptions, stream_subs_);
  }
  conn_tenant_ = stream_tenant_ = Limits::kNoTenant;
  conn_tenant_ref_.reset();  // last: a tenant entry is reclaimed only once its usage is back to zero
}

bool HttpConn::peer_is_loopback() {
  sockaddr_storage addr{};
  int len = sizeof addr;
  if (uv_tcp_getpeername(&tcp_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return false;
  if (addr.ss_family == AF_INET) {
    return (ntohl(reinterpret_cast<sockaddr_in&>(addr).sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

void HttpConn::release_session() {
  if (!session_) return;
  std::lock_guard lock(w_.sessions().mutex());
  if (session_->conn == this) {
    session_->conn = nullptr;
    session_->owner = -1;
    session_->idle_since_ms = uv_now(w_.loop());
    w_.sessions().stream_closed(*session_);  // idle again (counted) until it expires or ends
  }
  session_.reset();
}

void HttpConn::end_listen() {
  if (!stream_open_ || ending_) return;
  ending_ = true;
  if (w_.shard().send(stream_, sse_event(listen_complete_result(listen_id_))) != SendStatus::Ok) {
    stream_open_ = false;  // over the bound: the shard closed the stream, no final result
    close();
  }
}

void HttpConn::begin_shutdown() {
  if (stream_open_ && !listen_id_.empty()) end_listen();
  else if (stream_open_) finish_stream();
  else close();
}

void HttpConn::finish_stream() {
  if (!stream_open_) return;
  stream_open_ = false;
  w_.shard().close_stream(stream_);
  release_session();
  write_raw("0\r\n\r\n", true);
}

void HttpConn::write_batch(OutBatch&& batch) {
  char chunk_header[24];
  int hn = std::snprintf(chunk_header, sizeof chunk_header, "%zx\r\n", batch.bytes);
  batch.bufs[0] = iovec{chunk_header, static_cast<std::size_t>(hn)};
  batch.bufs.push_back(iovec{const_cast<char*>(kChunkEnd), 2});
  auto* bufs = reinterpret_cast<uv_buf_t*>(batch.bufs.data());
  auto nbufs = static_cast<unsigned>(batch.bufs.size());
  auto* stream = reinterpret_cast<uv_stream_t*>(&tcp_);

  // Most batches fit the socket buffer: write them now. A completed uv_write costs a request,
  // a deferred callback and an epoll re-arm of the socket (measured in a 10k-stream burst);
  // uv_try_write costs the writev alone. It refuses (UV_EAGAIN) while earlier writes are
  // queued, so order is kept.
  int done = uv_try_write(stream, bufs, nbufs);
  if (done < 0 && done != UV_EAGAIN) {
    w_.shard().write_done(stream_);
    close();
    return;
  }
  std::size_t written = done > 0 ? static_cast<std::size_t>(done) : 0;
  std::size_t i = 0;
  while (i < nbufs && written >= bufs[i].len) written -= bufs[i++].len;
  if (i == nbufs) {
    Shard& shard = w_.shard();
    shard.write_done(stream_);
    if (ending_ && shard.pending_bytes(stream_) == 0) finish_stream();
    return;  // the batch's references are released as it goes out of scope
  }

  // The rest waits for the socket: queue it, with the chunk header copied into the request
  // (the local one dies with this call).
  auto* wr = new BatchWrite{{}, std::move(batch), {}};
  wr->req.data = this;
  std::memcpy(wr->chunk_header, chunk_header, sizeof chunk_header);
  bufs = reinterpret_cast<uv_buf_t*>(wr->batch.bufs.data());
  if (i == 0 && written < static_cast<std::size_t>(hn)) bufs[0].base = wr->chunk_header;
  bufs[i].base += written;
  bufs[i].len -= written;
  int rc = uv_write(&wr->req, stream, bufs + i, nbufs - static_cast<unsigned>(i), [](uv_write_t* req, int status) {
    auto* c = static_cast<HttpConn*>(req->data);
    delete reinterpret_cast<BatchWrite*>(req);  // req is the first member
    c->write_progressed();
    if (status < 0) {
      c->close();
      return;
    }
    if (!c->stream_open_) return;
    Shard& shard = c->w_.shard();
    shard.write_done(c->stream_);
    if (c->ending_ && shard.pending_bytes(c->stream_) == 0) c->finish_stream();
  });
  if (rc != 0) {
    delete wr;
    w_.shard().write_done(stream_);
    close();
    return;
  }
  write_queued();
}

void HttpConn::close_requested(CloseReason) {
  // The shard already closed our stream; end the connection without the final result,
  // which would only add to the backlog that got it closed.
  stream_open_ = false;
  close();
}

// ---- http_parser callbacks ----

template <class F>
int HttpConn::parser_step(http_parser* p, F&& f) noexcept {
  auto* c = static_cast<HttpConn*>(p->data);
  try {
    return f(c);
  } catch (...) {
    // Unwinding through http_parser (C, built without unwind tables) would terminate the
    // server: stop the parser instead; parse() sees failed_ and closes this connection.
    c->w_.stats().callback_exceptions.fetch_add(1, std::memory_order_relaxed);
    c->failed_ = true;
    return -1;
  }
}

int HttpConn::on_message_begin(http_parser* p) {
  return parser_step(p, [&](HttpConn* c) -> int {
    c->in_message_ = true;
    c->deadline_ = Deadline::Request;
    c->deadline_ms_ = uv_now(c->w_.loop()) + c->w_.config().request_timeout_ms;
    c->req_.clear();
    c->field_.clear();
    c->value_.clear();
    c->in_value_ = false;
    return 0;
  });
}

int HttpConn::on_url(http_parser* p, const char* at, std::size_t len) {
  return parser_step(p, [&](HttpConn* c) -> int {
    c->req_.url.append(at, len);
    if (c->req_.url.size() > c->w_.config().max_url_length) {
      c->set_reject(414, Limit::UrlLength,
                    "request target longer than " + std::to_string(c->w_.config().max_url_length) + " bytes");
      return 1;
    }
    return 0;
  });
}

void HttpConn::commit_header() {
  std::string* dst = nullptr;
  std::string_view f = field_;
  if (ieq(f, "content-type")) dst = &req_.content_type;
  else if (ieq(f, "accept")) dst = &req_.accept;
  else if (ieq(f, "origin")) dst = &req_.origin;
  else if (ieq(f, "host")) dst = &req_.host;
  else if (ieq(f, "mcp-protocol-version")) dst = &req_.protocol_version;
  else if (ieq(f, "mcp-method")) dst = &req_.mcp_method;
  else if (ieq(f, "expect")) dst = &req_.expect;
  else if (ieq(f, "mcp-session-id")) dst = &req_.session_id;
  else if (ieq(f, "authorization")) dst = &req_.authorization;
  if (dst) {
    if (!dst->empty()) *dst += ", ";  // repeated headers combine as a list
    *dst += value_;
  }
  field_.clear();
  value_.clear();
}

void HttpConn::set_reject(int status, Limit limit, std::string message) {
  reject_status_ = status;
  reject_message_ = std::move(message);
  w_.limits().hit(limit);
}

int HttpConn::count_header_bytes(std::size_t len) {
  req_.header_bytes += len;
  std::size_t limit = w_.config().max_header_bytes;
  if (req_.header_bytes > limit) {
    set_reject(431, Limit::HeaderBytes, "request headers longer than " + std::to_string(limit) + " bytes");
    return 1;
  }
  return 0;
}

int HttpConn::on_header_field(http_parser* p, const char* at, std::size_t len) {
  return parser_step(p, [&](HttpConn* c) -> int {
    if (c->in_value_) {
      c->commit_header();
      c->in_value_ = false;
    }
    c->field_.append(at, len);
    return c->count_header_bytes(len);
  });
}

int HttpConn::on_header_value(http_parser* p, const char* at, std::size_t len) {
  return parser_step(p, [&](HttpConn* c) -> int {
    c->in_value_ = true;
    c->value_.append(at, len);
    return c->count_header_bytes(len);
  });
}

int HttpConn::on_headers_complete(http_parser* p) {
  return parser_step(p, [&](HttpConn* c) -> int {
    if (c->in_value_ || !c->field_.empty()) c->commit_header();
    c->in_value_ = false;
    c->req_.method = p->method;
    c->head_ = p->method == HTTP_HEAD;
    std::size_t limit = c->w_.config().max_body;
    // http_parser sets content_length to ULLONG_MAX when the header is absent.
    if (p->content_length != ULLONG_MAX && p->content_length > limit) {
      c->set_reject(413, Limit::BodyBytes, "request body larger than " + std::to_string(limit) + " bytes");
      return -1;  // unlike 1 ("no body"), this stops the parser
    }
    if (!c->req_.expect.empty()) {
      if (!ieq(c->req_.expect, "100-continue")) {
        c->reject_status_ = 417;
        c->reject_message_ = "unsupported Expect header";
        return -1;
      }
      c->write_raw("HTTP/1.1 100 Continue\r\n\r\n", false);
    }
    return 0;
  });
}

int HttpConn::on_body(http_parser* p, const char* at, std::size_t len) {
  return parser_step(p, [&](HttpConn* c) -> int {
    std::size_t limit = c->w_.config().max_body;
    if (c->req_.body.size() + len > limit) {
      c->set_reject(413, Limit::BodyBytes, "request body larger than " + std::to_string(limit) + " bytes");
      return 1;
    }
    c->req_.body.append(at, len);
    return 0;
  });
}

int HttpConn::on_message_complete(http_parser* p) {
  return parser_step(p, [&](HttpConn* c) -> int {
    c->w_.stats().http_requests.fetch_add(1, std::memory_order_relaxed);
    c->in_message_ = false;
    c->deadline_ = Deadline::None;
    std::uint32_t max_requests = c->w_.config().max_requests_per_connection;
    if (max_requests > 0 && ++c->requests_ >= max_requests) {
      // Like nginx's keepalive_requests: the last request is served, and its answer closes.
      c->close_after_ = true;
      c->w_.limits().hit(Limit::RequestsPerConnection);
    }
    // No exception may leave a libuv callback: a failure here answers 500 and closes.
    try {
      route_request(*c, c->req_);
    } catch (const std::exception& e) {
      c->close_after_ = true;
      c->respond(500, "application/json", R"({"error":"internal error"})");
    }
    c->head_ = false;  // answered: an error in whatever follows is not an answer to this HEAD
    if (c->mode_ == Mode::Requests) {
      c->pause_parser();  // resume in parse() for pipelined requests
      c->deadline_ = Deadline::Idle;
      c->deadline_ms_ = uv_now(c->w_.loop()) + c->w_.config().idle_timeout_ms;
    }
    return 0;
  });
}

}  // namespace mcpfan::detail

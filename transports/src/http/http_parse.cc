#include <http_parser.h>
#include <strings.h>

#include "http/http_conn.h"
#include "http/router.h"
#include "server/worker.h"

// The request half of an HTTP connection: http_parser's callbacks fill an HttpRequest,
// enforce the size limits, and hand each complete request to the router.
namespace mcpfan::detail {

namespace {
bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// What a proxy passes on (RFC 9110 §7.6.1): not the hop-by-hop fields, not the framing it
// writes itself (Host, Content-Length), not what was meant for mcpfan (Proxy-*, Expect).
bool forwardable_header(std::string_view f) {
  for (std::string_view hop : {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                               "upgrade", "host", "content-length", "expect", "proxy-authorization", "proxy-authenticate"}) {
    if (ieq(f, hop)) return false;
  }
  return true;
}
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
  last_event_id.clear();
  authorization.clear();
  forward_headers.clear();
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
  else if (ieq(f, "last-event-id")) dst = &req_.last_event_id;
  else if (ieq(f, "authorization")) dst = &req_.authorization;
  // Whitespace around a field value (OWS, RFC 9110 §5.5) is not part of it.
  std::string_view v = value_;
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  if (dst) {
    if (!dst->empty()) *dst += ", ";  // repeated headers combine as a list
    *dst += v;
  }
  if (w_.upstream() && forwardable_header(f)) {
    req_.forward_headers += f;
    req_.forward_headers += ": ";
    req_.forward_headers += v;
    req_.forward_headers += "\r\n";
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
    if (c->mode_ == Mode::Proxying) c->pause_parser();  // pipelined requests wait for the upstream's answer
    if (c->mode_ == Mode::Requests) {
      c->pause_parser();  // resume in parse() for pipelined requests
      c->deadline_ = Deadline::Idle;
      c->deadline_ms_ = uv_now(c->w_.loop()) + c->w_.config().idle_timeout_ms;
    }
    return 0;
  });
}

}  // namespace mcpfan::detail

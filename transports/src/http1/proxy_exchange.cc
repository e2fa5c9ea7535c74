#include "http1/proxy_exchange.h"
#include "http1/response_writer.h"

#include <cstdio>

#include "http/field_syntax.h"
#include "http1/connection.h"
#include "mcp/messages.h"
#include "server/log.h"
#include "server/worker.h"

namespace mcpfan::detail {

namespace {

// The answer's headers that are passed on: not those mcpfan writes itself or that end at the
// hop, and only well-formed ones. A name that is not a token, or one that merely starts like a
// framing header ("Transfer-Encoding x"), is dropped: http_parser reads some of those as the
// real thing, and a client's parser may too (found by fuzz_upstream).
bool forwardable_answer_header(std::string_view name, std::string_view value) {
  if (!is_token(name)) return false;
  for (std::string_view framing : {"transfer-encoding", "content-length"}) {
    if (name.size() >= framing.size() && ieq(name.substr(0, framing.size()), framing)) return false;
  }
  for (std::string_view hop : {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"}) {
    if (ieq(name, hop)) return false;
  }
  for (char ch : value) {
    if ((static_cast<unsigned char>(ch) < 0x20 && ch != '\t') || ch == 0x7f) return false;
  }
  return true;
}

}  // namespace

ProxyExchange::ProxyExchange(Http1Conn& conn, std::string id_json, bool head_request)
    : conn_(conn), id_json_(std::move(id_json)), head_request_(head_request) {}

ProxyExchange::~ProxyExchange() { cancel(); }

void ProxyExchange::start(proxy::UpstreamPool& pool, proxy::ForwardedRequest request) {
  pool_ = &pool;
  conn_.worker().stats().proxied_requests.fetch_add(1, std::memory_order_relaxed);
  proxy::UpstreamCall* call = pool.start(std::move(request), this);
  if (!done_) call_ = call;  // else it ended inside start(): the call is gone
}

void ProxyExchange::cancel() noexcept {
  done_ = true;
  if (call_ && pool_) pool_->cancel(call_);
  call_ = nullptr;
}

void ProxyExchange::drained() {
  if (call_ && pool_) pool_->resume(call_);
}

void ProxyExchange::write_head(int status, const proxy::HeaderList& headers, std::size_t content_length, bool length_known) {
  no_body_ = head_request_ || status == 204 || status == 304;  // whatever bytes an upstream sends with them
  chunked_ = !no_body_ && !length_known;
  std::string out;
  char line[64];
  std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", status, http_reason_phrase(status));
  out += line;
  for (const auto& [k, v] : headers) {
    if (!forwardable_answer_header(k, v)) continue;
    out += k;
    out += ": ";
    out += v;
    out += "\r\n";
  }
  if (length_known && status != 204 && status != 304) {
    out += "Content-Length: ";
    out += std::to_string(content_length);
    out += "\r\n";
  }
  if (chunked_) out += "Transfer-Encoding: chunked\r\n";
  if (proxy::is_event_stream(headers) && !proxy::find_header(headers, "x-accel-buffering")) {
    out += "X-Accel-Buffering: no\r\n";  // so that a buffering proxy in front passes events on at once
  }
  if (!conn_.keeps_alive()) out += "Connection: close\r\n";
  out += "\r\n";
  head_written_ = true;
  if (status >= 400) conn_.worker().stats().http_errors.fetch_add(1, std::memory_order_relaxed);
  conn_.proxy_write(std::move(out));
}

void ProxyExchange::on_head(int status, const proxy::HeaderList& headers) {
  if (done_) return;
  if (rewrite_) {
    buffered_.status = status;
    buffered_.headers = headers;
    return;
  }
  std::size_t length = 0;
  bool known = false;
  if (const std::string* cl = proxy::find_header(headers, "content-length")) {
    known = true;
    length = std::strtoull(cl->c_str(), nullptr, 10);  // http_parser has checked it
  }
  write_head(status, headers, length, known);
}

void ProxyExchange::on_body(std::string_view bytes) {
  if (done_ || bytes.empty()) return;
  if (rewrite_) {
    std::size_t bound = conn_.worker().config().upstream.max_answer_bytes;
    if (buffered_.body.size() + bytes.size() > bound) {
      if (call_ && pool_) pool_->cancel(call_);
      call_ = nullptr;
      conn_.worker().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
      std::string why = "the upstream's answer is larger than " + std::to_string(bound) + " bytes (--upstream-max-answer-bytes)";
      log_failure("too_large", why, 502);
      fail_before_head(502, std::move(why));
      return;
    }
    buffered_.body.append(bytes);
    return;
  }
  if (no_body_) return;
  if (chunked_) {
    char size[24];
    int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
    std::string chunk;
    chunk.reserve(static_cast<std::size_t>(n) + bytes.size() + 2);
    chunk.append(size, static_cast<std::size_t>(n));
    chunk += bytes;
    chunk += "\r\n";
    conn_.proxy_write(std::move(chunk));
  } else {
    conn_.proxy_write(std::string(bytes));
  }
  if (call_ && conn_.proxy_backlogged()) pool_->pause(call_);
}

void ProxyExchange::on_end() {
  if (done_) return;
  call_ = nullptr;
  done_ = true;
  if (rewrite_) {
    rewrite_(buffered_);
    write_head(buffered_.status, buffered_.headers, buffered_.body.size(), true);
    if (!no_body_) conn_.proxy_write(std::move(buffered_.body));
  } else if (chunked_) {
    conn_.proxy_write("0\r\n\r\n");
  }
  conn_.proxy_done(true);
}

void ProxyExchange::on_failure(proxy::UpstreamFailure kind, const std::string& what) {
  if (done_) return;
  call_ = nullptr;
  conn_.worker().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
  bool timeout = kind == proxy::UpstreamFailure::FirstByte || kind == proxy::UpstreamFailure::Idle;
  log_failure(proxy::failure_name(kind), what, head_written_ ? 0 : timeout ? 504 : 502);
  if (head_written_) {  // the client's answer has begun: all it can be told is that it did not end
    done_ = true;
    conn_.proxy_done(false);
    return;
  }
  fail_before_head(timeout ? 504 : 502, "upstream " + std::string(proxy::failure_name(kind)) + ": " + what);
}

void ProxyExchange::log_failure(std::string_view failure, const std::string& what, int status) noexcept {
  if (!log::enabled(LogLevel::Warn)) return;
  try {
    std::string message = "upstream request failed (" + std::string(failure) + "): " + what;
    message += status ? "; answered " + std::to_string(status) : "; the answer was cut short";
    log::line(LogLevel::Warn, "upstream_failed", std::move(message),
              {{"upstream", conn_.worker().config().upstream.url}, {"failure", std::string(failure)}});
  } catch (...) {  // out of memory: the line is lost, the client still gets its answer
    log::count_dropped();
  }
}

void ProxyExchange::fail_before_head(int status, std::string message) {
  done_ = true;
  std::string body = id_json_.empty() ? json_error_body(message)
                                      : rpc_error_json(id_json_, Error{rpc_code::kInternalError, std::move(message)});
  conn_.respond(status, "application/json", body);
  conn_.proxy_done(true);
}

}  // namespace mcpfan::detail

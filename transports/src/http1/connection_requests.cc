#include <http_parser.h>

#include "http1/connection.h"
#include "http/router.h"
#include "server/loop_context.h"

// What a connection does with the requests its RequestParser reads: deadlines, the interim
// 100 Continue, and each complete request handed to the router, one at a time.
namespace mcpfan::detail {

void Http1Conn::request_begun() {
  in_message_ = true;
  deadline_ = Deadline::Request;
  deadline_ms_ = uv_now(w_.loop()) + w_.config().http.request_timeout_ms;
}

void Http1Conn::head_parsed(HttpRequest& req) {
  head_ = req.method == HTTP_HEAD;
  if (!req.expect.empty())
    write_raw("HTTP/1.1 100 Continue\r\n\r\n", false);  // the parser refused any other expectation
}

void Http1Conn::request_complete(HttpRequest& req) {
  w_.stats().http_requests.fetch_add(1, std::memory_order_relaxed);
  in_message_ = false;
  deadline_ = Deadline::None;
  std::uint32_t max_requests = w_.config().http.max_requests_per_connection;
  if (max_requests > 0 && ++requests_ >= max_requests) {
    // Like nginx's keepalive_requests: the last request is served, and its answer closes.
    close_after_ = true;
    w_.limits().hit(Limit::RequestsPerConnection);
  }
  // No exception may leave a libuv callback: a failure here answers 500 and closes.
  try {
    route_request(*this, req);
  } catch (const std::exception& e) {
    close_after_ = true;
    respond(500, "application/json", R"({"error":"internal error"})");
  }
  // Answered: an error in whatever follows is not an answer to this HEAD. A proxied HEAD
  // is answered later (its early 502 or 504 has no body either): proxy_done() resets it.
  if (mode_ != Mode::Proxying) head_ = false;
  if (mode_ == Mode::Requests) {
    deadline_ = Deadline::Idle;
    deadline_ms_ = uv_now(w_.loop()) + w_.config().http.idle_timeout_ms;
  }
  // The parser pauses after every request; pipelined ones wait (parse_some() resumes it).
}

}  // namespace mcpfan::detail

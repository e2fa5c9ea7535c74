#include "http/session_upstream.h"

#include <strings.h>

#include "http/http_conn.h"
#include "server/log.h"
#include "server/worker.h"

namespace mcpfan::detail {

void SessionUpstreamLeg::start(proxy::UpstreamPool& pool, std::string request) {
  pool_ = &pool;
  conn_.worker().stats().proxied_requests.fetch_add(1, std::memory_order_relaxed);
  proxy::UpstreamCall* call = pool.start(std::move(request), this);
  if (!done_) call_ = call;
}

void SessionUpstreamLeg::cancel() noexcept {
  done_ = true;
  if (call_ && pool_) pool_->cancel(call_);
  call_ = nullptr;
}

void SessionUpstreamLeg::end(bool end_client_stream) {
  done_ = true;
  if (call_ && pool_) pool_->cancel(call_);
  call_ = nullptr;
  if (end_client_stream) conn_.finish_stream();  // call last: the connection may go with it
}

void SessionUpstreamLeg::on_head(int status, const proxy::HeaderList& headers) {
  if (done_) return;
  bool sse = false;
  for (const auto& [k, v] : headers) {
    if (strcasecmp(k.c_str(), "content-type") == 0) sse = v.find("text/event-stream") != std::string::npos;
  }
  if (status == 200 && sse) {
    streaming_ = true;
    return;
  }
  // No upstream stream for this session (405: the upstream has none; 409: it has one
  // already, elsewhere): mcpfan's notifications go on alone.
  if (status != 405) {
    log::line("upstream_get", "the upstream answered a session's GET with " + std::to_string(status) +
                                  "; the stream carries mcpfan's notifications only");
  }
  end(false);
}

void SessionUpstreamLeg::on_body(std::string_view bytes) {
  if (done_ || !streaming_) return;
  bool fits = events_.feed(bytes, [this](std::string&& event) {
    if (!done_ && !conn_.inject_event(std::move(event))) done_ = true;  // the stream is gone
  });
  if (done_) return;
  if (!fits) {
    conn_.worker().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
    log::line("upstream_get", "an event on the upstream's GET stream is longer than --upstream-max-answer-bytes; the stream ends");
    end(true);
  }
}

void SessionUpstreamLeg::on_end() {
  if (done_) return;
  call_ = nullptr;
  end(streaming_);
}

void SessionUpstreamLeg::on_failure(proxy::UpstreamFailure kind, const std::string& what) {
  if (done_) return;
  call_ = nullptr;
  conn_.worker().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
  // Cut short: the client's stream ends so that it reconnects, and both halves resume. An
  // upstream that never answered leaves the stream to mcpfan's notifications.
  log::line("upstream_get", "a session's upstream GET stream failed (" + std::string(proxy::failure_name(kind)) + ": " + what +
                                (streaming_ ? "); the client's stream ends so that it reconnects" : "); mcpfan's notifications go on"));
  end(streaming_);
}

}  // namespace mcpfan::detail

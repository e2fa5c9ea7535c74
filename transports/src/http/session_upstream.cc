#include "http/session_upstream.h"

#include <strings.h>

#include "http/event_stream.h"
#include "mcp/session_journal.h"
#include "mcp/sessions.h"
#include "server/log.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

void SessionUpstreamLeg::start(proxy::UpstreamPool& pool, proxy::ForwardedRequest request) {
  pool_ = &pool;
  stream_.context().stats().proxied_requests.fetch_add(1, std::memory_order_relaxed);
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
  if (end_client_stream) stream_.finish();  // call last: the stream may close with it
}

void SessionUpstreamLeg::on_head(int status, const proxy::HeaderList& headers) {
  if (done_) return;
  stream_.release_head();
  if (status == 200 && proxy::is_event_stream(headers)) {
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

std::string SessionUpstreamLeg::carry_id(std::string event) {
  // The splitter ends every line with \n. One id per event: the last `id:` line counts.
  std::size_t at = std::string::npos;
  for (std::size_t pos = 0; pos < event.size();) {
    std::size_t nl = event.find('\n', pos);
    if (event.compare(pos, 3, "id:") == 0) at = pos;
    pos = nl + 1;
  }
  if (at == std::string::npos) return event;  // no id: the client's last id stays what it was
  std::size_t end = event.find('\n', at);
  std::string_view value(event.data() + at + 3, end - at - 3);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  const std::shared_ptr<Session>& s = stream_.session();
  if (!s) return event;
  std::string line;
  {
    std::lock_guard lock(s->mu);
    // The client's cursor on mcpfan's side is unchanged by this event; the upstream's moves.
    s->upstream_event_id = carriable_event_id(value) ? std::string(value) : std::string();
    line = SessionTap::id_line(s->journal.tag(), s->journal.last(), s->upstream_event_id);
  }
  line.pop_back();  // its \n: the event's own follows
  event.replace(at, end - at, line);
  return event;
}

void SessionUpstreamLeg::on_body(std::string_view bytes) {
  if (done_ || !streaming_) return;
  bool fits = events_.feed(bytes, [this](std::string&& event) {
    if (!done_ && !stream_.inject_event(carry_id(std::move(event)))) done_ = true;  // the stream is gone
  });
  if (done_) return;
  if (!fits) {
    stream_.context().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
    log::line("upstream_get",
              "an event on the upstream's GET stream is longer than --upstream-max-answer-bytes; the stream ends");
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
  stream_.release_head();
  call_ = nullptr;
  stream_.context().stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
  // Cut short: the client's stream ends so that it reconnects, and both halves resume. An
  // upstream that never answered leaves the stream to mcpfan's notifications.
  log::line("upstream_get",
            "a session's upstream GET stream failed (" + std::string(proxy::failure_name(kind)) + ": " + what +
                (streaming_ ? "); the client's stream ends so that it reconnects" : "); mcpfan's notifications go on"));
  end(streaming_);
}

}  // namespace mcpfan::detail

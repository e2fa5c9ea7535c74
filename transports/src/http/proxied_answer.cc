#include "http/proxied_answer.h"

#include <cstdlib>

#include "http/field_syntax.h"
#include "mcp/messages.h"
#include "server/log.h"
#include "server/loop_context.h"

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

ProxiedAnswer::ProxiedAnswer(LoopContext& ctx, AnswerCarrier& carrier, std::string id_json, bool head_request)
    : ctx_(ctx), carrier_(carrier), id_json_(std::move(id_json)), head_request_(head_request) {}

ProxiedAnswer::~ProxiedAnswer() { cancel(); }

void ProxiedAnswer::start(proxy::UpstreamPool& pool, proxy::ForwardedRequest request) {
  pool_ = &pool;
  ctx_.stats().proxied_requests.fetch_add(1, std::memory_order_relaxed);
  proxy::UpstreamCall* call = pool.start(std::move(request), this);
  if (!done_) call_ = call;  // else it ended inside start(): the call is gone
}

void ProxiedAnswer::cancel() noexcept {
  done_ = true;
  if (call_ && pool_) pool_->cancel(call_);
  call_ = nullptr;
}

void ProxiedAnswer::drained() {
  if (call_ && pool_) pool_->resume(call_);
}

void ProxiedAnswer::write_head(int status, const proxy::HeaderList& headers, std::optional<std::size_t> length) {
  no_body_ = head_request_ || status == 204 || status == 304;  // whatever bytes an upstream sends with them
  std::vector<Field> fields;
  fields.reserve(headers.size() + 1);
  for (const auto& [k, v] : headers) {
    if (forwardable_answer_header(k, v)) fields.push_back(Field{k, v});
  }
  if (proxy::is_event_stream(headers) && !proxy::find_header(headers, "x-accel-buffering")) {
    fields.push_back(Field{"X-Accel-Buffering", "no"});  // so that a buffering proxy in front passes events on at once
  }
  head_written_ = true;
  if (status >= 400) ctx_.stats().http_errors.fetch_add(1, std::memory_order_relaxed);
  carrier_.answer_head(status, fields, status == 204 || status == 304 ? std::nullopt : length, no_body_);
}

void ProxiedAnswer::on_head(int status, const proxy::HeaderList& headers) {
  if (done_) return;
  if (rewrite_) {
    buffered_.status = status;
    buffered_.headers = headers;
    return;
  }
  if (observer_) observer_->answer_head(status, headers);
  std::optional<std::size_t> length;
  if (const std::string* cl = proxy::find_header(headers, "content-length")) {
    length = std::strtoull(cl->c_str(), nullptr, 10);  // http_parser has checked it
  }
  write_head(status, headers, length);
}

void ProxiedAnswer::on_body(std::string_view bytes) {
  if (done_ || bytes.empty()) return;
  if (rewrite_) {
    std::size_t bound = ctx_.config().upstream.max_answer_bytes;
    if (buffered_.body.size() + bytes.size() > bound) {
      if (call_ && pool_) pool_->cancel(call_);
      call_ = nullptr;
      ctx_.stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
      std::string why =
          "the upstream's answer is larger than " + std::to_string(bound) + " bytes (--upstream-max-answer-bytes)";
      log_failure("too_large", why, 502);
      fail_before_head(502, std::move(why));
      return;
    }
    buffered_.body.append(bytes);
    return;
  }
  if (no_body_) return;
  if (observer_) observer_->answer_body(bytes);
  carrier_.answer_body(bytes);
  if (call_ && carrier_.answer_backlogged()) pool_->pause(call_);
}

void ProxiedAnswer::on_end() {
  if (done_) return;
  call_ = nullptr;
  done_ = true;
  if (rewrite_) {
    rewrite_(buffered_);
    write_head(buffered_.status, buffered_.headers, buffered_.body.size());
    if (!no_body_ && !buffered_.body.empty()) carrier_.answer_body(buffered_.body);
  }
  if (!no_body_) carrier_.answer_end();
  // Told after the client's carrier has the whole answer; moved out first, since answer_done() may destroy this.
  std::unique_ptr<AnswerObserver> observer = std::move(observer_);
  if (observer && !rewrite_) observer->answer_end();
  carrier_.answer_done(true);
}

void ProxiedAnswer::on_failure(proxy::UpstreamFailure kind, const std::string& what) {
  if (done_) return;
  call_ = nullptr;
  observer_.reset();
  ctx_.stats().upstream_failures.fetch_add(1, std::memory_order_relaxed);
  bool timeout = kind == proxy::UpstreamFailure::FirstByte || kind == proxy::UpstreamFailure::Idle;
  log_failure(proxy::failure_name(kind), what, head_written_ ? 0 : timeout ? 504 : 502);
  if (head_written_) {  // the client's answer has begun: all it can be told is that it did not end
    done_ = true;
    carrier_.answer_done(false);
    return;
  }
  fail_before_head(timeout ? 504 : 502, "upstream " + std::string(proxy::failure_name(kind)) + ": " + what);
}

void ProxiedAnswer::log_failure(std::string_view failure, const std::string& what, int status) noexcept {
  if (!log::enabled(LogLevel::Warn)) return;
  try {
    std::string message = "upstream request failed (" + std::string(failure) + "): " + what;
    message += status ? "; answered " + std::to_string(status) : "; the answer was cut short";
    log::line(LogLevel::Warn, "upstream_failed", std::move(message),
              {{"upstream", ctx_.config().upstream.url}, {"failure", std::string(failure)}});
  } catch (...) {  // out of memory: the line is lost, the client still gets its answer
    log::count_dropped();
  }
}

void ProxiedAnswer::fail_before_head(int status, std::string message) {
  done_ = true;
  std::string body = id_json_.empty() ? json_error_body(message)
                                      : rpc_error_json(id_json_, Error{rpc_code::kInternalError, std::move(message)});
  carrier_.answer_error(Response{status, "application/json", std::move(body), {}});
  carrier_.answer_done(true);
}

}  // namespace mcpfan::detail

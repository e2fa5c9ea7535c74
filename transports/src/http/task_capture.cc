#include "http/task_capture.h"

namespace mcpfan::detail {

TaskCapture::TaskCapture(TaskPoller& poller, CreatedTask context, std::size_t max_bytes)
    : poller_(poller), context_(std::move(context)), max_(max_bytes) {}

// Each call is noexcept in effect: what throws (out of memory) only stops the capture; the
// client's answer goes on.
void TaskCapture::answer_head(int status, const proxy::HeaderList& headers) {
  try {
    ok_ = status == 200;
    event_stream_ = proxy::is_event_stream(headers);
    if (event_stream_) events_ = std::make_unique<proxy::SseEventSplitter>(max_);
  } catch (...) {
    over_ = true;
  }
}

void TaskCapture::answer_body(std::string_view bytes) {
  try {
    read(bytes);
  } catch (...) {
    over_ = true;
  }
}

void TaskCapture::read(std::string_view bytes) {
  if (!ok_ || over_) return;
  if (!event_stream_) {
    if (body_.size() + bytes.size() > max_) {
      over_ = true;  // larger than any task handle: a tool's whole result
      body_.clear();
      body_.shrink_to_fit();
      return;
    }
    body_.append(bytes);
    return;
  }
  // Only the events that are responses are looked at: progress and log notifications pass by.
  bool fits = events_->feed(bytes, [this](std::string&& event) {
    if (event.find("\"taskId\"") == std::string::npos) return;  // cheap: most events are not a task handle
    std::optional<std::string> data = response_in(event, true);
    if (data && read_task_answer(*data, true)) last_ = std::move(*data);
  });
  if (!fits) {
    over_ = true;
    events_.reset();
  }
}

void TaskCapture::answer_end() {
  try {
    end();
  } catch (...) {  // the task is not polled; the client has its answer
  }
}

void TaskCapture::end() {
  if (!ok_ || over_) return;
  if (event_stream_) read("\n\n");  // an unterminated last event
  if (over_) return;
  std::optional<CreatedTask> t = read_task_answer(event_stream_ ? std::string_view(last_) : body_, true);
  if (!t) return;
  t->tenant = std::move(context_.tenant);
  t->principal = std::move(context_.principal);
  t->authorization = std::move(context_.authorization);
  t->protocol_version = std::move(context_.protocol_version);
  poller_.track(std::move(*t));
}

}  // namespace mcpfan::detail

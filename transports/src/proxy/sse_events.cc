#include "proxy/sse_events.h"

namespace mcpfan::detail::proxy {

void SseEventSplitter::end_line(const std::function<void(std::string&&)>& on_event) {
  if (line_.empty()) {  // a blank line ends the event
    if (has_field_) {
      event_ += '\n';
      on_event(std::move(event_));
    }
    event_.clear();
    has_field_ = false;
    return;
  }
  if (line_.front() != ':') has_field_ = true;
  event_ += line_;
  event_ += '\n';
  line_.clear();
}

bool SseEventSplitter::feed(std::string_view bytes, const std::function<void(std::string&&)>& on_event) {
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (after_cr_ && bytes[pos] == '\n') ++pos;  // the \n of a \r\n: that line has ended already
    after_cr_ = false;
    std::size_t end = bytes.find_first_of("\r\n", pos);
    line_.append(bytes.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (line_.size() + event_.size() > max_) return false;
    if (end == std::string_view::npos) break;
    after_cr_ = bytes[end] == '\r';
    pos = end + 1;
    end_line(on_event);
  }
  return true;
}

}  // namespace mcpfan::detail::proxy

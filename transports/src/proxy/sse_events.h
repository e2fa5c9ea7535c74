#pragma once
// Splits an SSE byte stream (an upstream's GET stream) into whole events, so that the front
// proxy can interleave them with mcpfan's own notifications on one client stream without
// ever cutting an event in two. Lines end in \n, \r\n or \r (any mix); an event ends at a
// blank line. Each event comes out with its lines ended by \n and a blank line after it;
// comment-only blocks (keep-alives: mcpfan writes its own) are dropped. Bounded: an event
// longer than `max_event_bytes` is an error, not a buffer that grows.
// Not thread-safe; one instance per stream.
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace mcpfan::detail::proxy {

class SseEventSplitter {
 public:
  explicit SseEventSplitter(std::size_t max_event_bytes) : max_(max_event_bytes) {}
  /** Feeds bytes; calls `on_event` for each event completed. False once an event is over the bound. */
  [[nodiscard]] bool feed(std::string_view bytes, const std::function<void(std::string&&)>& on_event);

 private:
  void end_line(const std::function<void(std::string&&)>& on_event);

  std::size_t max_;
  std::string line_;   // the line being read
  std::string event_;  // the event's lines so far
  bool has_field_ = false;  // a line other than a comment
  bool after_cr_ = false;   // the last byte was \r: a \n now ends nothing more
};

}  // namespace mcpfan::detail::proxy

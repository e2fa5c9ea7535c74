#pragma once
// The upstream half of a proxied 2025-era session's GET stream (docs/protocol.md "Front proxy"). With --upstream,
// a session's one GET stream carries two sources: mcpfan's notifications (the shard writes
// them) and whatever the upstream MCP server sends on its own GET stream for the session
// (server requests, logging, its own notifications). This leg holds the upstream's GET and
// hands each whole SSE event to the client's stream, in order with mcpfan's, never cutting
// one in two.
//
//  - An upstream that answers the GET with anything but a 200 event stream (405: it has no
//    GET stream) leaves the client with mcpfan's notifications alone.
//  - An upstream stream that ends or fails ends the client's stream (cleanly): the client
//    reconnects its GET, as it would to the upstream itself, and both halves resume.
//  - An event longer than --upstream-max-answer-bytes ends the client's stream the same way.
//  - Event ids: the stream is one stream to the client, with one Last-Event-ID. Each upstream
//    event's id becomes `<mcpfan cursor>~<upstream id>` and mcpfan's own carry the upstream's
//    last id the same way, so a client that resumes restores both halves: mcpfan replays its
//    journal, and the upstream's GET is resumed with the upstream's id.
//  - The client's 200 waits for the upstream's answer to this GET (EventStream::hold_head()).
//
// Loop-affine (the stream's worker). Owned by the client's EventStream (http/event_stream.h),
// which cancels it when the stream closes: it knows nothing of the client's HTTP version.
#include <string>

#include "proxy/sse_events.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

class EventStream;

class SessionUpstreamLeg final : public proxy::UpstreamSink {
 public:
  SessionUpstreamLeg(EventStream& stream, std::size_t max_event_bytes) : stream_(stream), events_(max_event_bytes) {}
  ~SessionUpstreamLeg() override { cancel(); }
  SessionUpstreamLeg(const SessionUpstreamLeg&) = delete;
  SessionUpstreamLeg& operator=(const SessionUpstreamLeg&) = delete;

  void start(proxy::UpstreamPool& pool, proxy::ForwardedRequest request);
  void cancel() noexcept;

  void on_head(int status, const proxy::HeaderList& headers) override;
  void on_body(std::string_view bytes) override;
  void on_end() override;
  void on_failure(proxy::UpstreamFailure kind, const std::string& what) override;

 private:
  void end(bool end_client_stream);
  /** The event with its id made the session's: `<cursor>~<the upstream's id>` (session_journal.h). */
  std::string carry_id(std::string event);

  EventStream& stream_;
  proxy::SseEventSplitter events_;
  proxy::UpstreamPool* pool_ = nullptr;
  proxy::UpstreamCall* call_ = nullptr;
  bool done_ = false;
  bool streaming_ = false;  // the upstream answered 200 with an event stream
};

}  // namespace mcpfan::detail

#pragma once
// The event stream an HTTP exchange turns into (docs/design.md "The rooms of transports/"): a
// listen's SSE stream, or a 2025 session's GET stream with its claim, replay, take-over and
// parking. It is the Shard's StreamSink and knows what the stream means; how its bytes are
// framed is its StreamCarrier's business: HTTP/1.1 chunks on a connection today
// (http1/connection.h), DATA frames of an HTTP/2 stream next. So the session logic is written
// once for every HTTP version.
//
// Thread affinity: loop-affine (the worker that owns the carrier). Lifetime: owned by its
// carrier, and lives until the carrier is freed: the shard, the session (Session::conn) and
// the upstream leg may name it until close() has run.
#include <memory>
#include <optional>
#include <string>

#include "http/exchange.h"
#include "mcp/sessions.h"
#include "mcp/usage.h"
#include "mcpfan/shard.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

class LoopContext;
class SessionUpstreamLeg;

/** What carries an EventStream's bytes to the client. Loop-affine. */
class StreamCarrier {
 public:
  enum class Wrote : std::uint8_t { Done, Queued, Failed };
  /** The exchange is a stream from now on: no further request is read on it. */
  virtual void stream_started() = 0;
  /** The 200 and the event-stream headers. */
  virtual void write_head() = 0;
  /**
   * One batch of events, framed. Queued: the carrier calls EventStream::batch_written() when
   * it is out. Failed: nothing more can be written; the stream is being closed.
   */
  [[nodiscard]] virtual Wrote write_events(OutBatch&& batch) = 0;
  /** The stream's clean end (the chunked terminator); the carrier closes after it. */
  virtual void write_end() = 0;
  /** Ends at once, without a clean end (a slow consumer, a failed write). */
  virtual void abort() = 0;

 protected:
  ~StreamCarrier() = default;
};

class EventStream final : public StreamSink {
 public:
  EventStream(LoopContext& w, StreamCarrier& carrier) noexcept;
  ~EventStream();
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // ---- what an Exchange turns into (http/exchange.h has the contracts) ----
  void hold_usage(StreamUsage usage) noexcept { usage_ = std::move(usage); }
  void begin_listen(const Filter& filter, std::string id, std::string ack_event);
  /** event_stream_session.cc */
  [[nodiscard]] SessionRegistry::Claim begin_session(std::shared_ptr<Session> session, const std::string* last_event_id,
                                                     std::optional<std::string> upstream_cursor);
  void hold_head() noexcept { hold_head_ = true; }
  void release_head();
  [[nodiscard]] bool open() const noexcept { return open_; }
  [[nodiscard]] bool streams_session() const noexcept { return open_ && session_ != nullptr; }
  /** Holds the upstream's GET stream for this session stream (http/session_upstream.h). */
  void start_upstream_leg(proxy::ForwardedRequest request);

  // ---- the upstream leg's (http/session_upstream.h) ----
  /** One whole SSE event from the upstream, queued in order with the shard's notifications. False: the stream is gone.
   */
  [[nodiscard]] bool inject_event(std::string event);
  /** The session whose GET stream this is (null otherwise). */
  [[nodiscard]] const std::shared_ptr<Session>& session() const noexcept { return session_; }
  [[nodiscard]] LoopContext& context() noexcept { return w_; }

  // ---- the carrier's ----
  /** Server shutdown: a listen gets its final result, a session stream its end. */
  void shutdown();
  /** The clean end (for a session stream: DELETE), then the carrier closes. Idempotent. */
  void finish();
  /** A batch the carrier queued is out (one that failed is not reported: the carrier closes instead). */
  void batch_written();
  /** The carrier is closing: lets go of the session, the shard's stream, the usage and the leg. Idempotent. */
  void close();

  // StreamSink
  void write_batch(OutBatch&& batch) override;
  void close_requested(CloseReason reason) override;

 private:
  void start(StreamJournal* journal = nullptr);
  void send_head();
  void end_listen();
  void written();  // a batch is out: tell the shard, end the stream if it was ending
  /** Queued on the stream, in order; false (and the carrier aborted) when it went past the stream's bound. */
  bool send(std::string bytes);
  void release_session();
  /** A session stream that took over another becomes live (event_stream_session.cc). */
  void go_live(std::uint64_t epoch, const std::optional<std::string>& cursor);

  LoopContext& w_;
  StreamCarrier& carrier_;
  bool open_ = false;
  bool closed_ = false;     // close() ran: the carrier is closing, nothing more is written
  bool ending_ = false;     // a listen's final result is queued: the end follows once it is written
  bool hold_head_ = false;  // hold_head(): the 200 waits for release_head()
  bool head_held_ = false;  // ...and it is waiting now
  std::optional<OutBatch> held_batch_;  // the shard's first batch, written after the held head
  StreamId stream_{};
  std::string listen_id_;             // empty for a session stream
  StreamUsage usage_;                 // a listen's stream and subscriptions
  std::shared_ptr<Session> session_;  // the session whose GET stream this is
  std::unique_ptr<SessionTap> tap_;   // its event ids (outlives the shard's stream: freed with this)
  std::unique_ptr<SessionUpstreamLeg> leg_;  // a proxied session stream's upstream GET
};

/**
 * An Exchange whose streams are its EventStream's: what a route does to turn the exchange into a
 * stream is handed over as is. The HTTP/1.1 connection and the HTTP/2 stream are both one.
 */
class StreamingExchange : public Exchange {
 public:
  void hold_stream_usage(StreamUsage usage) noexcept override { event_stream().hold_usage(std::move(usage)); }
  void begin_listen(const Filter& filter, std::string id, std::string ack_event) override {
    event_stream().begin_listen(filter, std::move(id), std::move(ack_event));
  }
  [[nodiscard]] SessionRegistry::Claim begin_session_stream(
      std::shared_ptr<Session> session, const std::string* last_event_id,
      std::optional<std::string> upstream_cursor = std::nullopt) override {
    return event_stream().begin_session(std::move(session), last_event_id, std::move(upstream_cursor));
  }
  void hold_head() noexcept override { event_stream().hold_head(); }
  void release_head() override { event_stream().release_head(); }
  [[nodiscard]] bool streams_session() const noexcept override {
    return const_cast<StreamingExchange*>(this)->event_stream().streams_session();
  }
  void start_upstream_leg(proxy::ForwardedRequest request) override {
    event_stream().start_upstream_leg(std::move(request));
  }

 protected:
  ~StreamingExchange() = default;
  [[nodiscard]] virtual EventStream& event_stream() noexcept = 0;
};

}  // namespace mcpfan::detail

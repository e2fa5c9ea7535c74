#pragma once
// A 2025-era session between GET streams (docs/protocol.md "Resumable 2025 sessions"). When the session's
// GET connection closes (not DELETE, not expiry, not shutdown), the session stays subscribed
// on that worker through a ParkedStream: a shard stream that writes nothing and whose
// SessionTap only journals, so what is published during the outage is there (coalesced per
// (method, uri)) when the client resumes with Last-Event-ID. Parking ends when a new GET
// takes over (on any worker: the new stream subscribes first and only journals; the parked
// one is ended by a task on its worker's inbox, behind every publish routed there before;
// then the new stream goes live from the journal: EventStream::go_live in http/event_stream_session.cc), at
// DELETE, at expiry and at shutdown.
#include <memory>

#include "mcp/sessions.h"
#include "mcpfan/shard.h"
#include "server/conn.h"

namespace mcpfan {
class Hub;
}

namespace mcpfan::detail {

class LoopContext;

class ParkedStream final : public Conn, public StreamSink {
 public:
  /**
   * Parks `s` on `w`'s shard: subscribes a new stream to the session's filter and records it
   * as the session's (owner, stream, sub, live = null). Loop-affine to `w`; the caller holds
   * s->mu and has checked the session has not ended.
   */
  static void park(LoopContext& w, const std::shared_ptr<Session>& s);

  // Conn: a parked stream has no client to tell; shutdown ends it at once.
  void begin_shutdown() override { close(); }
  void force_close() override { close(); }
  void sweep(std::uint64_t) override {}

  // StreamSink: nothing is queued on it but what the shard adds to every stream.
  void write_batch(OutBatch&& batch) override;
  void close_requested(CloseReason reason) override;

 private:
  ParkedStream(LoopContext& w, std::shared_ptr<Session> s);
  void close();
  void finish();  // the stream is closed: forget it in the session, unlink, free

  LoopContext& w_;
  std::shared_ptr<Session> s_;
  SessionTap tap_;
  StreamId stream_{};
};

/**
 * Ends the session's GET stream or parked stream, wherever it is; any thread. Posted to the
 * owner's shard and addressed by the stream's generation-checked id, so a stream that ended
 * meanwhile is left alone. For DELETE and expiry: the session has ended (no new stream).
 */
void end_session_stream(Hub& hub, const std::shared_ptr<Session>& s);

}  // namespace mcpfan::detail

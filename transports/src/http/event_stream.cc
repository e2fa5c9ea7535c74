#include "http/event_stream.h"

#include "http/session_upstream.h"
#include "mcp/messages.h"
#include "server/log.h"
#include "mcp/client.h"
#include "server/loop_context.h"

// The stream's life whatever it carries: its start, its writes and its end. What only a 2025
// session stream does (claim, replay, take-over, parking) is in event_stream_session.cc.
namespace mcpfan::detail {

EventStream::EventStream(LoopContext& w, StreamCarrier& carrier) noexcept : w_(w), carrier_(carrier) {}
EventStream::~EventStream() = default;

void EventStream::start(StreamJournal* journal) {
  carrier_.stream_started();
  stream_ = w_.shard().open_stream(this, Framing::Sse, journal);
  open_ = true;
}

void EventStream::send_head() {
  if (hold_head_) {  // written by release_head()
    head_held_ = true;
    return;
  }
  // Written once the stream's subscription exists: a client that publishes as soon as it sees
  // the 200 must find its stream in the index (and in the routing table, which posts a
  // publish only to the loops that hold a match), not race this loop to it.
  carrier_.write_head();
}

void EventStream::release_head() {
  hold_head_ = false;
  if (!head_held_ || closed_) return;
  head_held_ = false;
  send_head();
  if (held_batch_) {
    OutBatch batch = std::move(*held_batch_);
    held_batch_.reset();
    write_batch(std::move(batch));
  }
}

void EventStream::begin_listen(const Filter& filter, std::string id, std::string ack_event) {
  start();
  listen_id_ = std::move(id);
  Shard& shard = w_.shard();
  // First on the stream: nothing is drained before it. An ack past the pending-bytes bound
  // (thousands of long URIs echoed back) ends the stream before it starts.
  if (shard.send(stream_, std::move(ack_event)) != SendStatus::Ok) {
    open_ = false;
    send_head();  // a 200 stream that ends at once, as before
    carrier_.abort();
    return;
  }
  SubId sub = shard.subscribe(stream_, filter, listen_id_);
  w_.clients().replay_task_states(shard, sub, filter);  // behind the ack
  send_head();  // now; the ack goes out at the shard's flush, after it
}

bool EventStream::send(std::string bytes) {
  if (w_.shard().send(stream_, std::move(bytes)) == SendStatus::Ok) return true;
  open_ = false;  // past the stream's bound: the shard closed it
  carrier_.abort();
  return false;
}

bool EventStream::inject_event(std::string event) { return open_ && send(std::move(event)); }

void EventStream::end_listen() {
  if (!open_ || ending_) return;
  ending_ = true;
  (void)send(sse_event(listen_complete_result(listen_id_)));  // over the bound: no final result
}

void EventStream::shutdown() {
  if (!open_) return;
  if (!listen_id_.empty()) end_listen();
  else finish();
}

void EventStream::finish() {
  if (!open_) return;
  release_head();  // a stream ended before its upstream answered still gets its 200 first
  open_ = false;
  w_.shard().close_stream(stream_);
  release_session();
  carrier_.write_end();
}

void EventStream::write_batch(OutBatch&& batch) {
  if (head_held_) {  // nothing before the 200: the shard waits for write_done() meanwhile
    held_batch_.emplace(std::move(batch));
    return;
  }
  switch (carrier_.write_events(std::move(batch))) {
    case StreamCarrier::Wrote::Done: return written();
    case StreamCarrier::Wrote::Queued: return;
    case StreamCarrier::Wrote::Failed:
      w_.shard().write_done(stream_);
      return carrier_.abort();
  }
}

void EventStream::batch_written() {
  if (open_) written();
}

void EventStream::written() {
  Shard& shard = w_.shard();
  shard.write_done(stream_);
  if (ending_ && shard.pending_bytes(stream_) == 0) finish();
}

void EventStream::close_requested(CloseReason reason) {
  // A session's stream ended by its owner (DELETE, expiry, a GET that took over): the clean
  // end, then the close. The shard has closed the stream already.
  if (reason == CloseReason::Ended) return finish();
  log_stream_close(reason, "http");
  // The shard already closed our stream; end without the final result, which would only add
  // to the backlog that got it closed.
  open_ = false;
  carrier_.abort();
}

void EventStream::start_upstream_leg(proxy::ForwardedRequest request) {
  if (!streams_session() || !w_.upstream()) return;
  leg_ = std::make_unique<SessionUpstreamLeg>(*this, w_.config().upstream.max_answer_bytes);
  leg_->start(*w_.upstream(), std::move(request));
}

void EventStream::close() {
  if (closed_) return;
  closed_ = true;
  if (leg_) leg_->cancel();
  release_session();  // first: a session's subscription may be parked before its stream closes
  if (open_) {
    open_ = false;
    w_.shard().close_stream(stream_);
  }
  usage_.release();
}

}  // namespace mcpfan::detail

#include "http/session_park.h"

#include "mcp/client.h"
#include "mcpfan/hub.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

ParkedStream::ParkedStream(LoopContext& w, std::shared_ptr<Session> s) : w_(w), s_(s), tap_(std::move(s), 0) {}

void ParkedStream::park(LoopContext& w, const std::shared_ptr<Session>& s) {
  std::unique_ptr<ParkedStream> p(new ParkedStream(w, s));
  Shard& shard = w.shard();
  // Framing::Line: the keepalive sweep passes it by. Its tap (epoch 0) never returns an id,
  // so no notification is ever queued on it either.
  p->stream_ = shard.open_stream(p.get(), Framing::Line, &p->tap_);
  SubId sub;
  try {
    sub = shard.subscribe(p->stream_, ClientCore::session_filter(s->tenant, s->uris), {});
  } catch (...) {
    shard.close_stream(p->stream_);
    throw;
  }
  // Nothing below throws.
  s->sub = sub;
  s->owner = static_cast<int>(w.index());
  s->stream = p->stream_;
  s->live = nullptr;
  s->live_epoch = 0;
  s->pending_epoch = 0;
  w.link(p.release());
  s->counters.parked.fetch_add(1, std::memory_order_relaxed);
}

void ParkedStream::write_batch(OutBatch&& batch) {
  OutBatch dropped(std::move(batch));
  w_.shard().write_done(stream_);
}

void ParkedStream::close_requested(CloseReason) { finish(); }

void ParkedStream::close() {
  w_.shard().close_stream(stream_);
  finish();
}

void ParkedStream::finish() {
  {
    std::lock_guard lock(s_->mu);
    if (s_->owner == static_cast<int>(w_.index()) && s_->stream == stream_) {  // not taken over
      s_->owner = -1;
      s_->stream = StreamId{};
      s_->sub = SubId{};
    }
  }
  s_->counters.parked.fetch_sub(1, std::memory_order_relaxed);
  w_.unlink(this);
  delete this;
}

void end_session_stream(Hub& hub, const std::shared_ptr<Session>& s) {
  int owner;
  StreamId stream;
  {
    std::lock_guard lock(s->mu);
    owner = s->owner;
    stream = s->stream;
  }
  if (owner < 0) return;
  Shard& shard = hub.shard(static_cast<std::size_t>(owner));
  // Only the owner loop touches its streams; the id's generation makes a stale one a no-op.
  shard.post_task([&shard, stream, keep = s] { shard.end_stream(stream, CloseReason::Ended); });
}

}  // namespace mcpfan::detail

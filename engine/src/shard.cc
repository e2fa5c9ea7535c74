#include "mcpfan/shard.h"

#include <cstdio>
#include <cstdlib>

namespace mcpfan {

namespace detail {
void release(Chunk* c) noexcept {
  if (c && --c->refs == 0) delete c;
}
}  // namespace detail

using detail::Chunk;

namespace {
// In-order delivery waits for every sequence number, so a post that was numbered but not
// queued would stall the shard for good: failing loudly is the only honest option.
void enqueued_or_die(bool ok) {
  if (!ok) {
    std::fprintf(stderr, "mcpfan: shard inbox allocation failed\n");
    std::abort();
  }
}
}  // namespace

namespace {
Chunk* own_bytes(std::string bytes) {
  auto* c = new Chunk();
  c->bytes = std::move(bytes);
  return c;
}
std::size_t chunk_size(const Chunk* c, const Chunk* id, Framing f) {
  if (!c->payload) return c->bytes.size();
  if (id->bytes.empty()) return c->payload->plain(f).size();
  return c->payload->frame_size(f) + id->bytes.size();
}
// Same (method, uri) — the coalescing key within one subscription.
bool same_event_key(const Chunk* a, const Chunk* b) {
  if (!a->payload || !b->payload) return false;
  return a->payload->kind() == b->payload->kind() && a->payload->uri() == b->payload->uri();
}
}  // namespace

OutBatch::~OutBatch() {
  for (auto* c : refs_) detail::release(c);
  if (pool_) pool_->recycle(std::move(bufs), std::move(refs_));
}

void Shard::recycle(std::vector<iovec>&& bufs, std::vector<Chunk*>&& refs) noexcept {
  constexpr std::size_t kKeep = 1024;       // vectors kept for reuse
  constexpr std::size_t kMaxCapacity = 4096; // a huge one-off batch is not kept
  try {
    if (free_bufs_.size() < kKeep && bufs.capacity() <= kMaxCapacity) {
      bufs.clear();
      free_bufs_.push_back(std::move(bufs));
    }
    if (free_refs_.size() < kKeep && refs.capacity() <= kMaxCapacity) {
      refs.clear();
      free_refs_.push_back(std::move(refs));
    }
  } catch (...) {  // out of memory: the vectors are simply freed
  }
}

Shard::Shard(ShardOptions options) : options_(options), keepalive_chunk_(own_bytes(": keepalive\n\n")) {
  drain_buf_.resize(options_.drain_batch);
}

Shard::~Shard() {
  for (StreamId i = 0; i < streams_.size(); ++i) {
    if (streams_[i].live) close_stream(i);
  }
  detail::release(keepalive_chunk_);
  InboxItem item;
  while (inbox_.try_dequeue(item)) item.payload.reset();
}

void Shard::post(PayloadRef payload) {
  std::uint64_t seq = post_seq_.fetch_add(1, std::memory_order_relaxed);
  enqueued_or_die(inbox_.enqueue(InboxItem{seq, std::move(payload), nullptr}));
  if (wake_) wake_(wake_arg_);
}

void Shard::post_bulk(PayloadRef* payloads, std::size_t n) {
  if (n == 0) return;
  std::uint64_t seq = post_seq_.fetch_add(n, std::memory_order_relaxed);
  std::vector<InboxItem> items(n);
  for (std::size_t i = 0; i < n; ++i) items[i] = InboxItem{seq + i, std::move(payloads[i]), nullptr};
  enqueued_or_die(inbox_.enqueue_bulk(std::make_move_iterator(items.begin()), n));
  if (wake_) wake_(wake_arg_);
}

void Shard::post_task(std::function<void()> task) {
  std::uint64_t seq = post_seq_.fetch_add(1, std::memory_order_relaxed);
  enqueued_or_die(inbox_.enqueue(InboxItem{seq, {}, std::make_unique<std::function<void()>>(std::move(task))}));
  if (wake_) wake_(wake_arg_);
}

StreamId Shard::open_stream(StreamSink* sink, Framing framing) {
  StreamId id;
  if (!free_streams_.empty()) {
    id = free_streams_.back();
    free_streams_.pop_back();
  } else {
    id = static_cast<StreamId>(streams_.size());
    streams_.emplace_back();
  }
  Stream& s = streams_[id];
  s.sink = sink;
  s.framing = framing;
  s.live = true;
  s.writing = s.dirty = false;
  s.pending_bytes = 0;
  s.last_write_ms = 0;
  ++live_streams_;
  stats_.streams.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void Shard::close_stream(StreamId id) {
  Stream& s = streams_[id];
  if (!s.live) return;
  while (!s.subs.empty()) unsubscribe(s.subs.back());
  for (const Pending& p : s.pending) detail::release(p.chunk), detail::release(p.id);
  s.pending.clear();
  s.pending.shrink_to_fit();
  s.subs.shrink_to_fit();
  s.live = false;
  s.sink = nullptr;
  s.pending_bytes = 0;
  // A stale entry may remain in dirty_; flush() skips streams that are not live.
  free_streams_.push_back(id);
  --live_streams_;
  stats_.streams.fetch_sub(1, std::memory_order_relaxed);
}

SubId Shard::subscribe(StreamId stream, const Filter& filter, std::string id_token) {
  SubId sub = index_.create();
  if (subs_.size() <= sub) subs_.resize(sub + 1);
  subs_[sub] = Sub{stream, own_bytes(std::move(id_token))};
  for (int k = 0; k < kKindCount; ++k) {
    auto kind = static_cast<Kind>(k);
    if (kind != Kind::ResourceUpdated && (filter.kinds & kind_bit(kind))) index_.add(sub, filter.tenant, kind, {});
  }
  for (const std::string& uri : filter.uris) index_.add(sub, filter.tenant, Kind::ResourceUpdated, uri);
  streams_[stream].subs.push_back(sub);
  stats_.subscriptions.fetch_add(1, std::memory_order_relaxed);
  return sub;
}

void Shard::unsubscribe(SubId sub) {
  Sub& r = subs_[sub];
  if (!r.id) return;
  auto& list = streams_[r.stream].subs;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == sub) {
      list[i] = list.back();
      list.pop_back();
      break;
    }
  }
  index_.remove(sub);
  detail::release(r.id);  // queued notifications keep their own reference to the token
  r.id = nullptr;
  stats_.subscriptions.fetch_sub(1, std::memory_order_relaxed);
}

void Shard::add_uri(SubId sub, TenantId tenant, std::string_view uri) {
  if (subs_[sub].id) index_.add(sub, tenant, Kind::ResourceUpdated, uri);
}

void Shard::remove_uri(SubId sub, TenantId tenant, std::string_view uri) {
  if (subs_[sub].id) index_.remove_key(sub, tenant, Kind::ResourceUpdated, uri);
}

void Shard::mark_dirty(StreamId sid, Stream& s) {
  if (s.dirty) return;
  s.dirty = true;
  if (dirty_.empty() && on_dirty_) on_dirty_(on_dirty_arg_);
  dirty_.push_back(sid);
}

void Shard::enqueue(StreamId sid, Stream& s, Chunk* chunk, Chunk* id) {
  if (s.writing && chunk->payload) {
    // The stream is behind: an unwritten notification for the same (subscription, method,
    // uri) says nothing the newer one does not, so it goes, and the newer one is appended
    // to keep publish order. The queue then holds one entry per distinct key, so a stuck
    // stream's memory is bounded by what it subscribes to, not by how much is published.
    for (auto it = s.pending.begin(); it != s.pending.end(); ++it) {
      if (it->id == id && same_event_key(it->chunk, chunk)) {
        s.pending_bytes -= chunk_size(it->chunk, it->id, s.framing);
        detail::release(it->chunk);
        detail::release(it->id);
        s.pending.erase(it);
        stats_.coalesced.fetch_add(1, std::memory_order_relaxed);
        break;
      }
    }
  }
  ++chunk->refs;
  if (id) ++id->refs;
  s.pending.push_back(Pending{chunk, id});
  s.pending_bytes += chunk_size(chunk, id, s.framing);
  mark_dirty(sid, s);
}

void Shard::send(StreamId stream, std::string bytes) {
  Stream& s = streams_[stream];
  if (!s.live) return;
  Chunk* c = own_bytes(std::move(bytes));
  enqueue(stream, s, c, nullptr);
  detail::release(c);
}

void Shard::keepalive(std::uint64_t now_ms, std::uint64_t interval_ms) {
  for (StreamId i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    if (!s.live || s.framing != Framing::Sse || s.writing || !s.pending.empty()) continue;
    if (s.last_write_ms == 0) s.last_write_ms = now_ms;  // opened since the last sweep
    if (now_ms - s.last_write_ms >= interval_ms) enqueue(i, s, keepalive_chunk_, nullptr);
  }
}

void Shard::close_slow(StreamId sid, Stream& s) {
  stats_.slow_closes.fetch_add(1, std::memory_order_relaxed);
  StreamSink* sink = s.sink;
  close_stream(sid);
  sink->close_requested(CloseReason::SlowConsumer);
}

void Shard::deliver(const PayloadRef& p) {
  Chunk* chunk = nullptr;  // created on the first match: the loop's one atomic reference
  std::uint64_t n = 0;
  index_.match(p->tenant(), p->kind(), p->uri(), [&](SubId sub) {
    const Sub& r = subs_[sub];
    Stream& s = streams_[r.stream];
    if (!chunk) {
      chunk = new Chunk();
      chunk->payload = p;
    }
    enqueue(r.stream, s, chunk, r.id);
    ++n;
    if (s.pending_bytes > options_.max_pending_bytes) slow_.push_back(r.stream);
  });
  detail::release(chunk);
  if (n) stats_.deliveries.fetch_add(n, std::memory_order_relaxed);
  // Closing unsubscribes, which edits the index, so it waits until the match is over.
  for (StreamId sid : slow_) {
    if (streams_[sid].live) close_slow(sid, streams_[sid]);
  }
  slow_.clear();
}

void Shard::run(InboxItem& item) {
  if (item.task) {
    (*item.task)();
    item.task.reset();
  } else {
    deliver(item.payload);
    item.payload.reset();
  }
}

bool Shard::drain(std::size_t max_batches) {
  for (std::size_t b = 0; b < max_batches; ++b) {
    std::size_t n = inbox_.try_dequeue_bulk(drain_buf_.begin(), drain_buf_.size());
    if (n == 0) return false;
    stats_.payloads.fetch_add(n, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      InboxItem& item = drain_buf_[i];
      if (item.seq != next_seq_) {  // a post that came earlier is still being enqueued
        early_.push(std::move(item));
        continue;
      }
      run(item);
      ++next_seq_;
      while (!early_.empty() && early_.top().seq == next_seq_) {
        // priority_queue::top() is const; the item is popped right after, so moving is safe.
        InboxItem next = std::move(const_cast<InboxItem&>(early_.top()));
        early_.pop();
        run(next);
        ++next_seq_;
      }
    }
  }
  return inbox_.size_approx() > 0;
}

void Shard::flush(std::uint64_t now_ms) {
  // Streams marked dirty while this runs (a synchronous write_done) wait for the next flush.
  flushing_.swap(dirty_);
  for (StreamId sid : flushing_) {
    Stream& s = streams_[sid];
    s.dirty = false;
    if (!s.live || s.writing || s.pending.empty()) continue;
    OutBatch batch;
    batch.pool_ = this;
    if (!free_bufs_.empty()) {
      batch.bufs = std::move(free_bufs_.back());
      free_bufs_.pop_back();
    }
    if (!free_refs_.empty()) {
      batch.refs_ = std::move(free_refs_.back());
      free_refs_.pop_back();
    }
    batch.bufs.reserve(2 + 3 * s.pending.size());  // + the transport's framing slot and trailer
    batch.refs_.reserve(2 * s.pending.size());
    batch.bufs.push_back(iovec{nullptr, 0});
    for (const Pending& p : s.pending) {
      auto add = [&](std::string_view v) { batch.bufs.push_back(iovec{const_cast<char*>(v.data()), v.size()}); batch.bytes += v.size(); };
      if (p.chunk->payload && p.id->bytes.empty()) {
        add(p.chunk->payload->plain(s.framing));
        batch.refs_.push_back(p.id);
      } else if (p.chunk->payload) {
        add(p.chunk->payload->head(s.framing));
        add(p.id->bytes);
        add(p.chunk->payload->tail(s.framing));
        batch.refs_.push_back(p.id);
      } else {
        add(p.chunk->bytes);
      }
      batch.refs_.push_back(p.chunk);  // the pending reference moves into the batch
    }
    s.pending.clear();
    s.pending_bytes = 0;
    if (batch.bytes == 0) continue;
    s.writing = true;
    s.last_write_ms = now_ms;
    stats_.writes.fetch_add(1, std::memory_order_relaxed);
    s.sink->write_batch(std::move(batch));
  }
  flushing_.clear();
}

void Shard::write_done(StreamId id) {
  Stream& s = streams_[id];
  s.writing = false;
  if (s.live && !s.pending.empty()) mark_dirty(id, s);
}

}  // namespace mcpfan

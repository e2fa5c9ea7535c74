#include "mcpfan/shard.h"

#include "coalesce_table.h"

#include <concurrentqueue/concurrentqueue.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <queue>

namespace mcpfan {

namespace detail {
/**
 * Loop-local refcounted output: a shared payload reference, or bytes owned here, or both:
 * a journaled stream's payload with its prefix (`bytes`, written before the frame).
 */
struct Chunk {
  PayloadRef payload;
  std::string bytes;
  std::uint32_t refs = 1;
};
void release(Chunk* c) noexcept {
  if (c && --c->refs == 0) delete c;
}

/** One shard's cross-thread channel; held in place in Shard::inbox_storage_. */
struct ShardInbox {
  struct Item {
    std::uint64_t seq = 0;
    PayloadRef payload;
    std::unique_ptr<std::function<void()>> task;  // set instead of payload for post_task()
    std::shared_ptr<void> hold;  // released once matched: a received message's receive-budget bytes
  };
  struct LaterSeq {
    bool operator()(const Item& a, const Item& b) const noexcept { return a.seq > b.seq; }
  };
  moodycamel::ConcurrentQueue<Item> queue;
  std::priority_queue<Item, std::vector<Item>, LaterSeq> early;  // arrived ahead of a gap
  std::vector<Item> drain_buf;
};
}  // namespace detail

// The header sizes the inbox's storage without seeing its type: a change to either fails here.
static_assert(sizeof(detail::ShardInbox) <= detail::kShardInboxBytes, "kShardInboxBytes is too small for ShardInbox");
static_assert(alignof(detail::ShardInbox) <= alignof(std::max_align_t), "ShardInbox needs a stricter alignment");
using InboxItem = detail::ShardInbox::Item;

detail::ShardInbox& Shard::inbox() noexcept {
  return *std::launder(reinterpret_cast<detail::ShardInbox*>(inbox_storage_));
}

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
  if (id->bytes.empty()) return c->bytes.size() + c->payload->plain(f).size();  // bytes: a journal's prefix
  return c->payload->frame_size(f) + id->bytes.size();
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

Shard::Stream::Stream(StreamSink* sink, Framing framing, StreamJournal* journal)
    : sink(sink), journal(journal), framing(framing) {}
Shard::Stream::Stream(Stream&&) noexcept = default;
Shard::Stream& Shard::Stream::operator=(Stream&&) noexcept = default;
Shard::Stream::~Stream() = default;

Shard::Shard(ShardOptions options) : options_(options), keepalive_chunk_(own_bytes(": keepalive\n\n")) {
  new (inbox_storage_) detail::ShardInbox();
  inbox().drain_buf.resize(options_.drain_batch);
}

Shard::~Shard() {
  std::vector<StreamId> open;
  streams_.for_each([&](StreamId id, Stream&) { open.push_back(id); });
  for (StreamId id : open) close_stream(id);
  detail::release(keepalive_chunk_);
  InboxItem item;
  while (inbox().queue.try_dequeue(item)) item.payload.reset();
  inbox().~ShardInbox();
}

bool Shard::reserve(std::size_t n) noexcept {
  std::size_t used = inbox_used_.load(std::memory_order_relaxed);
  do {
    if (n > options_.max_inbox - std::min(used, options_.max_inbox)) {
      stats_.inbox_full.fetch_add(n, std::memory_order_relaxed);
      return false;
    }
  } while (!inbox_used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

void Shard::unreserve(std::size_t n) noexcept { inbox_used_.fetch_sub(n, std::memory_order_relaxed); }

void Shard::post_reserved(PayloadRef payload, std::shared_ptr<void> hold) {
  post_reserved_quiet(std::move(payload), std::move(hold));
  wake();
}

void Shard::post_reserved_quiet(PayloadRef payload, std::shared_ptr<void> hold) {
  std::uint64_t seq = post_seq_.fetch_add(1, std::memory_order_relaxed);
  enqueued_or_die(inbox().queue.enqueue(InboxItem{seq, std::move(payload), nullptr, std::move(hold)}));
}

void Shard::post_bulk_reserved(PayloadRef* payloads, std::size_t n) {
  if (n == 0) return;
  std::uint64_t seq = post_seq_.fetch_add(n, std::memory_order_relaxed);
  std::vector<InboxItem> items(n);
  for (std::size_t i = 0; i < n; ++i) items[i] = InboxItem{seq + i, std::move(payloads[i]), nullptr, {}};
  enqueued_or_die(inbox().queue.enqueue_bulk(std::make_move_iterator(items.begin()), n));
  if (wake_) wake_(wake_arg_);
}

bool Shard::post(PayloadRef payload) {
  if (!reserve(1)) return false;
  post_reserved(std::move(payload));
  return true;
}

bool Shard::post_bulk(PayloadRef* payloads, std::size_t n) {
  if (n == 0) return true;
  if (!reserve(n)) return false;
  post_bulk_reserved(payloads, n);
  return true;
}

void Shard::post_task(std::function<void()> task) {
  std::uint64_t seq = post_seq_.fetch_add(1, std::memory_order_relaxed);
  enqueued_or_die(
      inbox().queue.enqueue(InboxItem{seq, {}, std::make_unique<std::function<void()>>(std::move(task)), {}}));
  if (wake_) wake_(wake_arg_);
}

StreamId Shard::open_stream(StreamSink* sink, Framing framing, StreamJournal* journal) {
  StreamId id = streams_.emplace(sink, framing, journal);
  stats_.streams.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void Shard::close_stream(StreamId id) {
  Stream* s = streams_.get(id);
  if (!s) return;
  while (!s->subs.empty()) unsubscribe(s->subs.back());
  for (const Pending& p : s->pending) detail::release(p.chunk), detail::release(p.id);
  // A stale entry may remain in dirty_ or slow_; the handle's generation makes it a no-op.
  streams_.erase(id);
  stats_.streams.fetch_sub(1, std::memory_order_relaxed);
}

void Shard::end_stream(StreamId id, CloseReason reason) {
  Stream* s = streams_.get(id);
  if (!s) return;
  StreamSink* sink = s->sink;
  close_stream(id);
  sink->close_requested(reason);
}

SubId Shard::subscribe(StreamId stream, const Filter& filter, std::string id_token) {
  Stream* s = streams_.get(stream);
  if (!s) return SubId{};
  SubId sub = index_.create();
  if (subs_.size() <= sub.index) subs_.resize(sub.index + 1);
  subs_[sub.index] = Sub{stream, own_bytes(std::move(id_token))};
  for (const KindInfo& k : kKinds) {
    if (const std::vector<std::string>* keys = filter.keys(k.kind)) {
      for (const std::string& key : *keys) index_.add(sub, filter.tenant, k.kind, key);
    } else if (filter.kinds & kind_bit(k.kind)) {
      index_.add(sub, filter.tenant, k.kind, {});
    }
  }
  s->subs.push_back(sub);
  stats_.subscriptions.fetch_add(1, std::memory_order_relaxed);
  return sub;
}

void Shard::unsubscribe(SubId sub) {
  if (!index_.contains(sub)) return;
  Sub& r = subs_[sub.index];
  auto& list = streams_.get(r.stream)->subs;  // a live subscription's stream is live
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] == sub) {
      list[i] = list.back();
      list.pop_back();
      break;
    }
  }
  index_.remove(sub);
  if (!replayed_.empty()) replayed_.erase(sub.index);
  detail::release(r.id);  // queued notifications keep their own reference to the token
  r = Sub{};
  stats_.subscriptions.fetch_sub(1, std::memory_order_relaxed);
}

void Shard::add_uri(SubId sub, TenantId tenant, std::string_view uri) {
  index_.add(sub, tenant, Kind::ResourceUpdated, uri);
}

void Shard::remove_uri(SubId sub, TenantId tenant, std::string_view uri) {
  index_.remove_key(sub, tenant, Kind::ResourceUpdated, uri);
}

void Shard::mark_dirty(StreamId sid, Stream& s) {
  if (s.dirty) return;
  s.dirty = true;
  if (dirty_.empty() && on_dirty_) on_dirty_(on_dirty_arg_);
  dirty_.push_back(sid);
}

void Shard::enqueue(StreamId sid, Stream& s, Chunk* chunk, Chunk* id) {
  if (s.writing && chunk->payload) {
    coalesce(s, chunk, id);
  } else {
    s.pending.push_back(Pending{chunk, id});
  }
  ++chunk->refs;
  if (id) ++id->refs;
  s.pending_bytes += chunk_size(chunk, id, s.framing);
  mark_dirty(sid, s);
}

// The stream is behind: an unwritten notification for the same (subscription, method, uri)
// says nothing the newer one does not, so it goes, and the newer one is appended to keep
// publish order. The queue then holds one entry per distinct key, so a stuck stream's
// memory is bounded by what it subscribes to, not by how much is published. The map finds
// the older entry in O(1); it leaves a tombstone, and tombstones are compacted away once
// they outnumber live entries, so each enqueue costs O(1) amortised.
void Shard::coalesce(Stream& s, Chunk* chunk, Chunk* id) {
  if (!s.coalesce) s.coalesce = std::make_unique<detail::CoalesceTable>();
  // Room first: once the table has a slot for this entry, nothing may throw before set().
  if (s.pending.size() == s.pending.capacity()) s.pending.reserve(std::max<std::size_t>(8, 2 * s.pending.size()));
  const Payload& p = *chunk->payload;
  const std::uint64_t h =
      std::hash<std::string_view>{}(p.uri()) ^
      (reinterpret_cast<std::uintptr_t>(id) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(p.kind()));
  bool found = false;
  std::size_t slot = s.coalesce->find_or_add(
      h,
      [&](std::uint32_t pos) {
        const Pending& q = s.pending[pos];  // a slot always names a live entry
        return q.id == id && q.chunk->payload->kind() == p.kind() && q.chunk->payload->uri() == p.uri();
      },
      found);
  if (found) {
    Pending& old = s.pending[s.coalesce->position(slot)];
    s.pending_bytes -= chunk_size(old.chunk, old.id, s.framing);
    detail::release(old.chunk);
    detail::release(old.id);
    old = Pending{nullptr, nullptr};
    ++s.tombstones;
    stats_.coalesced.fetch_add(1, std::memory_order_relaxed);
    if (s.tombstones > 16 && s.tombstones * 2 > s.pending.size()) compact(s);
  }
  s.pending.push_back(Pending{chunk, id});
  s.coalesce->set(slot, static_cast<std::uint32_t>(s.pending.size() - 1));
}

// Drops tombstones and repoints the table at the entries' new places.
void Shard::compact(Stream& s) {
  moved_.resize(s.pending.size());
  std::uint32_t out = 0;
  for (std::size_t i = 0; i < s.pending.size(); ++i) {
    if (!s.pending[i].chunk) continue;
    moved_[i] = out;
    s.pending[out++] = s.pending[i];
  }
  s.pending.resize(out);
  s.tombstones = 0;
  s.coalesce->remap(moved_);
}

SendStatus Shard::send(StreamId stream, std::string bytes) {
  Stream* s = streams_.get(stream);
  if (!s) return SendStatus::Closed;
  Chunk* c = own_bytes(std::move(bytes));
  enqueue(stream, *s, c, nullptr);
  detail::release(c);
  if (s->pending_bytes <= options_.max_pending_bytes) return SendStatus::Ok;
  // The caller is the stream's own transport: it learns from the status, not from its sink.
  stats_.slow_closes.fetch_add(1, std::memory_order_relaxed);
  close_stream(stream);
  return SendStatus::Closed;
}

void Shard::keepalive(std::uint64_t now_ms, std::uint64_t interval_ms) {
  streams_.for_each([&](StreamId id, Stream& s) {
    if (s.framing != Framing::Sse || s.writing || !s.pending.empty()) return;
    if (s.last_write_ms == 0) s.last_write_ms = now_ms;  // opened since the last sweep
    if (now_ms - s.last_write_ms >= interval_ms) enqueue(id, s, keepalive_chunk_, nullptr);
  });
}

void Shard::close_slow(StreamId sid) {
  Stream* s = streams_.get(sid);
  if (!s) return;
  stats_.slow_closes.fetch_add(1, std::memory_order_relaxed);
  StreamSink* sink = s->sink;
  close_stream(sid);
  sink->close_requested(CloseReason::SlowConsumer);
}

bool Shard::deliver_to(const Sub& r, const PayloadRef& p, Chunk*& shared) {
  Stream& s = streams_.at(r.stream.index);  // a live subscription's stream is live
  if (s.journal) [[unlikely]] {
    // A journaled stream's frame has its own prefix (its event id): a chunk of its own.
    std::optional<std::string> prefix = s.journal->record(p);
    if (!prefix) return false;
    Chunk* own = new Chunk();
    own->payload = p;
    own->bytes = std::move(*prefix);
    enqueue(r.stream, s, own, r.id);
    detail::release(own);
  } else {
    if (!shared) {
      shared = new Chunk();
      shared->payload = p;
    }
    enqueue(r.stream, s, shared, r.id);
  }
  if (s.pending_bytes > options_.max_pending_bytes) slow_.push_back(r.stream);
  return true;
}

bool Shard::was_replayed(SubId sub, const Payload* p) {
  auto it = replayed_.find(sub.index);
  if (it == replayed_.end()) return false;
  std::vector<PayloadRef>& list = it->second;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i]->uri() != p->uri()) continue;
    // The same state: it went out already. A newer one: it goes out, and the old mark goes.
    const bool same = list[i].get() == p;
    list[i] = std::move(list.back());
    list.pop_back();
    if (list.empty()) replayed_.erase(it);
    return same;
  }
  return false;
}

void Shard::deliver(const PayloadRef& p) {
  Chunk* chunk = nullptr;  // created on the first match: the loop's one atomic reference
  std::uint64_t n = 0;
  const bool check_replays = !replayed_.empty() && p->kind() == Kind::TaskStatus;
  index_.match(p->tenant(), p->kind(), p->uri(), [&](SubId sub) {
    if (check_replays && was_replayed(sub, p.get())) [[unlikely]] {
      stats_.replays_skipped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (deliver_to(subs_[sub.index], p, chunk)) ++n;
  });
  detail::release(chunk);
  if (n) stats_.deliveries.fetch_add(n, std::memory_order_relaxed);
  // Closing unsubscribes, which edits the index, so it waits until the match is over.
  for (StreamId sid : slow_) close_slow(sid);
  slow_.clear();
}

void Shard::replay(SubId sub, const PayloadRef& payload) {
  if (!index_.contains(sub) || !payload) return;
  std::vector<PayloadRef>& list = replayed_[sub.index];
  bool marked = false;
  for (PayloadRef& have : list) {
    if (have->uri() == payload->uri()) {
      have = payload;
      marked = true;
    }
  }
  if (!marked) list.push_back(payload);
  Chunk* chunk = nullptr;
  const bool queued = deliver_to(subs_[sub.index], payload, chunk);
  detail::release(chunk);
  if (queued) {
    stats_.deliveries.fetch_add(1, std::memory_order_relaxed);
    stats_.replays.fetch_add(1, std::memory_order_relaxed);
  }
  for (StreamId sid : slow_) close_slow(sid);
  slow_.clear();
}

// A posted task is transport code, and a delivery allocates: an exception from either must
// not escape into the loop's callback (std::terminate), nor skip its sequence number (the
// shard would wait for it forever). It is counted, and the shard goes on.
template <class Item>
void Shard::run(Item& item) noexcept {
  try {
    if (item.task) {
      (*item.task)();
    } else {
      deliver(item.payload);
    }
  } catch (...) {
    stats_.exceptions.fetch_add(1, std::memory_order_relaxed);
    slow_.clear();
  }
  item.task.reset();
  item.payload.reset();
  item.hold.reset();  // the last shard to match a received message gives its budget back
}

bool Shard::drain(std::size_t max_batches) {
  for (std::size_t b = 0; b < max_batches; ++b) {
    detail::ShardInbox& in = inbox();
    std::size_t n = in.queue.try_dequeue_bulk(in.drain_buf.begin(), in.drain_buf.size());
    if (n == 0) return false;
    stats_.payloads.fetch_add(n, std::memory_order_relaxed);
    // Room in the inbox is given back as payloads leave the queue (those parked in `early`
    // wait only for a post that is being enqueued, so at most one per posting thread).
    std::size_t taken = 0;
    for (std::size_t i = 0; i < n; ++i) taken += in.drain_buf[i].payload ? 1u : 0u;
    if (taken) inbox_used_.fetch_sub(taken, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      InboxItem& item = in.drain_buf[i];
      if (item.seq != next_seq_) {  // a post that came earlier is still being enqueued
        in.early.push(std::move(item));
        continue;
      }
      run(item);
      ++next_seq_;
      while (!in.early.empty() && in.early.top().seq == next_seq_) {
        // priority_queue::top() is const; the item is popped right after, so moving is safe.
        InboxItem next = std::move(const_cast<InboxItem&>(in.early.top()));
        in.early.pop();
        run(next);
        ++next_seq_;
      }
    }
  }
  return inbox().queue.size_approx() > 0;
}

void Shard::flush(std::uint64_t now_ms) {
  // Streams marked dirty while this runs (a synchronous write_done) wait for the next flush.
  flushing_.swap(dirty_);
  for (StreamId sid : flushing_) {
    Stream* sp = streams_.get(sid);
    if (!sp) continue;  // closed since it was marked
    Stream& s = *sp;
    s.dirty = false;
    if (s.writing || s.pending.empty()) continue;
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
    std::size_t live = s.pending.size() - s.tombstones;
    batch.bufs.reserve(2 + 3 * live);  // + the transport's framing slot and trailer
    batch.refs_.reserve(2 * live);
    batch.bufs.push_back(iovec{nullptr, 0});
    for (const Pending& p : s.pending) {
      if (!p.chunk) continue;  // coalesced away
      auto add = [&](std::string_view v) {
        batch.bufs.push_back(iovec{const_cast<char*>(v.data()), v.size()});
        batch.bytes += v.size();
      };
      if (p.chunk->payload && p.id->bytes.empty()) {
        if (!p.chunk->bytes.empty()) add(p.chunk->bytes);  // a journal's prefix (event id)
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
    s.tombstones = 0;
    if (s.coalesce) s.coalesce->clear();
    s.pending_bytes = 0;
    if (batch.bytes == 0) continue;
    s.writing = true;
    s.last_write_ms = now_ms;
    stats_.writes.fetch_add(1, std::memory_order_relaxed);
    StreamSink* sink = s.sink;  // the call may close this stream or open others: s is not used after
    try {
      sink->write_batch(std::move(batch));
    } catch (...) {
      // The transport failed mid-write (an allocation): this stream's state is unknown, so
      // it ends here; the loop and every other stream go on.
      stats_.exceptions.fetch_add(1, std::memory_order_relaxed);
      if (streams_.contains(sid)) {
        close_stream(sid);
        try {
          sink->close_requested(CloseReason::Failed);
        } catch (...) {
          stats_.exceptions.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
  }
  flushing_.clear();
}

void Shard::write_done(StreamId id) {
  Stream* s = streams_.get(id);
  if (!s) return;
  s->writing = false;
  if (!s->pending.empty()) mark_dirty(id, *s);
}

}  // namespace mcpfan

#include "mcpfan/hub.h"

#include "mcpfan/json_text.h"
#include "mcpfan/payload.h"

#include <thread>

namespace mcpfan {

// One shard's index keys into the node's routing table, then to the next listener.
class Hub::Reporter final : public KeyListener {
 public:
  Reporter(LocalInterest& interest, std::size_t shard, KeyListener* next)
      : interest_(interest), shard_(shard), next_(next) {}
  void key_added(TenantId tenant, Kind kind, std::string_view uri) override {
    interest_.add(shard_, tenant, kind, uri);
    if (next_) next_->key_added(tenant, kind, uri);
  }
  void key_removed(TenantId tenant, Kind kind, std::string_view uri) override {
    interest_.remove(shard_, tenant, kind, uri);
    if (next_) next_->key_removed(tenant, kind, uri);
  }
  void detach() noexcept { next_ = nullptr; }

 private:
  LocalInterest& interest_;
  std::size_t shard_;
  KeyListener* next_;
};

void Hub::route_by_interest(KeyListener* next) {
  interest_ = std::make_unique<LocalInterest>(shards_.size());
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    reporters_.push_back(std::make_unique<Reporter>(*interest_, i, next));
    shards_[i]->set_key_listener(reporters_.back().get());
  }
}

void Hub::detach_key_listener() noexcept {
  for (auto& r : reporters_) r->detach();
}

void Hub::targets(const PayloadRef& payload, ShardSet& where) {
  if (interest_) {
    interest_->shards_for(payload->tenant(), payload->kind(), payload->uri(), where);
  } else {
    for (std::size_t i = 0; i < shards_.size(); ++i) where.set(i);
  }
}

Hub::Fanout Hub::post_one(const PayloadRef& payload, bool refuse, const std::shared_ptr<void>& hold, ShardSet* woken) {
  ShardSet where(shards_.size());
  targets(payload, where);
  if (where.empty()) return Fanout::Unmatched;
  // Room first, in every inbox it goes to: refused whole, or (past the point of refusing)
  // missed only by the full ones, each counting it.
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (!where.test(i) || shards_[i]->reserve(1)) continue;
    if (!refuse) {
      where.reset(i);
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (where.test(j)) shards_[j]->unreserve(1);
    }
    return Fanout::Full;
  }
  bool any = false;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (!where.test(i)) continue;
    if (woken) {
      shards_[i]->post_reserved_quiet(payload, hold);
      woken->set(i);
    } else {
      shards_[i]->post_reserved(payload, hold);
    }
    any = true;
  }
  return any ? Fanout::Posted : Fanout::Full;
}

Hub::Hub(std::size_t shards, ShardOptions options, std::size_t max_tenants) : tenants_(max_tenants) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(options));
}

Hub::~Hub() {
  close();
  // The shards outlive the routing table (members go in reverse order), and a shard destroyed
  // with streams still open removes their keys: nobody may hear that any more.
  for (auto& s : shards_) s->set_key_listener(nullptr);
}

void Hub::set_debounce(std::chrono::milliseconds interval) {
  if (interval.count() <= 0) {
    debouncer_.reset();
    return;
  }
  // Its fan-outs were decided when the publish was accepted: a full inbox drops (counted).
  debouncer_ =
      std::make_unique<Debouncer>(interval, [this](std::vector<Notification>& n) { (void)send_out(n, false); });
}

namespace {
// Publishers and close() meet Dekker-style: a publisher announces itself, then checks
// closed_; close() sets closed_, then waits for the announced ones to leave. With both
// sides sequentially consistent, either the publisher sees closed_ or close() sees it.
class PublishGate {
 public:
  PublishGate(std::atomic<std::uint32_t>& publishing, const std::atomic<bool>& closed) : publishing_(publishing) {
    publishing_.fetch_add(1, std::memory_order_seq_cst);
    open_ = !closed.load(std::memory_order_seq_cst);
  }
  ~PublishGate() { publishing_.fetch_sub(1, std::memory_order_release); }
  PublishGate(const PublishGate&) = delete;
  PublishGate& operator=(const PublishGate&) = delete;
  [[nodiscard]] bool open() const noexcept { return open_; }

 private:
  std::atomic<std::uint32_t>& publishing_;
  bool open_;
};
}  // namespace

bool Hub::publish(const PayloadRef& payload) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (debouncer_) {
    published_.fetch_add(1, std::memory_order_relaxed);
    debouncer_->publish(std::vector<PayloadRef>{payload});
    return true;
  }
  if (post_one(payload, true) == Fanout::Full) {
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  published_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Hub::publish(const std::vector<PayloadRef>& payloads) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (payloads.empty()) return true;
  if (debouncer_) {
    debouncer_->publish(payloads);
  } else if (fan_out(payloads, true) == Fanout::Full) {
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  published_.fetch_add(payloads.size(), std::memory_order_relaxed);
  return true;
}

bool Hub::publish(std::vector<Notification> notes, const std::vector<TaskState>& tasks) {
  for (const TaskState& t : tasks) task_states_.put(t);
  if (publish(std::move(notes))) return true;
  for (const TaskState& t : tasks) task_states_.forget(t.tenant, t.payload.get());
  return false;
}

bool Hub::publish(std::vector<Notification> notes) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (notes.empty()) return true;
  std::uint64_t local = 0;  // as publish(payloads) counts: what has an audience here
  std::uint64_t nowhere = 0;  // no audience here, and no other node gets it
  for (const Notification& n : notes) {
    local += n.local ? 1u : 0u;
    nowhere += !n.local && !n.forwarded() ? 1u : 0u;
  }
  if (debouncer_) {
    debouncer_->publish(std::move(notes));
  } else if (!send_out(notes, true)) {
    refused_full_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  published_.fetch_add(local, std::memory_order_relaxed);
  if (nowhere) no_audience_.fetch_add(nowhere, std::memory_order_relaxed);
  return true;
}

Hub::Delivery Hub::deliver_forwarded(PayloadRef payload, std::shared_ptr<void> hold) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return Delivery::Closed;
  // A message from another node cannot be refused to anyone: it is posted whole or not at all.
  switch (post_one(payload, true, hold)) {
    case Fanout::Posted:
      published_.fetch_add(1, std::memory_order_relaxed);
      return Delivery::Posted;
    case Fanout::Unmatched: return Delivery::Unmatched;
    case Fanout::Full: break;
  }
  return Delivery::InboxFull;
}

void Hub::deliver_forwarded(std::vector<Forwarded>& batch) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) {
    for (Forwarded& f : batch) f.result = Delivery::Closed;
    return;
  }
  ShardSet woken(shards_.size());
  std::uint64_t posted = 0;
  for (Forwarded& f : batch) {
    switch (post_one(f.payload, true, f.hold, &woken)) {
      case Fanout::Posted:
        ++posted;
        f.result = Delivery::Posted;
        break;
      case Fanout::Unmatched:
        f.result = Delivery::Unmatched;
        break;
      case Fanout::Full:
        f.result = Delivery::InboxFull;
        break;
    }
    // The shards hold their own references now (a hold not posted is released here).
    f.payload = {};
    f.hold.reset();
  }
  if (posted) published_.fetch_add(posted, std::memory_order_relaxed);
  // Every shard posted to, once: after its last post, so it sees the whole batch.
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (woken.test(i)) shards_[i]->wake();
  }
}

Hub::RereadWave Hub::send_reread_hints() {
  RereadWave wave;
  if (!interest_) return wave;
  for (const LocalInterest::Key& k : interest_->snapshot()) {
    if (k.kind == Kind::TaskStatus) continue;
    NotificationParts parts;
    parts.tenant = k.tenant;
    parts.kind = k.kind;
    parts.uri = k.uri;
    std::string uri_json;
    if (!k.uri.empty()) {
      append_json_string(uri_json, k.uri);
      parts.params.emplace_back("uri", uri_json);
    }
    parts.meta.emplace_back("mcpfan/reread", "true");
    parts.has_meta = true;
    switch (deliver_forwarded(encode_notification(parts))) {
      case Delivery::Posted: ++wave.posted; break;
      case Delivery::InboxFull: ++wave.refused; break;
      case Delivery::Unmatched:  // the listener left meanwhile
      case Delivery::Closed: break;
    }
  }
  reread_hints_.fetch_add(wave.posted, std::memory_order_relaxed);
  return wave;
}

bool Hub::send_out(std::vector<Notification>& notes, bool refuse) {
  bool forward = false;
  for (const Notification& n : notes) forward = forward || n.forwarded();
  // Refused: nothing went anywhere, and the notes (with their outage reservations) are dropped.
  // The payloads are moved out: the forwarder needs only the copies for other nodes.
  if (notes.size() == 1) {
    // The common publish, one notification: posted as fan_out() posts one, with no vector.
    PayloadRef local = std::move(notes.front().local);
    if (local && post_one(local, refuse) == Fanout::Full && refuse) return false;
  } else {
    std::vector<PayloadRef> local;
    local.reserve(notes.size());
    for (Notification& n : notes) {
      if (n.local) local.push_back(std::move(n.local));
    }
    if (!local.empty() && fan_out(local, refuse) == Fanout::Full && refuse) return false;
  }
  if (forward && forwarder_) forwarder_(notes);
  return true;
}

void Hub::close() {
  closed_.store(true, std::memory_order_seq_cst);
  // Publishes are short (a queue push per shard): wait them out.
  while (publishing_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  if (debouncer_) debouncer_->close();
}

Hub::Fanout Hub::fan_out(const std::vector<PayloadRef>& payloads, bool refuse, std::size_t* nowhere) {
  if (payloads.size() == 1) {
    // The common publish (one notification, usually for one stream): a queue push per shard
    // that may match, and no vector allocated (a cost independent of load: docs/performance.md "Targeted publishes").
    Fanout r = post_one(payloads.front(), refuse);
    if (nowhere) *nowhere = r == Fanout::Unmatched ? 1 : 0;
    return r == Fanout::Unmatched ? Fanout::Posted : r;
  }
  // Each shard gets, in order, the payloads it may match, with one wake-up.
  std::vector<ShardSet> where(payloads.size(), ShardSet(shards_.size()));
  std::size_t none = 0;
  for (std::size_t p = 0; p < payloads.size(); ++p) {
    targets(payloads[p], where[p]);
    none += where[p].empty() ? 1u : 0u;
  }
  if (nowhere) *nowhere = none;
  std::vector<std::size_t> count(shards_.size(), 0);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    for (std::size_t p = 0; p < payloads.size(); ++p) count[i] += where[p].test(i) ? 1u : 0u;
  }
  // Room first (as post_one): all of it, or with !refuse a full shard misses its share.
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (count[i] == 0 || shards_[i]->reserve(count[i])) continue;
    if (!refuse) {
      count[i] = 0;
      continue;
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (count[j]) shards_[j]->unreserve(count[j]);
    }
    return Fanout::Full;
  }
  std::vector<PayloadRef> copy;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (count[i] == 0) continue;
    copy.clear();
    for (std::size_t p = 0; p < payloads.size(); ++p) {
      if (where[p].test(i)) copy.push_back(payloads[p]);
    }
    shards_[i]->post_bulk_reserved(copy.data(), copy.size());
  }
  return Fanout::Posted;
}

}  // namespace mcpfan

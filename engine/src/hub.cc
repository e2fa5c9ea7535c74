#include "mcpfan/hub.h"

#include <thread>

namespace mcpfan {

// One shard's index keys into the node's routing table, then to the next listener.
class Hub::Reporter final : public KeyListener {
 public:
  Reporter(LocalInterest& interest, std::size_t shard, KeyListener* next) : interest_(interest), shard_(shard), next_(next) {}
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

bool Hub::post_one(const PayloadRef& payload) {
  if (!interest_) {
    for (auto& s : shards_) s->post(payload);
    return true;
  }
  ShardSet where(shards_.size());
  interest_->shards_for(payload->tenant(), payload->kind(), payload->uri(), where);
  if (where.empty()) return false;
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    if (where.test(i)) shards_[i]->post(payload);
  }
  return true;
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
  debouncer_ = std::make_unique<Debouncer>(interval, [this](std::vector<Notification>& n) { send_out(n); });
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
  post_one(payload);
  published_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool Hub::publish(const std::vector<PayloadRef>& payloads) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (payloads.empty()) return true;
  published_.fetch_add(payloads.size(), std::memory_order_relaxed);
  if (debouncer_) debouncer_->publish(payloads);
  else fan_out(payloads);
  return true;
}

bool Hub::publish(std::vector<Notification> notes) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (notes.empty()) return true;
  std::uint64_t local = 0;  // as publish(payloads) counts: what has an audience here
  for (const Notification& n : notes) local += n.local ? 1u : 0u;
  published_.fetch_add(local, std::memory_order_relaxed);
  if (debouncer_) debouncer_->publish(std::move(notes));
  else send_out(notes);
  return true;
}

bool Hub::deliver_forwarded(const std::vector<PayloadRef>& payloads, std::size_t* matched_nowhere) {
  PublishGate gate(publishing_, closed_);
  if (!gate.open()) return false;
  if (payloads.empty()) return true;
  published_.fetch_add(payloads.size(), std::memory_order_relaxed);
  std::size_t nowhere = fan_out(payloads);
  if (matched_nowhere) *matched_nowhere = nowhere;
  return true;
}

void Hub::send_out(std::vector<Notification>& notes) {
  std::vector<PayloadRef> local;
  local.reserve(notes.size());
  bool forward = false;
  for (Notification& n : notes) {
    if (n.local) local.push_back(std::move(n.local));  // moved: the forwarder needs only the copy for other nodes
    forward = forward || n.forwarded();
  }
  if (!local.empty()) fan_out(local);
  if (forward && forwarder_) forwarder_(notes);
}

void Hub::close() {
  closed_.store(true, std::memory_order_seq_cst);
  // Publishes are short (a queue push per shard): wait them out.
  while (publishing_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  if (debouncer_) debouncer_->close();
}

std::size_t Hub::fan_out(const std::vector<PayloadRef>& payloads) {
  if (payloads.size() == 1) {
    // The common publish (one notification, usually for one stream): a queue push per shard
    // that may match, and no vector allocated (issue 14: a cost independent of load).
    return post_one(payloads.front()) ? 0 : 1;
  }
  std::vector<PayloadRef> copy;
  if (!interest_) {
    for (auto& s : shards_) {
      copy.assign(payloads.begin(), payloads.end());
      s->post_bulk(copy.data(), copy.size());
    }
    return 0;
  }
  // Each shard gets, in order, the payloads it may match, with one wake-up.
  std::vector<ShardSet> where(payloads.size(), ShardSet(shards_.size()));
  std::size_t nowhere = 0;
  for (std::size_t p = 0; p < payloads.size(); ++p) {
    interest_->shards_for(payloads[p]->tenant(), payloads[p]->kind(), payloads[p]->uri(), where[p]);
    nowhere += where[p].empty() ? 1u : 0u;
  }
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    copy.clear();
    for (std::size_t p = 0; p < payloads.size(); ++p) {
      if (where[p].test(i)) copy.push_back(payloads[p]);
    }
    if (!copy.empty()) shards_[i]->post_bulk(copy.data(), copy.size());
  }
  return nowhere;
}

}  // namespace mcpfan

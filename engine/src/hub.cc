#include "mcpfan/hub.h"

#include <thread>

namespace mcpfan {

Hub::Hub(std::size_t shards, ShardOptions options, std::size_t max_tenants) : tenants_(max_tenants) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(options));
}

Hub::~Hub() { close(); }

void Hub::set_debounce(std::chrono::milliseconds interval) {
  if (interval.count() <= 0) {
    debouncer_.reset();
    return;
  }
  debouncer_ = std::make_unique<Debouncer>(interval, [this](const std::vector<PayloadRef>& p) { fan_out(p); });
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
  for (auto& s : shards_) s->post(payload);
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

void Hub::close() {
  closed_.store(true, std::memory_order_seq_cst);
  // Publishes are short (a queue push per shard): wait them out.
  while (publishing_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  if (debouncer_) debouncer_->close();
}

void Hub::fan_out(const std::vector<PayloadRef>& payloads) {
  std::vector<PayloadRef> copy;
  for (auto& s : shards_) {
    copy.assign(payloads.begin(), payloads.end());
    s->post_bulk(copy.data(), copy.size());
  }
}

}  // namespace mcpfan

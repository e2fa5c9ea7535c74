#include "mcpfan/hub.h"

namespace mcpfan {

Hub::Hub(std::size_t shards, ShardOptions options) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(options));
}

void Hub::set_debounce(std::chrono::milliseconds interval) {
  if (interval.count() <= 0) {
    debouncer_.reset();
    return;
  }
  debouncer_ = std::make_unique<Debouncer>(interval, [this](const std::vector<PayloadRef>& p) { fan_out(p); });
}

void Hub::publish(const PayloadRef& payload) {
  if (debouncer_) {
    publish(std::vector<PayloadRef>{payload});
    return;
  }
  for (auto& s : shards_) s->post(payload);
  published_.fetch_add(1, std::memory_order_relaxed);
}

void Hub::publish(const std::vector<PayloadRef>& payloads) {
  if (payloads.empty()) return;
  if (debouncer_) {
    published_.fetch_add(payloads.size(), std::memory_order_relaxed);
    debouncer_->publish(payloads);
    return;
  }
  fan_out(payloads);
  published_.fetch_add(payloads.size(), std::memory_order_relaxed);
}

void Hub::fan_out(const std::vector<PayloadRef>& payloads) {
  std::vector<PayloadRef> copy;
  for (auto& s : shards_) {
    copy.assign(payloads.begin(), payloads.end());
    s->post_bulk(copy.data(), copy.size());
  }
}

}  // namespace mcpfan

#include "mcpfan/hub.h"

namespace mcpfan {

Hub::Hub(std::size_t shards, ShardOptions options) {
  shards_.reserve(shards);
  for (std::size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(options));
}

void Hub::publish(const PayloadRef& payload) {
  for (auto& s : shards_) s->post(payload);
  published_.fetch_add(1, std::memory_order_relaxed);
}

void Hub::publish(const std::vector<PayloadRef>& payloads) {
  if (payloads.empty()) return;
  std::vector<PayloadRef> copy;
  for (auto& s : shards_) {
    copy.assign(payloads.begin(), payloads.end());
    s->post_bulk(copy.data(), copy.size());
  }
  published_.fetch_add(payloads.size(), std::memory_order_relaxed);
}

}  // namespace mcpfan

#include "mcp/publish_rate.h"

#include <algorithm>
#include <limits>

namespace mcpfan::detail {

void PublishRate::configure(double rate, double burst, std::size_t buckets) {
  rate_ = rate > 0 ? rate : 0;
  burst_ = burst > 0 ? burst : rate_;
  count_ = std::max<std::size_t>(buckets, 1);
  buckets_ = std::make_unique<Bucket[]>(count_);
  for (std::size_t i = 0; i < count_; ++i) buckets_[i].tokens = burst_;  // a full bucket at start
}

std::optional<double> PublishRate::take(std::size_t i, double n, std::uint64_t now_ns) const {
  if (!enabled()) return std::nullopt;
  if (n > burst_) return std::numeric_limits<double>::infinity();
  Bucket& b = buckets_[std::min(i, count_ - 1)];
  std::lock_guard lock(b.mu);
  if (b.last_ns != 0 && now_ns > b.last_ns) {
    b.tokens = std::min(burst_, b.tokens + rate_ * static_cast<double>(now_ns - b.last_ns) / 1e9);
  }
  b.last_ns = std::max(b.last_ns, now_ns);
  if (b.tokens >= n) {
    b.tokens -= n;
    return std::nullopt;
  }
  return (n - b.tokens) / rate_;
}

}  // namespace mcpfan::detail

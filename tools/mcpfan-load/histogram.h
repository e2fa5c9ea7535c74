// A log-linear latency histogram (HDR-style): values below 128 ns are exact, above that
// each power-of-two range is split into 64 equal buckets, so any recorded value is known
// to within 1/64 (1.6 %). Fixed size (3,776 counters), O(1) record, no allocation after
// construction. The exact maximum is kept separately.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace mcpload {

class Histogram {
 public:
  static constexpr int kSubBits = 7;  // 128 linear buckets below 2^7, 64 per octave above
  static constexpr int kHalf = 1 << (kSubBits - 1);
  static constexpr size_t kBuckets = size_t(64 - kSubBits) * kHalf + 2 * kHalf;  // index of 2^64-1 is 3,775

  Histogram() : counts_(kBuckets, 0) {}

  void Reset() {
    std::fill(counts_.begin(), counts_.end(), 0);
    total_ = 0;
    max_ = 0;
  }

  void Record(uint64_t v) {
    ++counts_[Index(v)];
    ++total_;
    max_ = std::max(max_, v);
  }

  uint64_t total() const { return total_; }
  uint64_t count_at(size_t i) const { return counts_[i]; }
  uint64_t max() const { return max_; }

  // The value at quantile q (0..1): the upper bound of the bucket holding the
  // ceil(q * total)-th smallest value, capped at the exact maximum. 0 when empty.
  uint64_t Quantile(double q) const {
    if (total_ == 0) return 0;
    uint64_t rank = uint64_t(q * double(total_));
    if (double(rank) < q * double(total_)) ++rank;
    rank = std::clamp<uint64_t>(rank, 1, total_);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return std::min(UpperBound(i), max_);
    }
    return max_;
  }

  static size_t Index(uint64_t v) {
    if (v < (uint64_t(1) << kSubBits)) return size_t(v);
    int shift = (63 - std::countl_zero(v)) - kSubBits + 1;
    return size_t(shift) * kHalf + size_t(v >> shift);
  }

  static uint64_t UpperBound(size_t i) {
    if (i < (size_t(1) << kSubBits)) return i;
    size_t shift = i / kHalf - 1;
    uint64_t m = i - shift * kHalf;  // in [kHalf, 2*kHalf)
    return ((m + 1) << shift) - 1;
  }

 private:
  std::vector<uint64_t> counts_;
  uint64_t total_ = 0;
  uint64_t max_ = 0;
};

}  // namespace mcpload

#include "tally.h"

#include <algorithm>
#include <cstdio>

namespace mcpload {

void DeliveryTally::BeginPhase(std::string name, bool per_seq, uint64_t min_seq) {
  phase_ = std::move(name);
  per_seq_ = per_seq;
  min_seq_floor_ = min_seq;
  stale_ = 0;
  for (auto& v : seen_) {
    v.clear();
    if (v.capacity() > 64) v.shrink_to_fit();  // a long phase's set is not kept for the next
  }
  received_ = dups_ = misdelivered_ = no_ts_ = untracked_ = dropped_ = 0;
  first_ns_ = last_ns_ = 0;
  min_seq_ = UINT64_MAX;
  max_seq_ = 0;
  hist_.Reset();
  seqs_.clear();
}

bool DeliveryTally::SeenBefore(uint32_t stream, uint64_t seq) {
  auto& v = seen_[stream];
  if (v.empty() || v.back() < seq) {
    v.push_back(seq);
    return false;
  }
  auto it = std::lower_bound(v.begin(), v.end(), seq);
  if (it != v.end() && *it == seq) return true;
  v.insert(it, seq);
  return false;
}

bool DeliveryTally::Received(uint32_t stream, uint64_t seq) const {
  if (stream >= seen_.size()) return false;
  const auto& v = seen_[stream];
  return std::binary_search(v.begin(), v.end(), seq);
}

void DeliveryTally::Record(uint32_t stream, uint64_t seq, uint64_t ts_ns, uint64_t now, bool uri_ok) {
  if (seq < min_seq_floor_) {
    ++stale_;
    return;
  }
  if (!uri_ok) {
    ++misdelivered_;
    return;
  }
  if (stream < seen_.size() && SeenBefore(stream, seq)) {
    ++dups_;
    return;
  }
  ++received_;
  if (!first_ns_) first_ns_ = now;
  last_ns_ = now;
  min_seq_ = std::min(min_seq_, seq);
  max_seq_ = std::max(max_seq_, seq);
  if (ts_ns) {
    hist_.Record(now > ts_ns ? now - ts_ns : 0);
  } else {
    ++no_ts_;
  }
  if (!per_seq_) return;
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) {
    if (seqs_.size() >= kMaxTrackedSeqs) {
      ++untracked_;
      return;
    }
    it = seqs_.emplace(seq, SeqStat{0, now, now, ts_ns}).first;
  }
  ++it->second.count;
  it->second.last_ns = now;
}

std::string DeliveryTally::ToJson() const {
  auto ms = [](uint64_t ns) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", double(ns) / 1e6);
    return std::string(b);
  };
  std::string j = "{\"phase\":\"" + phase_ + "\",\"received\":" + std::to_string(received_) +
                  ",\"duplicates\":" + std::to_string(dups_) + ",\"misdelivered\":" + std::to_string(misdelivered_) +
                  ",\"no_ts\":" + std::to_string(no_ts_) + ",\"stale\":" + std::to_string(stale_) +
                  ",\"untracked_seqs\":" + std::to_string(untracked_) +
                  ",\"dropped_streams\":" + std::to_string(dropped_) + ",\"first_ns\":" + std::to_string(first_ns_) +
                  ",\"last_ns\":" + std::to_string(last_ns_) +
                  ",\"min_seq\":" + (received_ ? std::to_string(min_seq_) : "null") +
                  ",\"max_seq\":" + (received_ ? std::to_string(max_seq_) : "null") +
                  ",\"latency_ms\":{\"p50\":" + ms(hist_.Quantile(0.5)) + ",\"p99\":" + ms(hist_.Quantile(0.99)) +
                  ",\"p999\":" + ms(hist_.Quantile(0.999)) + ",\"max\":" + ms(hist_.max()) + "},\"latency_buckets\":[";
  bool first = true;
  for (size_t i = 0; i < Histogram::kBuckets; ++i) {
    uint64_t c = hist_.count_at(i);
    if (!c) continue;
    j += (first ? "[" : ",[") + std::to_string(Histogram::UpperBound(i)) + "," + std::to_string(c) + "]";
    first = false;
  }
  j += "]";
  if (per_seq_) {
    std::vector<std::pair<uint64_t, SeqStat>> v(seqs_.begin(), seqs_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    j += ",\"seqs\":[";
    for (size_t i = 0; i < v.size(); ++i) {
      const SeqStat& s = v[i].second;
      j += (i ? ",[" : "[") + std::to_string(v[i].first) + "," + std::to_string(s.count) + "," +
           std::to_string(s.first_ns) + "," + std::to_string(s.last_ns) + "," + std::to_string(s.ts_ns) + "]";
    }
    j += "]";
  }
  j += "}";
  return j;
}

}  // namespace mcpload

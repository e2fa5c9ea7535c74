// DeliveryTally: receive-side accounting that does not depend on who published.
//
// The classic scenarios match each delivery against this process's own publishes (send
// times kept per sequence index). When another process publishes (--scenario receive), or
// publishes are addressed to single streams (--scenario targeted), a receiver can only use
// what a delivery carries: its "bench/seq", its "bench/ts_ns" (CLOCK_MONOTONIC, shared by
// every process on one box, so receive time - ts_ns is the publish -> delivery latency) and
// its URI. Per phase this keeps:
//   - received, duplicates (the same seq twice on one stream: a per-stream set, since with
//     several publish URLs there is no per-stream order to rely on), misdelivered (a URI the
//     stream did not subscribe to), deliveries without a ts;
//   - a latency histogram (merged across processes by adding buckets: to_json emits them);
//   - optionally, per seq: deliveries, first and last receive time, ts (bounded table).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "histogram.h"

namespace mcpload {

class DeliveryTally {
 public:
  static constexpr size_t kMaxTrackedSeqs = 1 << 18;  // per-seq table bound (then counted as untracked)

  explicit DeliveryTally(uint32_t streams) : seen_(streams) {}

  // Starts a phase: every count, the histogram, the per-seq table and the per-stream sets
  // are reset. per_seq: keep the per-seq table in this phase. min_seq: a delivery of an older
  // seq (a late one from an earlier phase) is counted as stale only.
  void BeginPhase(std::string name, bool per_seq, uint64_t min_seq = 0);
  // A delivery of `seq` to stream `stream` at `now`; uri_ok: its URI is one the stream
  // subscribed to.
  void Record(uint32_t stream, uint64_t seq, uint64_t ts_ns, uint64_t now, bool uri_ok);
  // Counted only (the stream is gone); reported with the phase.
  void StreamDropped() { ++dropped_; }

  uint64_t received() const { return received_; }
  // Whether `stream` received `seq` in this phase.
  bool Received(uint32_t stream, uint64_t seq) const;
  // Whether `stream` received anything (not a duplicate, not misdelivered) in this phase.
  bool ReceivedAny(uint32_t stream) const { return stream < seen_.size() && !seen_[stream].empty(); }
  uint64_t duplicates() const { return dups_; }
  uint64_t misdelivered() const { return misdelivered_; }
  uint64_t violations() const { return dups_ + misdelivered_; }
  const Histogram& latency() const { return hist_; }  // receive time - ts_ns, this phase
  // The phase as one JSON object: counts, latency quantiles (ms), the histogram's non-empty
  // buckets as [[upper_bound_ns, count], ...], and the per-seq table when kept:
  // "seqs": [[seq, deliveries, first_ns, last_ns, ts_ns], ...] sorted by seq.
  std::string ToJson() const;

 private:
  struct SeqStat {
    uint64_t count = 0, first_ns = 0, last_ns = 0, ts_ns = 0;
  };
  bool SeenBefore(uint32_t stream, uint64_t seq);

  std::string phase_;
  bool per_seq_ = false;
  // Per stream, the seqs received in this phase, sorted (appends are the common case).
  std::vector<std::vector<uint64_t>> seen_;
  uint64_t min_seq_floor_ = 0, stale_ = 0;
  uint64_t received_ = 0, dups_ = 0, misdelivered_ = 0, no_ts_ = 0, untracked_ = 0, dropped_ = 0;
  uint64_t first_ns_ = 0, last_ns_ = 0, min_seq_ = UINT64_MAX, max_seq_ = 0;
  Histogram hist_;
  std::unordered_map<uint64_t, SeqStat> seqs_;
};

}  // namespace mcpload

// Coalescing on a stalled stream (docs/performance.md, "Coalescing on a stalled stream"): the cost of one enqueue to a
// stream whose write is in flight, by how many distinct (subscription, method, uri) keys it already has pending.
//
// One stream subscribes to a '/'-prefix, its first batch is never completed (a client
// that stopped reading), and N distinct URIs are queued to it. Each iteration then
// publishes one of those URIs again (cycling through them): the shard finds the older
// entry, replaces it and appends the newer one. Each iteration includes one post() and
// one drain() of a pre-encoded payload, the same in every case. The old coalescing
// scanned the pending list and erased from the middle of a vector, so its cost grew with
// N (the issue measured 34/76/92 µs per delivery at 2k/8k/16k pending); the target is
// N = 25,000 within 3x of N = 1.
#include <memory>
#include <string>
#include <vector>

#include "bench_support.h"
#include "mcpfan/shard.h"

namespace {

using mcpfan::PayloadRef;
using mcpfan::Shard;
using mcpfan::StreamId;

// Never completes a batch: the stream stays behind for the whole benchmark.
class StalledSink final : public mcpfan::StreamSink {
 public:
  void write_batch(mcpfan::OutBatch&& batch) override { held_.emplace_back(std::move(batch)); }
  void close_requested(mcpfan::CloseReason) override { ++closes; }
  int closes = 0;

 private:
  std::vector<mcpfan::OutBatch> held_;
};

PayloadRef update(const std::string& uri) {
  std::string raw = "\"" + uri + "\"";
  mcpfan::NotificationParts parts;
  parts.kind = mcpfan::Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params = {{"uri", raw}};
  return mcpfan::encode_notification(parts);
}

void BM_CoalesceEnqueue(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  mcpfan::ShardOptions options;
  options.max_pending_bytes = std::size_t{1} << 40;  // measure coalescing, not the close
  Shard shard(options);
  StalledSink sink;
  StreamId id = shard.open_stream(&sink, mcpfan::Framing::Sse);
  mcpfan::Filter filter;
  filter.uris = {"file:///workspace/"};
  (void)shard.subscribe(id, filter, "\"listen:0\"");
  shard.post(update("file:///workspace/first"));
  while (shard.drain()) {
  }
  shard.flush(0);  // the first batch goes to the sink and never completes

  std::vector<PayloadRef> payloads;
  payloads.reserve(pending);
  for (std::size_t i = 0; i < pending; ++i)
    payloads.push_back(update("file:///workspace/src/file-" + std::to_string(i) + ".ts"));
  for (const PayloadRef& p : payloads) shard.post(p);
  while (shard.drain()) {
  }
  const std::uint64_t coalesced_before = shard.stats().coalesced.load();

  std::size_t next = 0;
  for (auto _ : state) {
    shard.post(payloads[next]);
    (void)shard.drain();
    if (++next == pending) next = 0;
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters["per_enqueue"] = mcpfan_bench::time_per(n);
  state.counters["coalesced_per_enqueue"] =
      mcpfan_bench::per(static_cast<double>(shard.stats().coalesced.load() - coalesced_before), n);
  state.counters["pending_bytes"] = static_cast<double>(shard.pending_bytes(id));
  if (sink.closes != 0) state.SkipWithError("the stream was closed");
}

BENCHMARK(BM_CoalesceEnqueue)->ArgName("pending")->Arg(1)->Arg(2000)->Arg(8000)->Arg(25000);

// The other half: a URI the stalled stream has not got pending (nothing to coalesce). The
// old code scanned the whole pending list to find that out: the 34/76/92 µs per
// delivery at 2k/8k/16k pending. Each iteration builds a fresh shard with N distinct URIs
// pending (untimed), then times 100 enqueues of new URIs.
void BM_EnqueueDistinct(benchmark::State& state) {
  const auto pending = static_cast<std::size_t>(state.range(0));
  constexpr std::size_t kBatch = 100;
  std::vector<PayloadRef> queued, fresh;
  for (std::size_t i = 0; i < pending; ++i)
    queued.push_back(update("file:///workspace/src/file-" + std::to_string(i) + ".ts"));
  for (std::size_t i = 0; i < kBatch; ++i)
    fresh.push_back(update("file:///workspace/new/file-" + std::to_string(i) + ".ts"));
  mcpfan::ShardOptions options;
  options.max_pending_bytes = std::size_t{1} << 40;
  for (auto _ : state) {
    state.PauseTiming();
    {
      auto shard = std::make_unique<Shard>(options);
      StalledSink sink;
      StreamId id = shard->open_stream(&sink, mcpfan::Framing::Sse);
      mcpfan::Filter filter;
      filter.uris = {"file:///workspace/"};
      (void)shard->subscribe(id, filter, "\"listen:0\"");
      shard->post(update("file:///workspace/first"));
      while (shard->drain()) {
      }
      shard->flush(0);
      for (const PayloadRef& p : queued) shard->post(p);
      while (shard->drain()) {
      }
      state.ResumeTiming();
      for (const PayloadRef& p : fresh) {
        shard->post(p);
        (void)shard->drain();
      }
      state.PauseTiming();
      if (shard->stats().coalesced.load() != 0) state.SkipWithError("a distinct URI was coalesced");
    }
    state.ResumeTiming();
  }
  state.counters["per_enqueue"] = mcpfan_bench::time_per(static_cast<double>(state.iterations() * kBatch));
}

// Fixed iterations: the untimed setup (N posts) dwarfs the 100 timed enqueues.
BENCHMARK(BM_EnqueueDistinct)->ArgName("pending")->Arg(1)->Arg(2000)->Arg(8000)->Arg(25000)->Iterations(200);

}  // namespace

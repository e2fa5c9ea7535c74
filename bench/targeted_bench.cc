// The engine's share of one targeted publish (docs/performance.md, "Targeted publishes"): Hub::publish of one
// notification for one stream's URI, with interest-aware routing, among `shards` shards that each hold 1,000 streams on
// URIs of their own; then the one shard that matches drains and flushes. The benchmark thread plays every loop, so this
// is the CPU a publish costs the engine (routing, queue pushes, match, queueing, the batch handed to the sink), without
// sockets and without the wake-up of another thread. Reported per publish: time, heap allocations, wake-ups requested
// and shards posted to (1 with routing: a publish costs the same with 1 or 8 shards when only one may match).
#include <memory>
#include <string>
#include <vector>

#include "bench_support.h"
#include "mcpfan/hub.h"
#include "mcpfan/mcp.h"

namespace {

using mcpfan::Hub;
using mcpfan::OutBatch;
using mcpfan::PayloadRef;
using mcpfan::Shard;
using mcpfan::StreamId;

class CountingSink final : public mcpfan::StreamSink {
 public:
  void attach(Shard* shard, StreamId id, std::uint64_t* writes) { shard_ = shard, id_ = id, writes_ = writes; }
  void write_batch(OutBatch&& batch) override {
    OutBatch owned(std::move(batch));
    ++*writes_;
    shard_->write_done(id_);
  }
  void close_requested(mcpfan::CloseReason) override {}

 private:
  Shard* shard_ = nullptr;
  StreamId id_{};
  std::uint64_t* writes_ = nullptr;
};

struct Wakes {
  std::uint64_t n = 0;
};
void wake(void* arg) { ++static_cast<Wakes*>(arg)->n; }

// args: shards, publish as a vector (1) or a single PayloadRef (0)
void BM_TargetedPublish(benchmark::State& state) {
  const auto shards = static_cast<std::size_t>(state.range(0));
  const bool as_vector = state.range(1) != 0;
  constexpr std::size_t kStreamsPerShard = 1000;
  Hub hub(shards);
  (void)hub.route_by_interest();
  std::vector<Wakes> wakes(shards);
  for (std::size_t i = 0; i < shards; ++i) hub.shard(i).set_waker(&wake, &wakes[i]);
  const std::size_t streams = shards * kStreamsPerShard;
  std::vector<CountingSink> sinks(streams);
  std::uint64_t writes = 0;
  for (std::size_t i = 0; i < streams; ++i) {
    Shard& shard = hub.shard(i % shards);
    StreamId id = shard.open_stream(&sinks[i], mcpfan::Framing::Sse);
    sinks[i].attach(&shard, id, &writes);
    mcpfan::Filter filter;
    filter.uris = {"file:///bench/s/" + std::to_string(i)};
    (void)shard.subscribe(id, filter, "\"listen-" + std::to_string(i) + "\"");
  }
  // One payload per stream, encoded outside the timed region; publish i goes to stream
  // (i * 7919) % streams, so successive publishes land on different shards.
  std::vector<PayloadRef> payloads;
  payloads.reserve(streams);
  for (std::size_t i = 0; i < streams; ++i)
    payloads.push_back(mcpfan::mcp::resource_updated("file:///bench/s/" + std::to_string(i)));
  std::vector<PayloadRef> one(1);
  std::size_t next = 0;
  auto round = [&] {
    std::size_t target = (next++ * 7919) % streams;
    if (as_vector) {
      one[0] = payloads[target];
      (void)hub.publish(one);
    } else {
      (void)hub.publish(payloads[target]);
    }
    Shard& s = hub.shard(target % shards);
    while (s.drain()) {
    }
    s.flush();
  };
  for (std::size_t i = 0; i < 2 * streams; ++i) round();  // warm every stream's vectors
  std::uint64_t wakes_before = 0;
  for (auto& w : wakes) wakes_before += w.n;
  const std::uint64_t writes_before = writes;
  auto before = mcpfan_bench::alloc_stats();
  for (auto _ : state) round();
  auto after = mcpfan_bench::alloc_stats();
  std::uint64_t wakes_after = 0;
  for (auto& w : wakes) wakes_after += w.n;
  const auto n = static_cast<double>(state.iterations());
  if (static_cast<double>(writes - writes_before) != n) {
    state.SkipWithError("a publish did not reach exactly its one stream");
    return;
  }
  state.counters["time_per_publish"] = mcpfan_bench::time_per(n);
  state.counters["allocs_per_publish"] = mcpfan_bench::per(static_cast<double>(after.allocs - before.allocs), n);
  state.counters["wakes_per_publish"] = mcpfan_bench::per(static_cast<double>(wakes_after - wakes_before), n);
}

BENCHMARK(BM_TargetedPublish)
    ->ArgNames({"shards", "vector"})
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({1, 0})
    ->Args({8, 0})
    ->Unit(benchmark::kNanosecond);

}  // namespace

// One publish fanned out to 10,000 in-memory streams: Hub::publish, Shard::drain, Shard::flush.
//
// Each stream has one subscription to the published URI and a sink that counts what it is
// handed and calls write_done() at once (no sockets, no bytes copied: this is the engine's
// share of a delivery, not writev's). With 2 shards the streams are split 5,000/5,000 and
// both shards are drained and flushed on the benchmark thread, one after the other.
//
// Per-delivery cost depends heavily on where the streams' state sits in memory: the
// default cases build the fixture in a fresh heap (this file is linked first so they run
// before the index benchmarks leave 100 MB of live and freed blocks behind); the
// *_aged_heap cases build it in a deliberately fragmented one.
#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "mcpfan/hub.h"

namespace {

using mcpfan::Framing;
using mcpfan::Hub;
using mcpfan::OutBatch;
using mcpfan::PayloadRef;
using mcpfan::Shard;
using mcpfan::StreamId;

constexpr std::string_view kUri = "file:///home/dev/monorepo/packages-3/src/components/Button.tsx";

struct Totals {
  std::uint64_t writes = 0;
  std::uint64_t bytes = 0;
  std::uint64_t iovecs = 0;
  std::uint64_t closes = 0;
};

class CountingSink final : public mcpfan::StreamSink {
 public:
  void attach(Shard* shard, StreamId id, Totals* totals) { shard_ = shard, id_ = id, totals_ = totals; }
  void write_batch(OutBatch&& batch) override {
    OutBatch owned(std::move(batch));  // a transport keeps the batch until its write completes
    ++totals_->writes;
    totals_->bytes += owned.bytes;
    totals_->iovecs += owned.bufs.size() - 1;  // bufs[0] is the transport's framing slot
    shard_->write_done(id_);
  }
  void close_requested(mcpfan::CloseReason) override { ++totals_->closes; }

 private:
  Shard* shard_ = nullptr;
  StreamId id_{};
  Totals* totals_ = nullptr;
};

struct Case {
  std::size_t shards;
  Framing framing;
  std::size_t batch;       // payloads published per flush
  bool aged_heap = false;  // build the fixture in a fragmented heap (see AgedHeap)
  bool plain = false;      // subscriptions without a subscriptionId (Payload::plain())
};

// A long-running server's heap: 400,000 live blocks of 16..256 bytes with a random half
// freed (fixed seed), so the streams' per-stream allocations (pending queues, id tokens)
// land in scattered holes instead of one after another as in a fresh process.
class AgedHeap {
 public:
  AgedHeap() {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<std::size_t> size(16, 256);
    blocks_.reserve(400'000);
    for (std::size_t i = 0; i < 400'000; ++i) blocks_.push_back(std::make_unique<char[]>(size(rng)));
    std::shuffle(blocks_.begin(), blocks_.end(), rng);
    blocks_.resize(blocks_.size() / 2);
  }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
};

void wake(void* arg) { ++*static_cast<std::uint64_t*>(arg); }

void BM_Fanout(benchmark::State& state, Case c) {
  constexpr std::size_t kStreams = 10'000;
  std::unique_ptr<AgedHeap> aged = c.aged_heap ? std::make_unique<AgedHeap>() : nullptr;
  Hub hub(c.shards);
  std::uint64_t wakes = 0;
  std::vector<CountingSink> sinks(kStreams);
  Totals totals;
  for (std::size_t i = 0; i < c.shards; ++i) hub.shard(i).set_waker(&wake, &wakes);
  for (std::size_t i = 0; i < kStreams; ++i) {
    Shard& shard = hub.shard(i % c.shards);
    StreamId id = shard.open_stream(&sinks[i], c.framing);
    sinks[i].attach(&shard, id, &totals);
    mcpfan::Filter filter;
    filter.uris = {std::string(kUri)};
    (void)shard.subscribe(id, filter, c.plain ? std::string() : "\"listen-" + std::to_string(i) + "\"");
  }

  // Encoded once, outside the timed region; each iteration re-publishes the same payloads.
  const std::string uri_json = "\"" + std::string(kUri) + "\"";
  std::vector<std::string> revs;
  for (std::size_t i = 0; i < c.batch; ++i) revs.push_back(std::to_string(1000 + i));
  std::vector<PayloadRef> payloads;
  for (std::size_t i = 0; i < c.batch; ++i) {
    mcpfan::NotificationParts parts;
    parts.kind = mcpfan::Kind::ResourceUpdated;
    parts.uri = kUri;
    parts.params = {{"uri", uri_json}};
    parts.meta = {{"origin/rev", revs[i]}, {"origin/author", "\"alice\""}};
    payloads.push_back(mcpfan::encode_notification(parts));
  }

  auto round = [&] {
    if (c.batch == 1) {
      (void)hub.publish(payloads[0]);
    } else {
      (void)hub.publish(payloads);  // one post_bulk and one wake-up per shard
    }
    for (std::size_t s = 0; s < c.shards; ++s) {
      while (hub.shard(s).drain()) {
      }
    }
    for (std::size_t s = 0; s < c.shards; ++s) hub.shard(s).flush();
  };
  round();  // warm: grow every stream's pending vector and the shards' scratch vectors
  totals = Totals{};
  std::uint64_t delivered_before = 0;
  for (std::size_t s = 0; s < c.shards; ++s) delivered_before += hub.shard(s).stats().deliveries.load();

  auto before = mcpfan_bench::alloc_stats();
  for (auto _ : state) round();
  auto after = mcpfan_bench::alloc_stats();

  const double per_iter = static_cast<double>(kStreams * c.batch);
  const double deliveries = per_iter * static_cast<double>(state.iterations());
  std::uint64_t delivered = 0;
  for (std::size_t s = 0; s < c.shards; ++s) delivered += hub.shard(s).stats().deliveries.load();
  if (static_cast<double>(delivered - delivered_before) != deliveries || totals.closes != 0) {
    state.SkipWithError("unexpected delivery count or slow-consumer close");
    return;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(deliveries));
  state.counters["time_per_delivery"] = mcpfan_bench::time_per(deliveries);
  state.counters["bytes_per_delivery"] = mcpfan_bench::per(static_cast<double>(totals.bytes), deliveries);
  state.counters["iovecs_per_delivery"] = mcpfan_bench::per(static_cast<double>(totals.iovecs), deliveries);
  state.counters["writes_per_delivery"] = mcpfan_bench::per(static_cast<double>(totals.writes), deliveries);
  state.counters["allocs_per_delivery"] =
      mcpfan_bench::per(static_cast<double>(after.allocs - before.allocs), deliveries);
  state.counters["alloc_bytes_per_delivery"] =
      mcpfan_bench::per(static_cast<double>(after.bytes - before.bytes), deliveries);
}

BENCHMARK_CAPTURE(BM_Fanout, sse_1shard, Case{1, Framing::Sse, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_2shards, Case{2, Framing::Sse, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, line_1shard, Case{1, Framing::Line, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_1shard_batch16, Case{1, Framing::Sse, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_2shards_batch16, Case{2, Framing::Sse, 16})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_1shard_plain, Case{1, Framing::Sse, 1, false, true})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_1shard_aged_heap, Case{1, Framing::Sse, 1, true})->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Fanout, sse_1shard_batch16_aged_heap, Case{1, Framing::Sse, 16, true})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

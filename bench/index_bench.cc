// Subscription index: build 1,000,000 subscriptions over 100,000 URIs, then match.
//
// Tree: file:///home/dev/monorepo/packages-A/module-B/component-C/feature-D/file-E.ts with
// A..E in 0..9: 11,110 directories below the root, 100,000 files (URIs ~90 bytes).
// Subscriptions: 900,000 exact (9 per file) + 100,000 '/'-prefix ones on directories drawn
// uniformly (about 9 per directory, every level). A match for a file therefore probes the
// exact key plus 10 '/'-terminated prefixes and reports about 9 + 4 * 9 subscriptions.
// Insertion order is shuffled with a fixed seed.
#include <malloc.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench_support.h"
#include "mcpfan/index.h"

namespace {

using mcpfan::Kind;
using mcpfan::SubscriptionIndex;

constexpr std::size_t kFanout = 10;  // children per directory level
constexpr std::size_t kLevels = 4;   // directory levels below the root
constexpr std::size_t kFiles = 100'000;
constexpr std::size_t kSubs = 1'000'000;
constexpr std::size_t kPrefixSubs = kSubs / 10;
constexpr std::string_view kRoot = "file:///home/dev/monorepo/";
constexpr const char* kLevelNames[kLevels] = {"packages-", "module-", "component-", "feature-"};

struct Workload {
  std::vector<std::string> files;
  std::vector<std::string> dirs;                   // below the root, all levels
  std::vector<const std::string*> plan;            // the URI of each subscription, in insertion order
  std::vector<std::size_t> probes;                 // file indexes to match, in order
  std::vector<std::string> misses;                 // URIs of the same shape under another root
};

const Workload& workload() {
  static const Workload built = [] {
    Workload w;
    // Directories level by level, then the files of each leaf directory.
    std::vector<std::string> level{std::string(kRoot)};
    for (std::size_t l = 0; l < kLevels; ++l) {
      std::vector<std::string> next;
      for (const auto& parent : level) {
        for (std::size_t c = 0; c < kFanout; ++c) next.push_back(parent + kLevelNames[l] + std::to_string(c) + "/");
      }
      w.dirs.insert(w.dirs.end(), next.begin(), next.end());
      level = std::move(next);
    }
    for (const auto& leaf : level) {
      for (std::size_t c = 0; c < kFanout; ++c) w.files.push_back(leaf + "file-" + std::to_string(c) + ".ts");
    }
    std::mt19937_64 rng(20240501);
    for (std::size_t i = 0; i < kSubs - kPrefixSubs; ++i) w.plan.push_back(&w.files[i % w.files.size()]);
    std::uniform_int_distribution<std::size_t> dir(0, w.dirs.size() - 1);
    for (std::size_t i = 0; i < kPrefixSubs; ++i) w.plan.push_back(&w.dirs[dir(rng)]);
    std::shuffle(w.plan.begin(), w.plan.end(), rng);
    std::uniform_int_distribution<std::size_t> file(0, w.files.size() - 1);
    for (std::size_t i = 0; i < 4096; ++i) w.probes.push_back(file(rng));
    for (std::size_t i = 0; i < 4096; ++i) {
      std::string s = w.files[w.probes[i]];
      s.replace(0, kRoot.size(), "file:///home/dev/elsewhere/");
      w.misses.push_back(std::move(s));
    }
    return w;
  }();
  return built;
}

void build(SubscriptionIndex& idx, const Workload& w) {
  for (const std::string* uri : w.plan) {
    mcpfan::SubId sub = idx.create();
    idx.add(sub, mcpfan::kDefaultTenant, Kind::ResourceUpdated, *uri);
  }
}

// Build time and memory. Memory is reported two ways: heap_bytes counts bytes live in the
// counting allocator (malloc_usable_size, so malloc's rounding is in, its 8-byte chunk
// headers are not); rss_MiB is the /proc/self/statm resident delta, each side measured
// right after malloc_trim(0) returned free pages to the OS (earlier runs' before, the pages
// vectors freed while growing after).
void BM_IndexBuild(benchmark::State& state) {
  const Workload& w = workload();
  std::unique_ptr<SubscriptionIndex> idx;
  malloc_trim(0);
  auto before = mcpfan_bench::alloc_stats();
  auto rss_before = mcpfan_bench::rss_bytes();
  for (auto _ : state) {
    idx = std::make_unique<SubscriptionIndex>();
    build(*idx, w);
  }
  malloc_trim(0);  // drop pages freed while vectors grew, so RSS counts what the index holds
  auto rss_after = mcpfan_bench::rss_bytes();
  auto after = mcpfan_bench::alloc_stats();
  const auto subs = static_cast<double>(idx->subscription_count());
  const auto heap = static_cast<double>(after.live_bytes - before.live_bytes);
  state.counters["subs"] = subs;
  state.counters["keys"] = static_cast<double>(idx->key_count());
  state.counters["time_per_sub"] = mcpfan_bench::time_per(subs);
  state.counters["heap_MiB"] = heap / (1 << 20);
  state.counters["heap_bytes_per_sub"] = heap / subs;
  state.counters["rss_MiB"] = static_cast<double>(rss_after - rss_before) / (1 << 20);
  state.counters["allocs_per_sub"] = static_cast<double>(after.allocs - before.allocs) / subs;
  idx.reset();
}
BENCHMARK(BM_IndexBuild)->Iterations(1)->Unit(benchmark::kMillisecond);

SubscriptionIndex& shared_index() {
  static SubscriptionIndex idx;
  static bool built = (build(idx, workload()), true);
  (void)built;
  return idx;
}

// One match() per iteration: `hit` probes a random subscribed file, `miss` a URI of the
// same depth under an unsubscribed root (11 hash probes, nothing reported).
template <bool kHit>
void BM_IndexMatch(benchmark::State& state) {
  const Workload& w = workload();
  SubscriptionIndex& idx = shared_index();
  std::size_t i = 0;
  std::uint64_t reported = 0;
  for (auto _ : state) {
    std::string_view uri = kHit ? std::string_view(w.files[w.probes[i]]) : std::string_view(w.misses[i]);
    i = (i + 1) & 4095;
    idx.match(mcpfan::kDefaultTenant, Kind::ResourceUpdated, uri, [&](mcpfan::SubId s) {
      benchmark::DoNotOptimize(s);
      ++reported;
    });
  }
  const auto rep = static_cast<double>(reported);
  state.counters["reported_per_match"] = mcpfan_bench::per(rep, static_cast<double>(state.iterations()));
  if (reported) {
    state.SetItemsProcessed(static_cast<std::int64_t>(reported));
    state.counters["time_per_reported_sub"] = mcpfan_bench::time_per(rep);
  }
}
BENCHMARK_TEMPLATE(BM_IndexMatch, true)->Name("BM_IndexMatch/hit");
BENCHMARK_TEMPLATE(BM_IndexMatch, false)->Name("BM_IndexMatch/miss");

}  // namespace

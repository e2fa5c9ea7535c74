// Encode-once: the cost of turning one notification into its shared payload.
#include <string>

#include "bench_support.h"
#include "mcpfan/payload.h"

namespace {

using mcpfan::Framing;
using mcpfan::Kind;
using mcpfan::NotificationParts;
using mcpfan::PayloadRef;

constexpr std::string_view kUri = "file:///home/dev/monorepo/packages-3/src/components/Button.tsx";

// A typical resources/updated: the uri member plus two publisher _meta keys.
void BM_EncodeResourceUpdated(benchmark::State& state) {
  const std::string uri_json = "\"" + std::string(kUri) + "\"";
  NotificationParts parts;
  parts.kind = Kind::ResourceUpdated;
  parts.uri = kUri;
  parts.params = {{"uri", uri_json}};
  parts.meta = {{"origin/rev", "1042"}, {"origin/author", "\"alice\""}};

  std::size_t sse_bytes = 0, line_bytes = 0;
  auto before = mcpfan_bench::alloc_stats();
  for (auto _ : state) {
    PayloadRef p = mcpfan::encode_notification(parts);
    benchmark::DoNotOptimize(p.get());
    sse_bytes = p->frame_size(Framing::Sse);
    line_bytes = p->frame_size(Framing::Line);
  }
  auto after = mcpfan_bench::alloc_stats();
  auto n = static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(sse_bytes));
  state.counters["sse_frame_bytes"] = static_cast<double>(sse_bytes);  // without the id token
  state.counters["line_frame_bytes"] = static_cast<double>(line_bytes);
  state.counters["allocs_per_encode"] = mcpfan_bench::per(static_cast<double>(after.allocs - before.allocs), n);
}
BENCHMARK(BM_EncodeResourceUpdated);

// The smallest notification: tools/list_changed, no params.
void BM_EncodeListChanged(benchmark::State& state) {
  NotificationParts parts;
  parts.kind = Kind::ToolsListChanged;
  std::size_t sse_bytes = 0;
  auto before = mcpfan_bench::alloc_stats();
  for (auto _ : state) {
    PayloadRef p = mcpfan::encode_notification(parts);
    benchmark::DoNotOptimize(p.get());
    sse_bytes = p->frame_size(Framing::Sse);
  }
  auto after = mcpfan_bench::alloc_stats();
  auto n = static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(sse_bytes));
  state.counters["sse_frame_bytes"] = static_cast<double>(sse_bytes);
  state.counters["allocs_per_encode"] = mcpfan_bench::per(static_cast<double>(after.allocs - before.allocs), n);
}
BENCHMARK(BM_EncodeListChanged);

}  // namespace

BENCHMARK_MAIN();

// Publish-body decode: minify + validate + parse + encode each notification once.
#include <string>

#include "bench_support.h"
#include "mcpfan/publish_decoder.h"

namespace {

std::string notification(std::size_t i, bool with_tenant) {
  std::string s = "{";
  if (with_tenant) s += R"("tenant":"acme",)";
  s +=
      R"("method":"notifications/resources/updated",)"
      R"("params":{"uri":"file:///home/dev/monorepo/packages-3/src/components/Button)";
  s += std::to_string(i);
  s += R"(.tsx","_meta":{"origin/rev":)";
  s += std::to_string(1000 + i);
  s += R"(,"origin/author":"alice"}}})";
  return s;
}

// A body of `count` notifications: a bare object for 1, otherwise an array.
std::string body(std::size_t count, bool with_tenant) {
  if (count == 1) return notification(0, with_tenant);
  std::string s = "[";
  for (std::size_t i = 0; i < count; ++i) {
    if (i) s += ',';
    s += notification(i, with_tenant);
  }
  s += ']';
  return s;
}

// Args: notifications per body, whether each names a tenant (looked up under the tenant table's mutex).
void BM_PublishDecode(benchmark::State& state) {
  const auto count = static_cast<std::size_t>(state.range(0));
  const bool with_tenant = state.range(1) != 0;
  const std::string text = body(count, with_tenant);
  mcpfan::TenantTable tenants;
  mcpfan::TenantRef held(tenants, *tenants.acquire("acme"));  // a tenant with clients: looked up and encoded
  mcpfan::PublishDecoder decoder;
  {  // warm the decoder's reusable buffers and check the body is accepted
    auto r = decoder.decode(text, tenants);
    if (!r.ok() || r.value().payloads.size() != count) {
      state.SkipWithError("body rejected");
      return;
    }
  }
  auto before = mcpfan_bench::alloc_stats();
  for (auto _ : state) {
    auto r = decoder.decode(text, tenants);
    benchmark::DoNotOptimize(r.ok());
  }
  auto after = mcpfan_bench::alloc_stats();
  const double notes = static_cast<double>(state.iterations()) * static_cast<double>(count);
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(text.size()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(count));
  state.counters["body_bytes"] = static_cast<double>(text.size());
  state.counters["time_per_notification"] = mcpfan_bench::time_per(notes);
  state.counters["allocs_per_notification"] =
      mcpfan_bench::per(static_cast<double>(after.allocs - before.allocs), notes);
}
BENCHMARK(BM_PublishDecode)->ArgNames({"n", "tenant"})->Args({1, 1})->Args({1, 0})->Args({100, 1})->Args({100, 0});

}  // namespace

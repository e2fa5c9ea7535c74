// What the session registry's lock is held for, as the number of sessions grows: an expiry
// tick with nothing due (it was a walk over every session under the one global mutex), a
// request's lookup, and a stream's claim and close. All should stay flat from 1k to 20k
// sessions (--max-idle-sessions' default).
//   build-release/bench/mcpfan_sessions_bench
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "mcp/sessions.h"
#include "mcpfan/payload.h"

namespace mcpfan::detail {
namespace {

struct Registry {
  explicit Registry(std::size_t n) : limits({}, 2), reg(limits, n + 1, 16) {
    for (std::size_t i = 0; i < n; ++i) {
      std::optional<Limit> refused;
      StreamUsage usage;
      (void)StreamUsage::acquire(limits, kDefaultTenant, 0, usage);
      sessions.push_back(reg.create(kDefaultTenant, "2025-06-18", i, {}, std::move(usage), refused));
    }
  }
  Limits limits;
  SessionRegistry reg;
  std::vector<std::shared_ptr<Session>> sessions;
};

void BM_SessionExpireNoneDue(benchmark::State& state) {
  Registry r(static_cast<std::size_t>(state.range(0)));
  std::uint64_t now = 1'000'000;
  for (auto _ : state) benchmark::DoNotOptimize(r.reg.expire(now, 1'000'000'000));
}
BENCHMARK(BM_SessionExpireNoneDue)->Arg(1000)->Arg(20000);

void BM_SessionFind(benchmark::State& state) {
  Registry r(static_cast<std::size_t>(state.range(0)));
  std::uint64_t now = 1'000'000;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(r.reg.find(r.sessions[i].get()->id, ++now));
    if (++i == r.sessions.size()) i = 0;
  }
}
BENCHMARK(BM_SessionFind)->Arg(1000)->Arg(20000);

void BM_SessionStreamClaimAndClose(benchmark::State& state) {
  Registry r(static_cast<std::size_t>(state.range(0)));
  std::uint64_t now = 1'000'000;
  Session& s = *r.sessions[r.sessions.size() / 2];
  for (auto _ : state) {
    benchmark::DoNotOptimize(r.reg.claim_stream(s));
    r.reg.stream_closed(s, ++now);
  }
}
BENCHMARK(BM_SessionStreamClaimAndClose)->Arg(1000)->Arg(20000);

// What a session stream pays per notification (docs/protocol.md, "Resumable 2025 sessions"): the tap locks
// the session and records the notification in its journal, replacing the entry of its
// (method, uri), and formats the event id. `range(0)` distinct URIs (long, as real file URIs
// are) updated round-robin.
void BM_SessionTapRecord(benchmark::State& state) {
  Registry r(1);
  auto& s = r.sessions[0];
  SessionTap tap(s, 1);
  {
    std::lock_guard lock(s->mu);
    s->live_epoch = 1;
  }
  std::vector<PayloadRef> ps;
  // Two notifications per URI, so each visit brings a new one (as publishes do).
  for (int i = 0; i < 2 * state.range(0); ++i) {
    std::string uri = "file:///workspace/project/src/module_" + std::to_string(i % state.range(0)) + "/file.txt";
    NotificationParts parts;
    parts.kind = Kind::ResourceUpdated;
    parts.uri = uri;
    std::string q = "\"" + uri + "\"";
    parts.params.emplace_back("uri", q);
    ps.push_back(encode_notification(parts));
  }
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tap.record(ps[i]));
    if (++i == ps.size()) i = 0;
  }
}
BENCHMARK(BM_SessionTapRecord)->Arg(1)->Arg(64);

}  // namespace
}  // namespace mcpfan::detail

BENCHMARK_MAIN();

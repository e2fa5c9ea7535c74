// Debouncer: a trailing-edge throttle per (tenant, method, uri). Assertions are about
// what is delivered and in which order, never about how fast: the timer thread runs on a
// shared, noisy machine, so every wait has a generous bound.
#include "mcpfan/debouncer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <thread>

#include "test_sink.h"

namespace mcpfan::test {
namespace {

using namespace std::chrono_literals;

/** Records what the debouncer fans out, by payload identity. */
struct Recorder {
  std::mutex mu;
  std::vector<const Payload*> seen;
  Debouncer::Sink sink() {
    return [this](std::vector<Notification>& ns) {
      std::lock_guard lock(mu);
      for (auto& n : ns) seen.push_back(n.local.get());
    };
  }
  std::vector<const Payload*> snapshot() {
    std::lock_guard lock(mu);
    return seen;
  }
  bool wait_for(const Payload* p, std::chrono::milliseconds bound) {
    auto until = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < until) {
      for (auto* s : snapshot()) {
        if (s == p) return true;
      }
      std::this_thread::sleep_for(2ms);
    }
    return false;
  }
};

TEST(Debouncer, BurstDeliversFirstAndNewestInOrderAndCountsTheRest) {
  Recorder rec;
  std::vector<PayloadRef> sent;
  for (int i = 0; i < 100; ++i) sent.push_back(make_update("file:///hot"));
  Debouncer d(50ms, rec.sink());
  for (auto& p : sent) d.publish(std::vector<PayloadRef>{p});
  ASSERT_TRUE(rec.wait_for(sent.back().get(), 5000ms)) << "the newest update was not delivered";
  auto seen = rec.snapshot();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front(), sent.front().get()) << "a quiet key's first update goes out at once";
  // Delivered ones appear in publish order; every other one was counted as suppressed.
  std::size_t pos = 0;
  for (auto* p : seen) {
    while (pos < sent.size() && sent[pos].get() != p) ++pos;
    ASSERT_LT(pos, sent.size()) << "delivered out of publish order";
  }
  EXPECT_EQ(seen.size() + d.suppressed(), sent.size());
  // Delivered = immediate fan-outs (at least the first; more if the loop outlasted the
  // interval on a slow machine) + trailing ones.
  EXPECT_GE(seen.size(), 1 + d.trailing());
  EXPECT_GE(d.trailing(), 1u) << "the newest update came after the first, so it was held and trailed";
}

TEST(Debouncer, KeysDoNotHoldEachOther) {
  Recorder rec;
  Debouncer d(10s, rec.sink());
  auto a = make_update("file:///a");
  auto b = make_update("file:///b");
  auto b_other_tenant = make_update("file:///a", TenantId{7, 1});
  auto tools = make_list_changed(Kind::ToolsListChanged);
  d.publish(std::vector<PayloadRef>{a, b, b_other_tenant, tools});
  // All four are distinct keys: fanned out within publish(), none held.
  auto seen = rec.snapshot();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0], a.get());
  EXPECT_EQ(seen[3], tools.get());
  EXPECT_EQ(d.suppressed(), 0u);
}

TEST(Debouncer, HeldUpdateIsDeliveredOnDestruction) {
  Recorder rec;
  auto first = make_update("file:///x");
  auto second = make_update("file:///x");
  {
    Debouncer d(10s, rec.sink());
    d.publish(std::vector<PayloadRef>{first});
    d.publish(std::vector<PayloadRef>{second});  // within the interval: held
    EXPECT_EQ(rec.snapshot().size(), 1u);
  }
  auto seen = rec.snapshot();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1], second.get()) << "stopping must not lose the newest update";
}

TEST(Debouncer, QuietKeysAreForgotten) {
  Recorder rec;
  Debouncer d(20ms, rec.sink());
  d.publish(std::vector<PayloadRef>{make_update("file:///once")});
  auto until = std::chrono::steady_clock::now() + 5s;
  while (d.tracked_keys() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_EQ(d.tracked_keys(), 0u) << "a key quiet for a whole interval keeps no state";
  // And then it is quiet again: the next update goes out at once.
  auto again = make_update("file:///once");
  d.publish(std::vector<PayloadRef>{again});
  EXPECT_EQ(rec.snapshot().back(), again.get());
}

// Regression: the sink was called with the debouncer's mutex held, so a slow sink
// held up every publisher's decision and the counters. Now the sink runs with no lock of
// the debouncer held; calls stay ordered by ticket.
TEST(Debouncer, ASlowSinkDoesNotHoldTheDebouncersLock) {
  std::mutex gate;
  std::unique_lock hold(gate);
  std::atomic<bool> in_sink{false};
  Debouncer d(1h, [&](std::vector<Notification>&) {
    in_sink = true;
    std::lock_guard wait(gate);  // blocks until the test lets go
  });
  std::thread publisher([&] { d.publish(std::vector<PayloadRef>{make_update("file:///slow")}); });
  for (int i = 0; i < 100000 && !in_sink; ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(in_sink);
  // With the old code this blocked until the sink returned (here: never, until released).
  auto keys = std::async(std::launch::async, [&] { return d.tracked_keys(); });
  bool answered = keys.wait_for(60s) == std::future_status::ready;
  hold.unlock();
  publisher.join();
  ASSERT_TRUE(answered) << "tracked_keys() waited for the sink";
  EXPECT_EQ(keys.get(), 1u);
}

}  // namespace
}  // namespace mcpfan::test

// InterestTable (transports/src/nats/interest.h): SUB on a subject's first reference, UNSUB
// only after the linger once its last one goes, nothing for churn within the linger, bounded.
#include "nats/interest.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace mcpfan::detail::nats {
namespace {

using namespace std::chrono_literals;

std::string Ops(const std::vector<InterestTable::Op>& ops) {
  std::string s;
  for (const auto& op : ops) s += (op.subscribe ? "+" : "-") + op.subject + " ";
  return s;
}

TEST(Interest, FirstReferenceSubscribesLastUnsubscribesAfterTheLinger) {
  InterestTable t(100ms, 16);
  ASSERT_TRUE(t.add("a"));
  ASSERT_TRUE(t.add("a"));
  ASSERT_TRUE(t.add("b"));
  EXPECT_EQ(Ops(t.take(0)), "+a +b ");
  EXPECT_EQ(Ops(t.take(0)), "");
  t.remove("a", 10);
  EXPECT_EQ(Ops(t.take(1000)), "") << "a still has a reference";
  t.remove("a", 10);
  EXPECT_EQ(t.stats().lingering, 1u);
  EXPECT_EQ(Ops(t.take(109)), "");
  EXPECT_EQ(Ops(t.take(110)), "-a ");
  EXPECT_EQ(t.stats().subjects, 1u);
  EXPECT_EQ(t.stats().sub_ops, 2u);
  EXPECT_EQ(t.stats().unsub_ops, 1u);
}

TEST(Interest, ChurnWithinTheLingerSendsNoSubUnsubPairs) {
  InterestTable t(100ms, 16);
  ASSERT_TRUE(t.add("s"));
  EXPECT_EQ(Ops(t.take(0)), "+s ");
  for (std::uint64_t now = 1; now < 1000; now += 10) {  // drops and comes back every 10 ms
    t.remove("s", now);
    EXPECT_EQ(Ops(t.take(now + 5)), "");
    ASSERT_TRUE(t.add("s"));
  }
  EXPECT_EQ(Ops(t.take(5000)), "");
  t.remove("s", 5000);
  EXPECT_EQ(Ops(t.take(5099)), "");
  EXPECT_EQ(Ops(t.take(5100)), "-s ");
  // The last drop's deadline counts, not an earlier one still queued.
  ASSERT_TRUE(t.add("s"));
  EXPECT_EQ(Ops(t.take(5100)), "+s ");
  t.remove("s", 6000);
  ASSERT_TRUE(t.add("s"));
  t.remove("s", 6050);
  EXPECT_EQ(Ops(t.take(6100)), "") << "the second drop lingers until 6150";
  EXPECT_EQ(Ops(t.take(6150)), "-s ");
}

TEST(Interest, AddedAndRemovedBeforeABatchSendsNothing) {
  InterestTable t(100ms, 16);
  ASSERT_TRUE(t.add("x"));
  t.remove("x", 0);
  EXPECT_EQ(Ops(t.take(1000)), "");
  EXPECT_EQ(t.stats().subjects, 0u);
  t.remove("never-added", 0);  // ignored
  EXPECT_EQ(t.stats().subjects, 0u);
}

TEST(Interest, BoundedAndCountedAndTakenInBatches) {
  InterestTable t(0ms, 3);
  EXPECT_TRUE(t.add("a"));
  EXPECT_TRUE(t.add("b"));
  EXPECT_TRUE(t.add("c"));
  EXPECT_FALSE(t.add("d"));
  EXPECT_TRUE(t.add("a")) << "a known subject is always accepted";
  EXPECT_EQ(t.stats().refused, 1u);
  EXPECT_EQ(Ops(t.take(0, 2)), "+a +b ");
  EXPECT_EQ(Ops(t.take(0, 2)), "+c ");
  t.remove("c", 0);
  EXPECT_TRUE(t.add("c")) << "c is still held (lingering)";
  t.remove("c", 0);
  EXPECT_EQ(Ops(t.take(0)), "-c ");
  EXPECT_TRUE(t.add("d")) << "room again once c's UNSUB went";
}

TEST(Interest, ReferencedListsWhatIsNeededNow) {
  InterestTable t(100ms, 16);
  ASSERT_TRUE(t.add("a"));
  ASSERT_TRUE(t.add("b"));
  (void)t.take(0);
  t.remove("b", 0);
  EXPECT_EQ(t.referenced(), std::vector<std::string>{"a"});
}

// Shards report from their own threads while the backplane takes batches: whatever the
// interleaving, once all is removed and the linger passed, every SUB has had its UNSUB.
TEST(Interest, ConcurrentReportsBalance) {
  InterestTable t(1ms, 1000);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> clock{0};
  std::int64_t balance = 0;
  std::thread backplane([&] {
    while (!done.load()) {
      for (const auto& op : t.take(clock.load())) balance += op.subscribe ? 1 : -1;
    }
  });
  std::vector<std::thread> shards;
  for (int s = 0; s < 3; ++s) {
    shards.emplace_back([&, s] {
      for (int i = 0; i < 2000; ++i) {
        std::string subject = "t." + std::to_string((i + s) % 50);
        ASSERT_TRUE(t.add(subject));
        t.remove(subject, clock.fetch_add(1));
      }
    });
  }
  for (auto& th : shards) th.join();
  done = true;
  backplane.join();
  for (const auto& op : t.take(UINT64_MAX)) balance += op.subscribe ? 1 : -1;
  EXPECT_EQ(balance, 0);
  EXPECT_EQ(t.stats().subjects, 0u);
  EXPECT_EQ(t.stats().lingering, 0u);
}

}  // namespace
}  // namespace mcpfan::detail::nats

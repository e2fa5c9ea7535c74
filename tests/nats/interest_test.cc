// InterestTable (transports/src/nats/interest.h): SUB on a subject's first reference, UNSUB
// only after the linger once its last one goes, nothing for churn within the linger, bounded.
#include "nats/interest.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
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

// Per-tenant compaction: at the bound, the tenant with the most subjects becomes one
// `<scope>.>` subscription. Its SUB goes before the UNSUBs of what it replaces; from then on the
// tenant's references count on it; once they are all gone and the linger passed, the tenant is
// itself again.
TEST(Interest, AtTheBoundTheLargestTenantIsFoldedIntoOneSubject) {
  InterestTable t(100ms, 4);
  ASSERT_TRUE(t.add("p.A.r.1", "p.A"));
  ASSERT_TRUE(t.add("p.A.r.2", "p.A"));
  ASSERT_TRUE(t.add("p.A.r.2", "p.A"));  // two references
  ASSERT_TRUE(t.add("p.A.r.3", "p.A"));
  ASSERT_TRUE(t.add("p.B.r.1", "p.B"));
  EXPECT_EQ(Ops(t.take(0)), "+p.A.r.1 +p.A.r.2 +p.A.r.3 +p.B.r.1 ");
  ASSERT_TRUE(t.add("p.B.r.2", "p.B")) << "full: A (3 subjects) is folded, and B's new subject fits";
  EXPECT_EQ(Ops(t.take(0)), "+p.A.> +p.B.r.2 -p.A.r.1 -p.A.r.2 -p.A.r.3 ") << "the wildcard before the UNSUBs";
  InterestTable::Stats st = t.stats();
  EXPECT_EQ(st.subjects, 3u);
  EXPECT_EQ(st.compacted_tenants, 1u);
  EXPECT_EQ(st.compactions, 1u);
  EXPECT_EQ(st.refused, 0u);
  // A's references now count on A's wildcard: new ones send nothing, and it stays while any is left.
  ASSERT_TRUE(t.add("p.A.r.9", "p.A"));
  EXPECT_EQ(Ops(t.take(0)), "");
  for (const char* s : {"p.A.r.1", "p.A.r.2", "p.A.r.2", "p.A.r.3"}) t.remove(s, 10, "p.A");
  EXPECT_EQ(Ops(t.take(1000)), "") << "p.A.r.9 is still referenced";
  t.remove("p.A.r.9", 20, "p.A");
  EXPECT_EQ(Ops(t.take(119)), "");
  EXPECT_EQ(Ops(t.take(120)), "-p.A.> ") << "the wildcard's UNSUB after the linger";
  EXPECT_EQ(t.stats().compacted_tenants, 0u);
  ASSERT_TRUE(t.add("p.A.r.1", "p.A"));
  EXPECT_EQ(Ops(t.take(200)), "+p.A.r.1 ") << "A is itself again";
  EXPECT_EQ(t.stats().subjects, 3u);
}

TEST(Interest, WithNoTenantToFoldTheBoundRefusesAndCounts) {
  InterestTable t(0ms, 2);
  ASSERT_TRUE(t.add("p.A.r.1", "p.A"));
  ASSERT_TRUE(t.add("p.B.r.1", "p.B"));
  EXPECT_FALSE(t.add("p.C.r.1", "p.C")) << "every tenant has one subject: folding frees nothing";
  EXPECT_EQ(t.stats().refused, 1u);
  EXPECT_EQ(t.stats().compactions, 0u);
}

// A tenant whose subjects only linger is folded to nothing: their UNSUBs go at once.
TEST(Interest, FoldingALingeringTenantFreesItsSubjects) {
  InterestTable t(1h, 3);
  ASSERT_TRUE(t.add("p.A.r.1", "p.A"));
  ASSERT_TRUE(t.add("p.A.r.2", "p.A"));
  ASSERT_TRUE(t.add("p.B.r.1", "p.B"));
  EXPECT_EQ(Ops(t.take(0)), "+p.A.r.1 +p.A.r.2 +p.B.r.1 ");
  t.remove("p.A.r.1", 0, "p.A");
  t.remove("p.A.r.2", 0, "p.A");
  EXPECT_EQ(t.stats().lingering, 2u);
  ASSERT_TRUE(t.add("p.B.r.2", "p.B"));
  EXPECT_EQ(Ops(t.take(1)), "+p.B.r.2 -p.A.r.1 -p.A.r.2 ");
  EXPECT_EQ(t.stats().lingering, 0u);
  EXPECT_EQ(t.stats().compacted_tenants, 0u);
  EXPECT_EQ(t.stats().subjects, 2u);
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

// The same with a bound small enough that tenants are folded and unfolded all the time.
TEST(Interest, ConcurrentReportsBalanceWhileTenantsAreFolded) {
  InterestTable t(1ms, 8);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> clock{0};
  std::map<std::string, std::int64_t> held;  // subject -> SUBs minus UNSUBs at the server
  std::thread backplane([&] {
    while (!done.load()) {
      for (const auto& op : t.take(clock.load())) held[op.subject] += op.subscribe ? 1 : -1;
    }
  });
  std::vector<std::thread> shards;
  for (int s = 0; s < 3; ++s) {
    shards.emplace_back([&, s] {
      for (int i = 0; i < 3000; ++i) {
        std::string scope = "p.T" + std::to_string((i + s) % 4);
        std::string subject = scope + ".r." + std::to_string((i * 7 + s) % 5);
        (void)t.add(subject, scope);
        t.remove(subject, clock.fetch_add(1), scope);
      }
    });
  }
  for (auto& th : shards) th.join();
  done = true;
  backplane.join();
  for (const auto& op : t.take(UINT64_MAX)) held[op.subject] += op.subscribe ? 1 : -1;
  for (const auto& [subject, n] : held) EXPECT_EQ(n, 0) << subject;
  EXPECT_GT(t.stats().compactions, 0u) << "the bound was never reached: this test tests nothing";
  EXPECT_EQ(t.stats().subjects, 0u);
  EXPECT_EQ(t.stats().compacted_tenants, 0u);
}

}  // namespace
}  // namespace mcpfan::detail::nats

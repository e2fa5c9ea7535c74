// What a reload (Server::reload, SIGHUP) swaps while workers read: the Swappable snapshots
// (transports/src/mcp/swappable.h) and the tenant ceilings of Limits (transports/src/mcp/limits.h).
// The threaded cases exist for the ThreadSanitizer pass.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "mcp/limits.h"
#include "mcp/publishers.h"
#include "mcp/swappable.h"

namespace mcpfan::detail {
namespace {

struct Generation {
  int n = 0;
  std::vector<int> payload = std::vector<int>(64, 0);  // every element equals n: a torn read would show
};

TEST(Swappable, AReaderKeepsItsSnapshotAcrossAStore) {
  Swappable<Generation> s;
  EXPECT_EQ(s.load()->n, 0);  // default-constructed, never null
  std::shared_ptr<const Generation> held = s.load();
  s.store(std::make_shared<const Generation>(Generation{1, std::vector<int>(64, 1)}));
  EXPECT_EQ(held->n, 0);  // still valid and unchanged
  EXPECT_EQ(s.load()->n, 1);
}

TEST(Swappable, ConcurrentReadersSeeWholeGenerations) {
  Swappable<Generation> s;
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      int last = 0;
      while (!stop.load()) {
        auto g = s.load();
        for (int v : g->payload) {
          if (v != g->n) ++torn;
        }
        if (g->n < last) ++torn;  // generations only move forward
        last = g->n;
      }
    });
  }
  for (int n = 1; n <= 2000; ++n) s.store(std::make_shared<const Generation>(Generation{n, std::vector<int>(64, n)}));
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(s.load()->n, 2000);
}

TEST(Swappable, PublisherPolicyBucketsWorkThroughAConstSnapshot) {
  Swappable<PublisherPolicy> s;
  auto p = std::make_shared<PublisherPolicy>();
  p->rate.configure(10, 2, 1);
  s.store(std::move(p));
  std::shared_ptr<const PublisherPolicy> snap = s.load();
  EXPECT_FALSE(snap->rate.take(0, 2, 1).has_value());
  EXPECT_TRUE(snap->rate.take(0, 1, 1).has_value());  // the burst of 2 is spent
}

std::int64_t in_use(const Limits& l, Resource r) {
  return l.usage(kDefaultTenant)->in_use[static_cast<std::size_t>(r)].load();
}

TEST(LimitsReload, ALoweredCeilingKeepsWhatIsHeldAndRefusesMore) {
  TenantCeilings c;
  c.streams = 3;
  Limits limits(c, 4);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(limits.acquire(kDefaultTenant, Resource::Streams));
  c.streams = 1;
  limits.set_ceilings(c);
  EXPECT_EQ(limits.ceiling(Resource::Streams), 1);
  EXPECT_EQ(in_use(limits, Resource::Streams), 3);  // nothing taken away
  EXPECT_FALSE(limits.acquire(kDefaultTenant, Resource::Streams));
  EXPECT_NE(limits.refusal_message(Limit::StreamsPerTenant, "acme").find("limit of 1 streams"), std::string::npos);
  limits.release(kDefaultTenant, Resource::Streams, 3);
  EXPECT_TRUE(limits.acquire(kDefaultTenant, Resource::Streams));
  EXPECT_FALSE(limits.acquire(kDefaultTenant, Resource::Streams));
  c.streams = 0;  // unlimited
  limits.set_ceilings(c);
  for (int i = 0; i < 100; ++i) EXPECT_TRUE(limits.acquire(kDefaultTenant, Resource::Streams));
}

TEST(LimitsReload, CeilingsChangeWhileWorkersAcquire) {
  Limits limits({}, 4);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 2; ++t) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        if (limits.acquire(kDefaultTenant, Resource::Subscriptions))
          limits.release(kDefaultTenant, Resource::Subscriptions);
        (void)limits.refusal_message(Limit::SubscriptionsPerTenant, "t");
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    TenantCeilings c;
    c.subscriptions = i % 3;
    limits.set_ceilings(c);
  }
  stop = true;
  for (auto& w : workers) w.join();
  EXPECT_EQ(in_use(limits, Resource::Subscriptions), 0);  // every acquire given back exactly once
}

}  // namespace
}  // namespace mcpfan::detail

// Tests for engine/src/tenants.cc: tenants with clients, by name, with generation-checked
// ids, reclaimed when their last reference goes, bounded.
#include "mcpfan/tenants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace mcpfan {
namespace {

TEST(TenantTable, DefaultTenantExistsAndIsNeverReclaimed) {
  TenantTable t;
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.name(kDefaultTenant), "default");
  EXPECT_EQ(t.find("default"), kDefaultTenant);
  auto d = t.acquire("default");
  ASSERT_TRUE(d);
  EXPECT_EQ(*d, kDefaultTenant);
  t.release(*d);
  t.release(kDefaultTenant);  // one release too many: still there
  EXPECT_EQ(t.find("default"), kDefaultTenant);
  EXPECT_EQ(t.size(), 1u);
}

TEST(TenantTable, AcquireCreatesOnceAndFindOnlyLooksUp) {
  TenantTable t;
  EXPECT_FALSE(t.find("acme"));
  EXPECT_EQ(t.size(), 1u) << "find() creates nothing";
  auto acme = t.acquire("acme");
  auto beta = t.acquire("beta");
  ASSERT_TRUE(acme && beta);
  EXPECT_NE(*acme, *beta);
  EXPECT_NE(*acme, kDefaultTenant);
  EXPECT_EQ(t.acquire("acme"), acme);
  EXPECT_EQ(t.find("acme"), acme);
  EXPECT_EQ(t.name(*acme), "acme");
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.name(TenantId{99, 0}), "");
}

TEST(TenantTable, TheLastReleaseReclaimsAndAStaleIdNamesNothing) {
  TenantTable t;
  TenantId a = *t.acquire("acme");
  ASSERT_EQ(t.acquire("acme"), a);
  EXPECT_TRUE(t.retain(a));
  t.release(a);
  t.release(a);
  EXPECT_EQ(t.find("acme"), a) << "one reference left";
  t.release(a);
  EXPECT_FALSE(t.find("acme"));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.name(a), "");
  EXPECT_FALSE(t.retain(a));

  // The slot goes to the next tenant, with a new generation: the old id never names it.
  TenantId b = *t.acquire("beta");
  EXPECT_EQ(b.index, a.index);
  EXPECT_NE(b, a);
  EXPECT_EQ(t.name(a), "");
  t.release(a);  // a stale release is a no-op
  EXPECT_EQ(t.find("beta"), b);
  // A tenant that comes back gets a fresh id too.
  t.release(b);
  TenantId a2 = *t.acquire("acme");
  EXPECT_NE(a2, a);
}

TEST(TenantTable, IsBoundedAndCountsTheDefaultTenant) {
  TenantTable t(3);
  auto a = t.acquire("a");
  auto b = t.acquire("b");
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(t.acquire("c")) << "default + a + b fill a table of 3";
  EXPECT_EQ(t.acquire("a"), a) << "an existing tenant is still served";
  t.release(*a);
  t.release(*a);  // gone: room again
  EXPECT_TRUE(t.acquire("c"));
  EXPECT_EQ(t.size(), 3u);
}

TEST(TenantTable, NewSlotHookRunsForEachNewTenant) {
  TenantTable t(4);
  std::vector<std::uint32_t> slots;
  t.set_on_new_slot([&](std::uint32_t s) { slots.push_back(s); });
  TenantId a = *t.acquire("a");
  (void)t.acquire("a");
  t.release(a);
  t.release(a);
  TenantId b = *t.acquire("b");
  EXPECT_EQ(slots, (std::vector<std::uint32_t>{a.index, b.index}));
}

TEST(TenantTable, NamesCompareByBytes) {
  TenantTable t;
  std::set<TenantId> ids{*t.acquire("acme"), *t.acquire("Acme"), *t.acquire("acme "),
                         *t.acquire(std::string("ac\0me", 5))};
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(t.name(*t.find(std::string("ac\0me", 5))), std::string("ac\0me", 5));
}

TEST(TenantRef, ReleasesOnceWhenDestroyedOrReset) {
  TenantTable t;
  {
    TenantRef r(t, *t.acquire("acme"));
    TenantRef moved = std::move(r);
    EXPECT_FALSE(r.held());
    EXPECT_TRUE(moved.held());
    EXPECT_TRUE(t.find("acme"));
  }
  EXPECT_FALSE(t.find("acme"));
}

// Many threads take and give back references on overlapping names: ids agree while held,
// nothing leaks, and every entry is reclaimed at the end.
TEST(TenantTable, ConcurrentAcquireAndReleaseAgree) {
  TenantTable t(64);
  constexpr int kNames = 40, kThreads = 8, kRounds = 200;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937 rng(static_cast<unsigned>(th));
      for (int round = 0; round < kRounds; ++round) {
        std::string name = "tenant-" + std::to_string(rng() % kNames);
        auto id = t.acquire(name);
        if (!id) continue;  // table momentarily full of others' tenants: allowed
        if (t.name(*id) != name || t.find(name) != id) ++mismatches;
        t.release(*id);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(t.size(), 1u) << "every reference was given back";
}

}  // namespace
}  // namespace mcpfan

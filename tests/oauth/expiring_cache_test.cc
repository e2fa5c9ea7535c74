// The OAuth agent's bounded, expiring caches (oauth/expiring_cache.h): expiry by the caller's
// clock, the bound evicting the oldest put first, a replaced key counted once, and a max of 0.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "oauth/expiring_cache.h"

namespace mcpfan::detail::oauth {
namespace {

TEST(ExpiringCache, AnEntryIsKeptUntilItsTimeAndNotAfter) {
  ExpiringCache<int> c(4);
  c.put("a", 1, 100);
  EXPECT_EQ(c.get("a", 99), 1);
  EXPECT_FALSE(c.get("a", 100));
  EXPECT_FALSE(c.get("b", 0));
}

TEST(ExpiringCache, AFullCacheEvictsTheOldestPutAndAReplacedKeyCountsOnce) {
  ExpiringCache<int> c(3);
  c.put("a", 1, 1000);
  c.put("b", 2, 1000);
  c.put("a", 10, 1000);  // replaced: now the newest
  c.put("c", 3, 1000);
  EXPECT_EQ(c.size(), 3u);
  c.put("d", 4, 1000);  // evicts b, the oldest put
  EXPECT_EQ(c.size(), 3u);
  EXPECT_FALSE(c.get("b", 0));
  EXPECT_EQ(c.get("a", 0), 10);
  EXPECT_EQ(c.get("c", 0), 3);
  EXPECT_EQ(c.get("d", 0), 4);
}

TEST(ExpiringCache, AMaxOfZeroKeepsNothing) {
  ExpiringCache<int> c(0);
  c.put("a", 1, 1000);
  EXPECT_EQ(c.size(), 0u);
  EXPECT_FALSE(c.get("a", 0));
}

TEST(ExpiringCache, ThreadsPutAndGetAtOnceWithinTheBound) {
  ExpiringCache<std::string> c(64);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string key = std::to_string((t * 2000 + i) % 200);
        c.put(key, key, 1000);
        auto v = c.get(key, 0);
        if (v) {
          EXPECT_EQ(*v, key);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_LE(c.size(), 64u);
}

}  // namespace
}  // namespace mcpfan::detail::oauth

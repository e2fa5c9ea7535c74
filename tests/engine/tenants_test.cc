// Tests for engine/src/tenants.cc: tenant names interned to small ids.
#include "mcpfan/tenants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace mcpfan {
namespace {

TEST(TenantRegistry, DefaultTenantExists) {
  TenantRegistry reg;
  EXPECT_EQ(reg.size(), 1u);
  EXPECT_EQ(reg.name(kDefaultTenant), "default");
  EXPECT_EQ(reg.intern("default"), kDefaultTenant);
  EXPECT_EQ(reg.size(), 1u);
}

TEST(TenantRegistry, InternIsIdempotentAndDense) {
  TenantRegistry reg;
  TenantId acme = reg.intern("acme");
  TenantId beta = reg.intern("beta");
  EXPECT_NE(acme, beta);
  EXPECT_NE(acme, kDefaultTenant);
  EXPECT_EQ(reg.intern("acme"), acme);
  EXPECT_EQ((std::set<TenantId>{kDefaultTenant, acme, beta}), (std::set<TenantId>{0, 1, 2}));
  EXPECT_EQ(reg.name(acme), "acme");
  EXPECT_EQ(reg.name(beta), "beta");
  EXPECT_EQ(reg.size(), 3u);
  EXPECT_EQ(reg.name(99), "");
}

TEST(TenantRegistry, NamesCompareByBytes) {
  TenantRegistry reg;
  std::set<TenantId> ids{reg.intern("acme"), reg.intern("Acme"), reg.intern("acme "), reg.intern(std::string("ac\0me", 5))};
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(reg.name(reg.intern(std::string("ac\0me", 5))), std::string("ac\0me", 5));
}

TEST(TenantRegistry, ConcurrentInterningAgreesOnIds) {
  TenantRegistry reg;
  constexpr int kNames = 50, kThreads = 8;
  std::vector<std::map<std::string, TenantId>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<int> order(kNames);
      for (int i = 0; i < kNames; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
      for (int round = 0; round < 20; ++round) {
        for (int i : order) {
          std::string name = "tenant-" + std::to_string(i);
          TenantId id = reg.intern(name);
          auto [it, fresh] = seen[t].emplace(name, id);
          if (!fresh && it->second != id) ADD_FAILURE() << name << " changed id";
          (void)reg.name(id);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(reg.size(), std::size_t{kNames} + 1);
  std::set<TenantId> ids;
  for (const auto& [name, id] : seen[0]) {
    ids.insert(id);
    EXPECT_EQ(reg.name(id), name);
    for (int t = 1; t < kThreads; ++t) EXPECT_EQ(seen[t].at(name), id) << name;
  }
  EXPECT_EQ(ids.size(), std::size_t{kNames});
  EXPECT_EQ(*ids.begin(), 1u);
  EXPECT_EQ(*ids.rbegin(), TenantId{kNames});
}

}  // namespace
}  // namespace mcpfan

// The usage holders (transports/src/mcp/usage.h) and the client core's refusals
// (transports/src/mcp/client.h): what a client takes of its tenant's ceilings is given back
// exactly once, and each refusal is worded as every transport answers it.
#include <gtest/gtest.h>

#include "mcp/client.h"
#include "mcp/usage.h"

namespace mcpfan::detail {
namespace {

std::int64_t in_use(const Limits& l, TenantId t, Resource r) {
  return l.usage(t)->in_use[static_cast<std::size_t>(r)].load();
}

TEST(Usage, AStreamGivesBackItsSubscriptionsOnceAndMovesWithoutDoubleRelease) {
  TenantCeilings c;
  c.subscriptions = 5;
  Limits limits(c, 4);
  StreamUsage a;
  ASSERT_FALSE(StreamUsage::acquire(limits, kDefaultTenant, 3, a));
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Streams), 1);
  StreamUsage b;
  EXPECT_EQ(StreamUsage::acquire(limits, kDefaultTenant, 3, b), Limit::SubscriptionsPerTenant);
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Streams), 1);  // the refused stream was given back
  b = std::move(a);
  a.release();  // moved-from: nothing
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Subscriptions), 3);
  b.release();
  b.release();
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Streams), 0);
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Subscriptions), 0);
}

TEST(Usage, SessionUrisAreASetBoundedPerSessionAndCountedPerTenant) {
  Limits limits({}, 4);
  {
    SessionUris uris(limits, kDefaultTenant, 2);
    EXPECT_FALSE(uris.add("a"));
    EXPECT_FALSE(uris.add("a"));  // already there: not counted twice
    EXPECT_FALSE(uris.add("b"));
    EXPECT_EQ(uris.add("c"), Limit::UrisPerListen);
    EXPECT_EQ(limits.hits(Limit::UrisPerListen), 1u);
    EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Subscriptions), 2);
    EXPECT_TRUE(uris.remove("a"));
    EXPECT_FALSE(uris.remove("a"));
    EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Subscriptions), 1);
  }
  EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Subscriptions), 0);  // given back when the session goes
}

TEST(Usage, ABindingMovesBetweenTenantsAndRefusesPastTheCeiling) {
  TenantCeilings c;
  c.connections = 1;
  Limits limits(c, 4);
  TenantTable tenants(4);
  auto t1 = tenants.acquire("t1");
  ASSERT_TRUE(t1);
  {
    TenantBinding first(limits), second(limits);
    ASSERT_FALSE(first.bind(kDefaultTenant, {}));
    EXPECT_EQ(second.bind(kDefaultTenant, {}), Limit::ConnectionsPerTenant);
    ASSERT_FALSE(first.bind(*t1, TenantRef(tenants, *t1)));  // moves: the default tenant's slot is free again
    EXPECT_EQ(in_use(limits, kDefaultTenant, Resource::Connections), 0);
    EXPECT_FALSE(second.bind(kDefaultTenant, {}));
  }
  EXPECT_EQ(in_use(limits, *t1, Resource::Connections), 0);
}

TEST(ClientCore, RefusalsAreWordedOnceForEveryTransport) {
  TenantCeilings c;
  c.streams = 1;
  Limits limits(c, 4);
  TenantTable tenants(4);
  Swappable<ClientAuth> auth;
  AuthCounters counters;
  ClientAuthenticator no_host;
  ClientCore core(tenants, limits, auth, no_host, counters, 16, 256);

  Refusal uris = core.refusal(Limit::UrisPerListen, kDefaultTenant);
  EXPECT_EQ(uris.rpc_code, rpc_code::kInvalidParams);
  EXPECT_EQ(uris.http_status, 200);
  EXPECT_NE(uris.message.find("16"), std::string::npos);
  Refusal full = core.refusal(Limit::Tenants, Limits::kNoTenant);
  EXPECT_EQ(full.http_status, 503);
  EXPECT_TRUE(full.retry_after);
  EXPECT_EQ(full.rpc_code, rpc_code::kLimitExceeded);

  Caller caller;
  ListenSpec spec;
  spec.resource_uris = {"file:///a"};
  auto first = core.admit_listen(caller, spec, "1", false);
  ASSERT_TRUE(std::holds_alternative<ListenGrant>(first));
  ListenSpec again;
  auto second = core.admit_listen(caller, again, "2", false);
  ASSERT_TRUE(std::holds_alternative<Refusal>(second));
  EXPECT_EQ(std::get<Refusal>(second).http_status, 429);
  EXPECT_NE(std::get<Refusal>(second).message.find("1 streams"), std::string::npos);

  caller.identity = ClientIdentity{"t", {"file:///ok/"}, true, 0};
  ListenSpec forbidden;
  forbidden.resource_uris = {"file:///ok/x", "file:///secret"};
  auto refused = core.admit_listen(caller, forbidden, "3", false);
  ASSERT_TRUE(std::holds_alternative<Refusal>(refused));
  EXPECT_EQ(std::get<Refusal>(refused).http_status, 403);
  EXPECT_NE(std::get<Refusal>(refused).message.find("file:///secret"), std::string::npos);
  EXPECT_EQ(forbidden.resource_uris.size(), 2u);  // not consumed when refused
  EXPECT_EQ(counters.client_forbidden_uri.load(), 1u);
}

}  // namespace
}  // namespace mcpfan::detail

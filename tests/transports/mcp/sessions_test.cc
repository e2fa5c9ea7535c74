// SessionRegistry (transports/src/mcp/sessions.h): expiry in last-use order, the idle
// ceilings, the one-stream claim, and its two-level locking under concurrent use.
#include "mcp/sessions.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace mcpfan::detail {
namespace {

constexpr TenantId kTenant = kDefaultTenant;

struct Fixture {
  explicit Fixture(std::size_t max_idle = 1000, TenantCeilings ceilings = {})
      : limits(ceilings, 4), reg(limits, max_idle, 8) {}
  std::shared_ptr<Session> make(std::uint64_t now) {
    std::optional<Limit> refused;
    StreamUsage usage;
    EXPECT_FALSE(StreamUsage::acquire(limits, kTenant, 0, usage));
    return reg.create(kTenant, "2025-06-18", now, {}, std::move(usage), refused);
  }
  std::int64_t in_use(Resource r) const { return limits.usage(kTenant)->in_use[static_cast<std::size_t>(r)].load(); }
  Limits limits;
  SessionRegistry reg;
};

TEST(Sessions, ExpiryFollowsLastUseNotCreation) {
  Fixture f;
  auto a = f.make(0), b = f.make(10), c = f.make(20);
  ASSERT_TRUE(a && b && c);
  ASSERT_EQ(f.reg.find(a->id, 90), a);  // used last: must outlive b and c
  EXPECT_EQ(f.reg.expire(100, 80), 2u);
  EXPECT_TRUE(b->ended.load());
  EXPECT_TRUE(c->ended.load());
  EXPECT_FALSE(a->ended.load());
  EXPECT_EQ(f.reg.size(), 1u);
  EXPECT_EQ(f.reg.idle(), 1u);
  EXPECT_EQ(f.reg.expire(169, 80), 0u);
  EXPECT_EQ(f.reg.expire(170, 80), 1u);
  EXPECT_EQ(f.reg.size(), 0u);
  EXPECT_EQ(f.in_use(Resource::IdleSessions), 0);
}

// Workers stamp sessions with their own loop clocks; the expiring worker's may lag behind.
TEST(Sessions, AStampAheadOfTheExpiringClockIsNotExpired) {
  Fixture f;
  auto s = f.make(1000);
  EXPECT_EQ(f.reg.expire(999, 10), 0u);  // 999 - 1000 would wrap to 2^64 - 1 ms of idleness
  EXPECT_FALSE(s->ended.load());
  EXPECT_EQ(f.reg.expire(1010, 10), 1u);
}

TEST(Sessions, ASessionWithAStreamNeverExpiresAndIsIdleAgainWhenItCloses) {
  Fixture f;
  auto s = f.make(0);
  ASSERT_EQ(f.reg.claim_stream(*s), SessionRegistry::Claim::Ok);
  EXPECT_EQ(f.reg.claim_stream(*s), SessionRegistry::Claim::Busy);
  EXPECT_EQ(f.reg.idle(), 0u);
  EXPECT_EQ(f.in_use(Resource::IdleSessions), 0);
  EXPECT_EQ(f.reg.expire(1'000'000, 10), 0u);
  f.reg.stream_closed(*s, 1'000'000);
  EXPECT_EQ(f.reg.idle(), 1u);
  EXPECT_EQ(f.in_use(Resource::IdleSessions), 1);
  EXPECT_EQ(f.reg.expire(1'000'009, 10), 0u);  // its idle clock started when the stream closed
  EXPECT_EQ(f.reg.expire(1'000'010, 10), 1u);
  EXPECT_EQ(f.reg.claim_stream(*s), SessionRegistry::Claim::Ended);
}

TEST(Sessions, TheIdleCeilingCountsOnlySessionsWithoutAStream) {
  Fixture f(/*max_idle=*/2);
  auto a = f.make(0), b = f.make(0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(f.make(0), nullptr);
  EXPECT_EQ(f.limits.hits(Limit::IdleSessions), 1u);
  ASSERT_EQ(f.reg.claim_stream(*a), SessionRegistry::Claim::Ok);
  auto c = f.make(0);  // a's stream made room
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(f.in_use(Resource::Streams), 3);  // every session holds its stream, idle or not
  (void)f.reg.erase(a->id);
  a.reset();
  (void)f.reg.erase(b->id);
  b.reset();
  (void)f.reg.erase(c->id);
  c.reset();
  EXPECT_EQ(f.in_use(Resource::Streams), 0);  // given back with the last reference
  EXPECT_EQ(f.in_use(Resource::IdleSessions), 0);
}

TEST(Sessions, ThePerTenantIdleCeilingRefusesAndNothingLeaks) {
  TenantCeilings ceilings;
  ceilings.idle_sessions = 1;
  Fixture f(1000, ceilings);
  auto a = f.make(0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(f.make(0), nullptr);
  EXPECT_EQ(f.limits.hits(Limit::IdleSessionsPerTenant), 1u);
  EXPECT_EQ(f.in_use(Resource::Streams), 1);  // the refused one's stream was given back
}

// Workers change their own sessions' URIs (session locks) while another expires and erases
// (registry lock) and streams open and close: run under ThreadSanitizer by the test command.
TEST(Sessions, ConcurrentUriChangesStreamsAndExpiryStayConsistent) {
  Fixture f(100000);
  constexpr int kThreads = 3, kSessionsEach = 50, kRounds = 200;
  std::vector<std::shared_ptr<Session>> sessions;
  for (int i = 0; i < kThreads * kSessionsEach; ++i) sessions.push_back(f.make(0));
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> clock{1};
  std::thread expirer([&] {
    while (!done.load()) (void)f.reg.expire(clock.load(), 1u << 30);  // nothing is due: the walk stops at once
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kSessionsEach; ++i) {
          Session& s = *sessions[static_cast<std::size_t>(t * kSessionsEach + i)];
          std::string uri = "file:///" + std::to_string(round % 4);
          {
            std::lock_guard lock(s.mu);
            if (round % 2 == 0) (void)s.uris.add(uri);
            else s.uris.remove("file:///" + std::to_string((round - 1) % 4));
          }
          auto now = clock.fetch_add(1);
          (void)f.reg.find(s.id, now);
          if (f.reg.claim_stream(s) == SessionRegistry::Claim::Ok) f.reg.stream_closed(s, now);
        }
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  expirer.join();
  std::int64_t uris = 0;
  for (auto& s : sessions) {
    std::lock_guard lock(s->mu);
    uris += static_cast<std::int64_t>(s->uris.set().size());
  }
  EXPECT_EQ(f.in_use(Resource::Subscriptions), uris);
  EXPECT_EQ(f.reg.idle(), sessions.size());
  EXPECT_EQ(f.reg.expire(clock.load() + (1u << 30), 1u << 30), sessions.size());
  EXPECT_EQ(f.in_use(Resource::IdleSessions), 0);
}

}  // namespace
}  // namespace mcpfan::detail

// Poll-to-push's owners of the tasks it polls (transports/src/mcp/task_owners.h): a task is
// watched only by its creator's principal within its tenant, owners expire at the task's TTL,
// and the table is bounded (a claim past it is refused, counted).
#include "mcp/task_owners.h"

#include <gtest/gtest.h>

namespace mcpfan::detail {
namespace {

using namespace std::chrono_literals;
using Clock = TaskOwners::Clock;

TEST(TaskOwners, OnlyTheCreatorsPrincipalInItsTenantMayWatch) {
  TaskOwners owners(10);
  Clock::time_point t0 = Clock::now();
  ASSERT_EQ(owners.claim("acme", "task-1", "alice", 60s, t0), TaskOwners::Claim::Claimed);
  EXPECT_TRUE(owners.may_watch("acme", "task-1", "alice", t0));
  EXPECT_FALSE(owners.may_watch("acme", "task-1", "bob", t0));
  EXPECT_FALSE(owners.may_watch("acme", "task-1", "", t0)) << "a token without sub is not the creator";
  // Another tenant's task of the same id is not this one: nothing is recorded for it.
  EXPECT_TRUE(owners.may_watch("globex", "task-1", "bob", t0));
  // Ids nobody polls are not judged here.
  EXPECT_TRUE(owners.may_watch("acme", "task-2", "bob", t0));
  EXPECT_EQ(owners.stats().withheld, 2u);
}

TEST(TaskOwners, AnotherPrincipalCannotTakeATaskOver) {
  TaskOwners owners(10);
  Clock::time_point t0 = Clock::now();
  ASSERT_EQ(owners.claim("acme", "task-1", "alice", 60s, t0), TaskOwners::Claim::Claimed);
  EXPECT_EQ(owners.claim("acme", "task-1", "bob", 60s, t0), TaskOwners::Claim::Taken);
  EXPECT_EQ(owners.claim("acme", "task-1", "alice", 60s, t0), TaskOwners::Claim::Claimed) << "the owner renews";
  EXPECT_FALSE(owners.may_watch("acme", "task-1", "bob", t0));
}

TEST(TaskOwners, OwnersExpireAtTheTasksTtl) {
  TaskOwners owners(10);
  Clock::time_point t0 = Clock::now();
  ASSERT_EQ(owners.claim("acme", "task-1", "alice", 100ms, t0), TaskOwners::Claim::Claimed);
  EXPECT_FALSE(owners.may_watch("acme", "task-1", "bob", t0 + 99ms));
  EXPECT_TRUE(owners.may_watch("acme", "task-1", "bob", t0 + 100ms));
  EXPECT_EQ(owners.stats().owners, 0u);
  // A renewal moves the expiry: the first (stale) heap item does not drop the owner.
  ASSERT_EQ(owners.claim("acme", "task-2", "alice", 100ms, t0), TaskOwners::Claim::Claimed);
  ASSERT_EQ(owners.claim("acme", "task-2", "alice", 300ms, t0 + 50ms), TaskOwners::Claim::Claimed);
  EXPECT_FALSE(owners.may_watch("acme", "task-2", "bob", t0 + 200ms));
  EXPECT_TRUE(owners.may_watch("acme", "task-2", "bob", t0 + 350ms));
}

TEST(TaskOwners, TheTableIsBoundedAndCounted) {
  TaskOwners owners(2);
  Clock::time_point t0 = Clock::now();
  EXPECT_EQ(owners.claim("acme", "a", "alice", 100ms, t0), TaskOwners::Claim::Claimed);
  EXPECT_EQ(owners.claim("acme", "b", "alice", 60s, t0), TaskOwners::Claim::Claimed);
  EXPECT_EQ(owners.claim("acme", "c", "alice", 60s, t0), TaskOwners::Claim::Full);
  EXPECT_EQ(owners.stats().refused_full, 1u);
  EXPECT_EQ(owners.stats().owners, 2u);
  // Once one expires, there is room again.
  EXPECT_EQ(owners.claim("acme", "c", "alice", 60s, t0 + 100ms), TaskOwners::Claim::Claimed);
}

}  // namespace
}  // namespace mcpfan::detail

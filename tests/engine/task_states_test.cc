// Tests for engine/src/task_states.cc: the newest state of each task, kept for late listeners,
// with every bound counted. Time is passed in, so expiry is tested without waiting.
#include "mcpfan/task_states.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "test_sink.h"

namespace mcpfan {
namespace {

using Clock = TaskStates::Clock;
using std::chrono::milliseconds;

TaskState state(std::string tenant, std::string_view id, std::string_view status,
                std::optional<std::uint64_t> ttl_ms = 60000) {
  TaskState s;
  s.tenant = std::move(tenant);
  s.payload = test::make_task(id, status);
  s.ttl_ms = ttl_ms;
  s.terminal = status == "completed";
  return s;
}

TEST(TaskStates, KeepsTheNewestStatePerTenantAndTask) {
  TaskStates states;
  const auto t0 = Clock::now();
  states.put(state("acme", "t1", "working"), t0);
  TaskState done = state("acme", "t1", "completed");
  const Payload* newest = done.payload.get();
  states.put(std::move(done), t0);
  states.put(state("beta", "t1", "working"), t0);
  EXPECT_EQ(states.find("acme", "t1", t0).get(), newest);
  ASSERT_TRUE(states.find("beta", "t1", t0));
  EXPECT_NE(states.find("beta", "t1", t0).get(), newest) << "tenants never share a task";
  EXPECT_FALSE(states.find("acme", "t2", t0));
  EXPECT_FALSE(states.find("gamma", "t1", t0));
  auto st = states.stats();
  EXPECT_EQ(st.tasks, 2u);
  EXPECT_EQ(st.stored, 2u);
  EXPECT_EQ(st.replaced, 1u);
}

TEST(TaskStates, AStateExpiresAtItsTtlCappedByTheLimit) {
  TaskStateLimits limits;
  limits.max_ttl_ms = 10000;
  TaskStates states(limits);
  const auto t0 = Clock::now();
  states.put(state("acme", "short", "working", 1000), t0);
  states.put(state("acme", "long", "working", 3600000), t0);       // capped at 10 s
  states.put(state("acme", "unlimited", "working", std::nullopt), t0);  // ttlMs null: the cap
  EXPECT_TRUE(states.find("acme", "short", t0 + milliseconds(999)));
  EXPECT_FALSE(states.find("acme", "short", t0 + milliseconds(1000)));
  EXPECT_TRUE(states.find("acme", "long", t0 + milliseconds(9999)));
  EXPECT_FALSE(states.find("acme", "long", t0 + milliseconds(10000)));
  EXPECT_FALSE(states.find("acme", "unlimited", t0 + milliseconds(10000)));
  auto st = states.stats();
  EXPECT_EQ(st.expired, 3u);
  EXPECT_EQ(st.tasks, 0u);
  EXPECT_EQ(st.bytes, 0u);
}

TEST(TaskStates, AReplacedStateLivesFromItsOwnPut) {
  TaskStates states;
  const auto t0 = Clock::now();
  states.put(state("acme", "t1", "working", 1000), t0);
  states.put(state("acme", "t1", "working", 1000), t0 + milliseconds(900));
  EXPECT_TRUE(states.find("acme", "t1", t0 + milliseconds(1500))) << "the old expiry must not take the new state";
  EXPECT_FALSE(states.find("acme", "t1", t0 + milliseconds(1900)));
}

TEST(TaskStates, ATenantPastItsBoundKeepsItsTasksAndRefusesNewOnes) {
  TaskStateLimits limits;
  limits.max_per_tenant = 2;
  TaskStates states(limits);
  const auto t0 = Clock::now();
  states.put(state("acme", "a", "working"), t0);
  states.put(state("acme", "b", "working"), t0);
  states.put(state("acme", "c", "working"), t0);  // refused
  states.put(state("acme", "a", "completed"), t0);  // a kept task still moves
  states.put(state("beta", "c", "working"), t0);  // another tenant has its own bound
  EXPECT_FALSE(states.find("acme", "c", t0));
  EXPECT_TRUE(states.find("acme", "a", t0));
  EXPECT_TRUE(states.find("beta", "c", t0));
  EXPECT_EQ(states.stats().refused_tenant_full, 1u);
}

TEST(TaskStates, PastTheTotalBoundTheStateThatExpiresFirstMakesRoom) {
  TaskStateLimits limits;
  limits.max_tasks = 2;
  TaskStates states(limits);
  const auto t0 = Clock::now();
  states.put(state("acme", "soon", "working", 1000), t0);
  states.put(state("beta", "later", "working", 50000), t0);
  states.put(state("gamma", "new", "working", 20000), t0);
  EXPECT_FALSE(states.find("acme", "soon", t0));
  EXPECT_TRUE(states.find("beta", "later", t0));
  EXPECT_TRUE(states.find("gamma", "new", t0));
  auto st = states.stats();
  EXPECT_EQ(st.evicted, 1u);
  EXPECT_EQ(st.tasks, 2u);
}

TEST(TaskStates, TheByteBoundEvictsAndAStateLargerThanAllIsNotKept) {
  TaskState probe = state("acme", "x", "working");
  const std::size_t one = probe.payload->frame_size(Framing::Sse) + probe.payload->plain(Framing::Sse).size() + 1 +
                          4;  // both encodings + task id + tenant
  TaskStateLimits limits;
  limits.max_bytes = 2 * one + one / 2;
  TaskStates states(limits);
  const auto t0 = Clock::now();
  states.put(state("acme", "a", "working", 1000), t0);
  states.put(state("acme", "b", "working", 2000), t0);
  states.put(state("acme", "c", "working", 3000), t0);  // over the bytes: "a" (first to expire) goes
  EXPECT_FALSE(states.find("acme", "a", t0));
  EXPECT_TRUE(states.find("acme", "b", t0));
  EXPECT_TRUE(states.find("acme", "c", t0));
  EXPECT_LE(states.stats().bytes, limits.max_bytes);
  EXPECT_EQ(states.stats().evicted, 1u);

  TaskStateLimits tiny;
  tiny.max_bytes = 8;
  TaskStates small(tiny);
  small.put(state("acme", "a", "working"), t0);
  EXPECT_FALSE(small.find("acme", "a", t0));
  EXPECT_EQ(small.stats().refused_too_big, 1u);
}

TEST(TaskStates, AZeroBoundKeepsNothing) {
  TaskStateLimits none;
  none.max_tasks = 0;
  TaskStates off(none);
  off.put(state("acme", "t1", "working"));
  EXPECT_FALSE(off.find("acme", "t1"));
  TaskStateLimits per_tenant;
  per_tenant.max_per_tenant = 0;
  TaskStates refused(per_tenant);
  refused.put(state("acme", "t1", "working"));
  EXPECT_FALSE(refused.find("acme", "t1"));
  EXPECT_EQ(refused.stats().refused_tenant_full, 1u);
}

TEST(TaskStates, ForgetDropsOnlyTheStateItNames) {
  TaskStates states;
  TaskState first = state("acme", "t1", "working");
  const Payload* refused = first.payload.get();
  states.put(std::move(first));
  states.forget("acme", refused);
  EXPECT_FALSE(states.find("acme", "t1"));
  // A newer state put meanwhile is not the refused one: it stays.
  TaskState a = state("acme", "t2", "working");
  const Payload* old = a.payload.get();
  PayloadRef keep_alive = a.payload;
  states.put(std::move(a));
  states.put(state("acme", "t2", "completed"));
  states.forget("acme", old);
  EXPECT_TRUE(states.find("acme", "t2"));
}

TEST(TaskStates, ManyUpdatesOfFewTasksKeepOneStateEachThatStillExpires) {
  TaskStates states;
  const auto t0 = Clock::now();
  for (int i = 0; i < 10000; ++i) states.put(state("acme", "t" + std::to_string(i % 3), "working"), t0);
  EXPECT_EQ(states.stats().tasks, 3u);
  EXPECT_EQ(states.stats().replaced, 10000u - 3u);
  // The expiry queue is rebuilt as replaced states pile up; every task must still expire.
  EXPECT_FALSE(states.find("acme", "t0", t0 + milliseconds(60000)));
  EXPECT_EQ(states.stats().tasks, 0u);
}

TEST(TaskStates, ThreadsPutAndFindConcurrently) {
  TaskStateLimits limits;
  limits.max_tasks = 500;
  TaskStates states(limits);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string tenant = "tenant" + std::to_string(t);
        states.put(state(tenant, "task" + std::to_string(i % 300), "working"));
        (void)states.find(tenant, "task" + std::to_string((i * 7) % 300));
      }
    });
  }
  for (auto& th : threads) th.join();
  auto st = states.stats();
  EXPECT_LE(st.tasks, 500u);
  EXPECT_EQ(st.stored, st.tasks + st.evicted + st.expired);
}

}  // namespace
}  // namespace mcpfan

// The outage bound (--nats-outage-buffer-bytes; docs/operations.md "Outage policy") is a reservation taken when a
// publish is admitted (Backplane::can_take) and carried by each Notification until it is sent
// or suppressed. Two admissions checked at the same moment, or an update the debouncer holds,
// can no longer pass it. The backplane here never reaches a NATS server (nothing listens on
// port 1), so everything it forwards waits in its outage queue.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "mcpfan/hub.h"
#include "nats/backplane.h"

namespace mcpfan::detail::nats {
namespace {

constexpr int kBound = 16 * 1024;

std::vector<Notification> One(std::string uri) {
  std::vector<Notification> v;
  v.push_back(Notification{{}, Kind::ResourceUpdated, "acme", std::move(uri), std::string(6000, 'm'), {}});
  return v;
}

std::unique_ptr<Backplane> Unreachable(Hub& hub, int bound = kBound) {
  BackplaneConfig c;
  c.nats.urls = "nats://127.0.0.1:1";
  c.nats.node_name = "outage-budget-test";
  c.nats.outage_buffer_bytes = bound;
  auto b = Backplane::start(std::move(c), hub);
  if (!b) ADD_FAILURE() << b.error().message;
  return b ? std::move(b.value()) : nullptr;
}

TEST(OutageBudget, AdmissionsCheckedTogetherCannotPassTheBound) {
  Hub hub(1);
  auto bp = Unreachable(hub);
  ASSERT_TRUE(bp);
  ASSERT_FALSE(bp->connected());
  // Each fits alone (6,000 bytes and a subject of the 16 KiB); both together: only twice.
  auto a = One("mem://a"), b = One("mem://b"), c = One("mem://c");
  ASSERT_TRUE(bp->can_take(a));
  ASSERT_TRUE(bp->can_take(b));
  EXPECT_FALSE(bp->can_take(c)) << "admitted before anything was forwarded, and still past the bound";
  bp->forward(a);
  bp->forward(b);
  if (bp->can_take(c)) bp->forward(c);  // the old check let this one in: the queue then passed the bound
  Backplane::Stats s = bp->stats();
  EXPECT_EQ(s.queued, 2u);
  EXPECT_LE(s.held_bytes, kBound);
  EXPECT_EQ(s.refused, 2u);
}

TEST(OutageBudget, AnAdmittedNotificationThatIsDroppedGivesItsBytesBack) {
  Hub hub(1);
  auto bp = Unreachable(hub);
  ASSERT_TRUE(bp);
  {
    auto a = One("mem://a");
    ASSERT_TRUE(bp->can_take(a));
    EXPECT_GT(bp->stats().held_bytes, 6000);
  }  // never published (the hub refused it, say): destroyed, so released
  EXPECT_EQ(bp->stats().held_bytes, 0);
}

TEST(OutageBudget, WhatTheDebouncerHoldsCountsAndASuppressedUpdateGivesItsBytesBack) {
  Hub hub(1);
  hub.set_debounce(std::chrono::hours(1));
  constexpr int kThree = 3 * 6400;  // room for three of these notifications, not four
  auto bp = Unreachable(hub, kThree);
  ASSERT_TRUE(bp);
  hub.set_forwarder([p = bp.get()](std::vector<Notification>& n) { p->forward(n); });
  auto publish = [&](const char* uri) {
    auto n = One(uri);
    if (!bp->can_take(n)) return false;
    EXPECT_TRUE(hub.publish(std::move(n)));
    return true;
  };
  ASSERT_TRUE(publish("mem://k"));  // out at once: queued
  ASSERT_TRUE(publish("mem://k"));  // held by the debouncer, its bytes reserved
  EXPECT_EQ(bp->stats().queued, 1u);
  const std::int64_t two = bp->stats().held_bytes;
  ASSERT_TRUE(publish("mem://k"));  // replaces the held one, whose bytes come back
  EXPECT_EQ(bp->stats().held_bytes, two);
  ASSERT_TRUE(publish("mem://j"));  // out at once: the third
  EXPECT_FALSE(publish("mem://i")) << "the held update counts against the bound";
  hub.close();  // the held update goes out (to the queue) with its reservation
  Backplane::Stats s = bp->stats();
  EXPECT_EQ(s.queued, 3u);
  EXPECT_LE(s.held_bytes, kThree);
  EXPECT_GT(s.held_bytes, two);
}

}  // namespace
}  // namespace mcpfan::detail::nats

// Bounded worker inboxes (docs/operations.md "Worker inboxes"): every shard inbox has a bound (ShardOptions::max_inbox)
// and a counter (ShardStats::inbox_full). A local publish into a full inbox is refused whole, before anything is
// delivered (Hub::publish false, closed() false, refused_full counted); a message from another node is posted nowhere
// (Hub::Delivery::InboxFull) and its receive-budget hold is given back; what the debouncer decided earlier is dropped
// where the inbox is full.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "mcpfan/hub.h"
#include "mcpfan/shard.h"
#include "test_sink.h"

namespace mcpfan {
namespace {

using test::make_update;

ShardOptions Bound(std::size_t n) {
  ShardOptions o;
  o.max_inbox = n;
  return o;
}

void DrainAll(Shard& s) {
  for (int i = 0; i < 100 && s.drain(); ++i) {
  }
}

TEST(ShardInbox, HoldsAtMostItsBoundAndCountsWhatDidNotFit) {
  Shard shard(Bound(3));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(shard.post(make_update("file:///x")));
  EXPECT_FALSE(shard.post(make_update("file:///x")));
  PayloadRef two[] = {make_update("file:///a"), make_update("file:///b")};
  EXPECT_FALSE(shard.post_bulk(two, 2)) << "all or nothing";
  EXPECT_EQ(shard.inbox_depth(), 3u);
  EXPECT_EQ(shard.stats().inbox_full.load(), 3u);
  // Tasks are control messages: never refused.
  bool ran = false;
  shard.post_task([&] { ran = true; });
  DrainAll(shard);
  EXPECT_TRUE(ran);
  EXPECT_EQ(shard.inbox_depth(), 0u) << "drained room is given back";
  EXPECT_EQ(shard.stats().payloads.load(), 4u);
  EXPECT_TRUE(shard.post_bulk(two, 2));
  EXPECT_EQ(shard.inbox_depth(), 2u);
}

TEST(ShardInbox, ReserveIsAllOrNothingAndUnreserveGivesRoomBack) {
  Shard shard(Bound(4));
  ASSERT_TRUE(shard.reserve(3));
  EXPECT_FALSE(shard.reserve(2));
  EXPECT_EQ(shard.inbox_depth(), 3u);
  shard.unreserve(3);
  EXPECT_TRUE(shard.reserve(4));
  shard.unreserve(4);
  EXPECT_EQ(shard.inbox_depth(), 0u);
}

TEST(ShardInbox, ALocalPublishIntoAFullInboxIsRefusedWholeBeforeAnythingIsDelivered) {
  Hub hub(2, Bound(2));
  ASSERT_TRUE(hub.publish(make_update("file:///1")));
  ASSERT_TRUE(hub.publish(make_update("file:///2")));
  EXPECT_FALSE(hub.publish(make_update("file:///3")));
  EXPECT_FALSE(hub.closed()) << "refused for a full inbox, not because it closed";
  EXPECT_FALSE(hub.publish(std::vector<PayloadRef>{make_update("file:///4"), make_update("file:///5")}));
  EXPECT_EQ(hub.refused_full(), 2u);
  EXPECT_EQ(hub.shard(0).inbox_depth(), 2u);
  EXPECT_EQ(hub.shard(1).inbox_depth(), 2u);
  DrainAll(hub.shard(0));
  // Shard 1 is still full: refused whole, so shard 0 (room again) gets nothing either.
  EXPECT_FALSE(hub.publish(make_update("file:///6")));
  EXPECT_EQ(hub.shard(0).inbox_depth(), 0u);
  DrainAll(hub.shard(1));
  EXPECT_TRUE(hub.publish(make_update("file:///7")));
  EXPECT_EQ(hub.published(), 3u);
}

TEST(ShardInbox, AMessageFromAnotherNodeIsPostedNowhereAndItsHoldGivenBack) {
  Hub hub(2, Bound(1));
  ASSERT_TRUE(hub.publish(make_update("file:///1")));
  DrainAll(hub.shard(1));  // only shard 0 is full
  auto hold = std::make_shared<int>(0);
  std::weak_ptr<int> watch = hold;
  EXPECT_EQ(hub.deliver_forwarded(make_update("file:///remote"), std::move(hold)), Hub::Delivery::InboxFull);
  EXPECT_TRUE(watch.expired()) << "the receive budget's bytes come back at once";
  EXPECT_EQ(hub.shard(1).inbox_depth(), 0u) << "posted nowhere";
  DrainAll(hub.shard(0));
  auto hold2 = std::make_shared<int>(0);
  std::weak_ptr<int> watch2 = hold2;
  EXPECT_EQ(hub.deliver_forwarded(make_update("file:///remote"), std::move(hold2)), Hub::Delivery::Posted);
  EXPECT_FALSE(watch2.expired()) << "held while queued";
  DrainAll(hub.shard(0));
  EXPECT_FALSE(watch2.expired()) << "shard 1 has not matched it yet";
  DrainAll(hub.shard(1));
  EXPECT_TRUE(watch2.expired()) << "the last shard to match it gives the hold back";
}

// Hub::deliver_forwarded(batch), the backplane's receive on its loop: each item's result is what
// deliver_forwarded() would say for it, in order, and every shard posted to wakes once per batch.
TEST(ShardInbox, ABatchFromAnotherNodeWakesEachShardOnceAndSaysWhatBecameOfEachItem) {
  Hub hub(2, Bound(3));
  int wakes[2] = {0, 0};
  for (std::size_t i = 0; i < hub.shard_count(); ++i) {
    hub.shard(i).set_waker([](void* n) { ++*static_cast<int*>(n); }, &wakes[i]);
  }
  ASSERT_TRUE(hub.publish(make_update("file:///local")));  // one of each inbox's 3 places
  wakes[0] = wakes[1] = 0;
  std::vector<Hub::Forwarded> batch;
  std::vector<std::weak_ptr<int>> watch;
  for (int i = 0; i < 3; ++i) {
    auto hold = std::make_shared<int>(i);
    watch.push_back(hold);
    batch.push_back(Hub::Forwarded{make_update("file:///r" + std::to_string(i)), std::move(hold)});
  }
  hub.deliver_forwarded(batch);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch[0].result, Hub::Delivery::Posted);
  EXPECT_EQ(batch[1].result, Hub::Delivery::Posted);
  EXPECT_EQ(batch[2].result, Hub::Delivery::InboxFull) << "the inboxes held 3: posted nowhere";
  EXPECT_EQ(wakes[0], 1) << "one wake-up for the whole batch";
  EXPECT_EQ(wakes[1], 1);
  EXPECT_FALSE(batch[0].payload) << "moved into the shards";
  EXPECT_FALSE(watch[0].expired()) << "held while queued";
  EXPECT_TRUE(watch[2].expired()) << "not posted: its hold is given back at once";
  EXPECT_EQ(hub.published(), 3u);
  DrainAll(hub.shard(0));
  DrainAll(hub.shard(1));
  EXPECT_TRUE(watch[0].expired() && watch[1].expired()) << "the last shard to match each gives its hold back";
  EXPECT_EQ(hub.shard(0).stats().payloads.load(), 3u) << "in order, with the local one";
  hub.close();
  std::vector<Hub::Forwarded> late;
  late.push_back(Hub::Forwarded{make_update("file:///late"), nullptr});
  hub.deliver_forwarded(late);
  EXPECT_EQ(late[0].result, Hub::Delivery::Closed);
  EXPECT_EQ(wakes[0], 1) << "nothing posted after close()";
}

TEST(ShardInbox, WhatTheDebouncerDecidedIsDroppedWhereTheInboxIsFullAndCounted) {
  Hub hub(1, Bound(1));
  hub.set_debounce(std::chrono::hours(1));
  ASSERT_TRUE(hub.publish(make_update("file:///a")));  // out at once: fills the inbox
  ASSERT_TRUE(hub.publish(make_update("file:///b")));  // out at once too: no room, dropped
  EXPECT_EQ(hub.shard(0).inbox_depth(), 1u);
  EXPECT_EQ(hub.shard(0).stats().inbox_full.load(), 1u);
  hub.close();
}

}  // namespace
}  // namespace mcpfan

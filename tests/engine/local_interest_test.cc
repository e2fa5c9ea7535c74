// LocalInterest and the Hub's interest-aware dispatch (docs/design.md §7): a publish is
// posted only to the shards holding a subscription it may match, never missing one.
#include "mcpfan/local_interest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "mcpfan/hub.h"
#include "test_sink.h"

namespace mcpfan {
namespace {

std::vector<std::size_t> Shards(const LocalInterest& li, TenantId t, Kind k, std::string_view uri, std::size_t n) {
  ShardSet s(n);
  li.shards_for(t, k, uri, s);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (s.test(i)) out.push_back(i);
  }
  return out;
}

TEST(LocalInterest, ExactPrefixAndListKeysNameTheirShards) {
  LocalInterest li(70);  // more than one word of shards
  li.add(1, kDefaultTenant, Kind::ResourceUpdated, "file:///a/b.txt");
  li.add(65, kDefaultTenant, Kind::ResourceUpdated, "file:///a/");
  li.add(3, kDefaultTenant, Kind::ToolsListChanged, "");
  using V = std::vector<std::size_t>;
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "file:///a/b.txt", 70), (V{1, 65}));
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "file:///a/c/d", 70), (V{65}));
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "file:///a/", 70), (V{65}));
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "file:///b", 70), (V{}));
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ToolsListChanged, "", 70), (V{3}));
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::PromptsListChanged, "", 70), (V{}));
  EXPECT_EQ(Shards(li, TenantId{5, 1}, Kind::ToolsListChanged, "", 70), (V{})) << "another tenant";
}

TEST(LocalInterest, CountsPerShardAndReservationsStack) {
  LocalInterest li(2);
  li.add(0, kDefaultTenant, Kind::ResourceUpdated, "u");
  li.reserve(0, kDefaultTenant, Kind::ResourceUpdated, "u");
  li.remove(0, kDefaultTenant, Kind::ResourceUpdated, "u");
  EXPECT_EQ(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "u", 2), (std::vector<std::size_t>{0}));
  li.unreserve(0, kDefaultTenant, Kind::ResourceUpdated, "u");
  EXPECT_TRUE(Shards(li, kDefaultTenant, Kind::ResourceUpdated, "u", 2).empty());
  EXPECT_EQ(li.keys(), 0u);
  li.remove(1, kDefaultTenant, Kind::ResourceUpdated, "never");  // ignored
  EXPECT_EQ(li.keys(), 0u);
}

TEST(LocalInterest, ASnapshotListsEachHeldKeyOnceWithItsTenantKindAndUri) {
  LocalInterest li(3);
  const TenantId other{7, 2};
  li.add(0, kDefaultTenant, Kind::ResourceUpdated, "file:///a/");
  li.add(2, kDefaultTenant, Kind::ResourceUpdated, "file:///a/");  // two shards, one key
  li.add(1, other, Kind::ToolsListChanged, "");
  li.add(1, other, Kind::ResourceUpdated, "gone");
  li.remove(1, other, Kind::ResourceUpdated, "gone");
  auto keys = li.snapshot();
  ASSERT_EQ(keys.size(), 2u);
  std::sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) { return a.uri < b.uri; });
  EXPECT_EQ(keys[0].tenant, other);
  EXPECT_EQ(keys[0].kind, Kind::ToolsListChanged);
  EXPECT_EQ(keys[0].uri, "");
  EXPECT_EQ(keys[1].tenant, kDefaultTenant);
  EXPECT_EQ(keys[1].kind, Kind::ResourceUpdated);
  EXPECT_EQ(keys[1].uri, "file:///a/");
}

// With routing, a shard with no matching subscription is neither posted to nor woken; a shard
// with one gets every matching publish.
TEST(HubRouting, APublishWakesOnlyTheShardsThatMayMatch) {
  Hub hub(4);
  hub.route_by_interest();
  std::atomic<int> wakes[4] = {0, 0, 0, 0};
  for (std::size_t i = 0; i < 4; ++i) {
    hub.shard(i).set_waker([](void* n) { static_cast<std::atomic<int>*>(n)->fetch_add(1); }, &wakes[i]);
  }
  Shard& s2 = hub.shard(2);
  test::RecordingSink sink(s2);
  StreamId st = s2.open_stream(&sink, Framing::Line);
  Filter f;
  f.tenant = kDefaultTenant;
  f.uris = {"mem://p/"};
  (void)s2.subscribe(st, f, "\"s\"");
  ASSERT_TRUE(hub.publish(test::make_update("mem://p/x")));
  ASSERT_TRUE(hub.publish(test::make_update("mem://q")));  // nobody
  ASSERT_TRUE(hub.publish(std::vector<PayloadRef>{test::make_update("mem://p/y"), test::make_update("mem://r")}));
  for (int i : {0, 1, 3}) EXPECT_EQ(wakes[i].load(), 0) << "shard " << i;
  EXPECT_EQ(wakes[2].load(), 2);
  while (s2.drain()) {
  }
  EXPECT_EQ(s2.stats().payloads.load(), 2u);
  s2.close_stream(st);
  ASSERT_TRUE(hub.publish(test::make_update("mem://p/z")));
  EXPECT_EQ(wakes[2].load(), 2) << "the key left with the stream";
  EXPECT_EQ(hub.interest()->keys(), 0u);
}

// A Hub destroyed with streams still open removes their keys: neither its own routing table
// (destroyed before the shards) nor a detached listener (the backplane, gone by then) may hear it.
TEST(HubRouting, DestroyedWithOpenStreamsReportsToNobody) {
  struct Counting : KeyListener {
    int added = 0, removed = 0;
    void key_added(TenantId, Kind, std::string_view) override { ++added; }
    void key_removed(TenantId, Kind, std::string_view) override { ++removed; }
  } listener;
  {
    auto hub = std::make_unique<Hub>(2);
    hub->route_by_interest(&listener);
    Shard& s = hub->shard(1);
    test::RecordingSink sink(s);
    StreamId st = s.open_stream(&sink, Framing::Line);
    Filter f;
    f.tenant = kDefaultTenant;
    f.kinds = kind_bit(Kind::ToolsListChanged);
    (void)s.subscribe(st, f, "\"t\"");
    EXPECT_EQ(listener.added, 1);
    hub->detach_key_listener();
    hub.reset();  // ASan: no use of the routing table or the listener after they are gone
  }
  EXPECT_EQ(listener.removed, 0);
}

}  // namespace
}  // namespace mcpfan

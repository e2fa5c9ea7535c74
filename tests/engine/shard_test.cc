// Tests for engine/src/shard.cc: matching, per-stream queues, batching, coalescing,
// slow-consumer closes, keepalives. A deterministic fan-out test in the style of
// uWebSockets' TopicTree test checks the exact bytes every subscriber receives.
#include "mcpfan/shard.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "alloc_probe.h"
#include "test_sink.h"

namespace mcpfan {
namespace {

using test::frame;
using test::list_changed_frame;
using test::make_list_changed;
using test::make_task;
using test::make_update;
using test::task_frame;
using test::RecordingSink;
using test::update_frame;
using Mode = RecordingSink::Mode;

constexpr auto kSse = Framing::Sse;
constexpr auto kLine = Framing::Line;

Filter uris(std::vector<std::string> u, TenantId tenant = kDefaultTenant) {
  Filter f;
  f.tenant = tenant;
  f.uris = std::move(u);
  return f;
}
Filter kinds(std::uint8_t mask, std::vector<std::string> u = {}, TenantId tenant = kDefaultTenant) {
  Filter f = uris(std::move(u), tenant);
  f.kinds = mask;
  return f;
}
constexpr std::uint8_t kTools = kind_bit(Kind::ToolsListChanged);
constexpr std::uint8_t kPrompts = kind_bit(Kind::PromptsListChanged);
constexpr std::uint8_t kResources = kind_bit(Kind::ResourcesListChanged);

void pump(Shard& shard, std::uint64_t now_ms = 0) {
  while (shard.drain()) {
  }
  shard.flush(now_ms);
}

void expect_well_formed(const RecordingSink& s) {
  EXPECT_EQ(s.overlapping_writes, 0) << "a second batch while one was outstanding";
  EXPECT_EQ(s.bad_framing_slot, 0) << "bufs[0] must be the empty framing slot";
  EXPECT_EQ(s.bad_byte_counts, 0) << "OutBatch::bytes must equal the bytes in bufs[1..]";
  EXPECT_EQ(s.calls_after_close, 0);
}

// ---- the deterministic fan-out scenario ----

TEST(Shard, FanOutWritesExactBytesPerSubscriber) {
  Shard shard;
  RecordingSink a(shard), b(shard), c(shard), d(shard);
  a.open(kSse);
  b.open(kSse);
  c.open(kLine);
  d.open(kSse);

  SubId a1 = shard.subscribe(a.id, kinds(kTools, {"file:///x"}), R"("a1")");
  EXPECT_EQ(SendStatus::Ok, shard.send(a.id, "ACK-A\n\n"));
  SubId b7 = shard.subscribe(b.id, uris({"file:///dir/"}), "7");
  SubId b8 = shard.subscribe(b.id, uris({"file:///x"}), "8");
  SubId c1 = shard.subscribe(c.id, kinds(kTools | kPrompts, {"file:///dir/y"}), R"("c")");
  SubId d1 = shard.subscribe(d.id, kinds(kTools, {"file:///x"}, /*tenant=*/TenantId{1, 1}), R"("d")");
  (void)a1, (void)c1, (void)d1;
  EXPECT_EQ(shard.subscription_count(), 5u);
  EXPECT_EQ(shard.stream_count(), 4u);

  shard.post(make_update("file:///x"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  shard.post(make_update("file:///dir/y"));
  shard.post(make_list_changed(Kind::PromptsListChanged));
  shard.post(make_update("file:///dir/z"));
  shard.post(make_list_changed(Kind::ResourcesListChanged));  // nobody
  shard.post(make_update("file:///elsewhere"));               // nobody
  pump(shard);

  EXPECT_EQ(a.bytes, "ACK-A\n\n" + update_frame(kSse, R"("a1")", "file:///x") +
                         list_changed_frame(kSse, "tools", R"("a1")"));
  EXPECT_EQ(b.bytes, update_frame(kSse, "8", "file:///x") + update_frame(kSse, "7", "file:///dir/y") +
                         update_frame(kSse, "7", "file:///dir/z"));
  EXPECT_EQ(c.bytes, list_changed_frame(kLine, "tools", R"("c")") + update_frame(kLine, R"("c")", "file:///dir/y") +
                         list_changed_frame(kLine, "prompts", R"("c")"));
  EXPECT_EQ(d.bytes, "") << "tenant 1 must not see tenant 0's events";

  // One write per stream per flush, holding everything that accumulated.
  EXPECT_EQ(a.write_calls, 1);
  EXPECT_EQ(a.buf_counts, (std::vector<std::size_t>{1 + 1 + 3 + 3}));
  EXPECT_EQ(b.buf_counts, (std::vector<std::size_t>{1 + 3 * 3}));
  EXPECT_EQ(c.write_calls, 1);
  EXPECT_EQ(d.write_calls, 0);
  EXPECT_EQ(shard.stats().payloads.load(), 7u);
  EXPECT_EQ(shard.stats().deliveries.load(), 2u + 3u + 3u);
  EXPECT_EQ(shard.stats().writes.load(), 3u);

  // The other tenant's event reaches only d.
  shard.post(make_update("file:///x", TenantId{1, 1}));
  pump(shard);
  EXPECT_EQ(d.bytes, update_frame(kSse, R"("d")", "file:///x"));
  EXPECT_EQ(a.write_calls, 1);
  EXPECT_EQ(b.write_calls, 1);

  // Unsubscribe: b keeps its prefix subscription only.
  shard.unsubscribe(b8);
  b.bytes.clear();
  a.bytes.clear();
  shard.post(make_update("file:///x"));
  shard.post(make_update("file:///dir/q"));
  pump(shard);
  EXPECT_EQ(a.bytes, update_frame(kSse, R"("a1")", "file:///x"));
  EXPECT_EQ(b.bytes, update_frame(kSse, "7", "file:///dir/q"));

  // Closing a stream drops its subscriptions: nothing reaches it any more.
  a.close();
  shard.unsubscribe(b7);
  b.bytes.clear();
  shard.post(make_update("file:///x"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  pump(shard);
  EXPECT_EQ(a.write_calls, 2);
  EXPECT_EQ(b.bytes, "");
  EXPECT_EQ(c.bytes.substr(c.bytes.size() - list_changed_frame(kLine, "tools", R"("c")").size()),
            list_changed_frame(kLine, "tools", R"("c")"));
  EXPECT_EQ(shard.subscription_count(), 2u);  // c1, d1
  EXPECT_EQ(shard.stream_count(), 3u);
  for (auto* s : {&a, &b, &c, &d}) expect_well_formed(*s);
}

TEST(Shard, ControlBytesSentBeforeDrainPrecedeEarlierPublishedNotifications) {
  Shard shard;
  shard.post(make_update("file:///early"));  // published before the stream even exists
  RecordingSink s(shard);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///early"}), R"("L")");
  EXPECT_EQ(SendStatus::Ok, shard.send(s.id, "ACK\n\n"));
  pump(shard);
  EXPECT_EQ(s.bytes, "ACK\n\n" + update_frame(kSse, R"("L")", "file:///early"));
}

TEST(Shard, PerStreamOrderIsPublishOrderAcrossSubscriptions) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  (void)shard.subscribe(s.id, uris({"file:///p/"}), "1");
  (void)shard.subscribe(s.id, kinds(kTools | kResources), "2");
  std::string expected;
  for (int i = 0; i < 20; ++i) {
    std::string uri = "file:///p/" + std::to_string(i);
    shard.post(make_update(uri));
    expected += update_frame(kLine, "1", uri);
    if (i % 3 == 0) {
      shard.post(make_list_changed(Kind::ResourcesListChanged));
      expected += list_changed_frame(kLine, "resources", "2");
    }
  }
  pump(shard);
  EXPECT_EQ(s.bytes, expected);
  EXPECT_EQ(s.write_calls, 1);
}

TEST(Shard, LineFramingWritesOneJsonLinePerMessage) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  (void)shard.subscribe(s.id, kinds(kPrompts, {"mem://a"}), R"("stdio:1")");
  EXPECT_EQ(SendStatus::Ok, shard.send(s.id, "{\"ack\":1}\n"));
  shard.post(make_update("mem://a", kDefaultTenant, {{"rev", "3"}}));
  shard.post(make_list_changed(Kind::PromptsListChanged));
  pump(shard);
  EXPECT_EQ(s.bytes, "{\"ack\":1}\n" +
                         std::string(R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":)"
                                     R"({"io.modelcontextprotocol/subscriptionId":"stdio:1"},"uri":"mem://a","rev":3}})"
                                     "\n") +
                         R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":)"
                         R"({"io.modelcontextprotocol/subscriptionId":"stdio:1"}}})"
                         "\n");
  EXPECT_EQ(test::split_messages(s.bytes, kLine).size(), 3u);
}

// A subscription with an empty id token gets Payload::plain() frames (2025-era sessions).
TEST(Shard, SubscriptionWithoutIdGetsPlainFrames) {
  Shard shard;
  RecordingSink sse(shard), line(shard, Mode::Manual);
  sse.open(kSse);
  line.open(kLine);
  (void)shard.subscribe(sse.id, kinds(kTools, {"file:///x"}), "");
  (void)shard.subscribe(sse.id, uris({"file:///x"}), "9");  // and one with an id, same stream
  (void)shard.subscribe(line.id, uris({"file:///x"}), "");
  shard.post(make_update("file:///x"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  pump(shard);
  const std::string plain_x =
      R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}})";
  const std::string plain_tools = R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}})";
  const std::string with_id = update_frame(kSse, "9", "file:///x");
  std::string plain_first = "event: message\ndata: " + plain_x + "\n\n" + with_id;
  std::string id_first = with_id + "event: message\ndata: " + plain_x + "\n\n";
  std::string got_x = sse.bytes.substr(0, plain_first.size());
  EXPECT_TRUE(got_x == plain_first || got_x == id_first) << sse.bytes;
  EXPECT_EQ(sse.bytes.substr(got_x.size()), "event: message\ndata: " + plain_tools + "\n\n");

  // Accounting and coalescing work the same for plain subscriptions.
  ASSERT_EQ(line.inflight(), 1u);
  shard.post(make_update("file:///x", kDefaultTenant, {{"rev", "1"}}));
  shard.post(make_update("file:///x", kDefaultTenant, {{"rev", "2"}}));
  pump(shard);
  const std::string plain_rev2 =
      R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x","rev":2}})"
      "\n";
  EXPECT_EQ(shard.pending_bytes(line.id), plain_rev2.size());
  line.complete();
  shard.flush();
  line.complete();
  EXPECT_EQ(line.bytes, plain_x + "\n" + plain_rev2);
  expect_well_formed(sse);
  expect_well_formed(line);
}

TEST(Shard, UrisCanBeAddedToAndRemovedFromALiveSubscription) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  SubId sub = shard.subscribe(s.id, uris({"file:///a"}), "1");
  shard.add_uri(sub, kDefaultTenant, "file:///b");
  shard.add_uri(sub, kDefaultTenant, "file:///p/");
  shard.add_uri(sub, kDefaultTenant, "file:///b");  // twice: one key
  shard.post(make_update("file:///a"));
  shard.post(make_update("file:///b"));
  shard.post(make_update("file:///p/q"));
  pump(shard);
  EXPECT_EQ(s.bytes, update_frame(kLine, "1", "file:///a") + update_frame(kLine, "1", "file:///b") +
                         update_frame(kLine, "1", "file:///p/q"));

  s.bytes.clear();
  shard.remove_uri(sub, kDefaultTenant, "file:///a");
  shard.remove_uri(sub, kDefaultTenant, "file:///p/");
  shard.remove_uri(sub, kDefaultTenant, "file:///never");  // not held: no-op
  shard.post(make_update("file:///a"));
  shard.post(make_update("file:///p/q"));
  shard.post(make_update("file:///b"));
  pump(shard);
  EXPECT_EQ(s.bytes, update_frame(kLine, "1", "file:///b"));

  // After unsubscribe, adding a URI is a no-op: nothing is delivered.
  shard.unsubscribe(sub);
  shard.add_uri(sub, kDefaultTenant, "file:///late");
  s.bytes.clear();
  shard.post(make_update("file:///late"));
  shard.post(make_update("file:///b"));
  pump(shard);
  EXPECT_EQ(s.bytes, "");
  EXPECT_EQ(shard.subscription_count(), 0u);
}

TEST(Shard, TasksRunOnTheLoopInOrderWithPayloads) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  SubId first = shard.subscribe(s.id, uris({"file:///x"}), "1");
  SubId second{};
  shard.post(make_update("file:///y"));  // before the task: nobody wants y yet
  shard.post_task([&] { second = shard.subscribe(s.id, uris({"file:///y"}), "2"); });
  shard.post(make_update("file:///y"));
  shard.post_task([&] { (void)shard.send(s.id, "T\n"); });
  shard.post(make_update("file:///x"));
  shard.post_task([&] { shard.unsubscribe(first); });
  shard.post(make_update("file:///x"));  // after the unsubscribe: dropped
  int ran = 0;
  // A task posted from another thread after these (join = happens-before) runs after them.
  std::thread([&] { shard.post_task([&] { ++ran; (void)shard.send(s.id, "U\n"); }); }).join();
  shard.post(make_update("file:///y"));
  pump(shard);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(s.bytes, update_frame(kLine, "2", "file:///y") + "T\n" + update_frame(kLine, "1", "file:///x") + "U\n" +
                         update_frame(kLine, "2", "file:///y"));
  EXPECT_EQ(shard.subscription_count(), 1u);
  (void)second;
}

// ---- write gating ----

TEST(Shard, NewerPayloadsWaitForWriteDoneThenGoOutInOneBatch) {
  Shard shard;
  int dirty_calls = 0;
  shard.set_on_dirty([](void* n) { ++*static_cast<int*>(n); }, &dirty_calls);
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///g/"}), "1");

  shard.post(make_update("file:///g/1"));
  shard.post(make_update("file:///g/2"));
  shard.post(make_update("file:///g/3"));
  pump(shard);
  EXPECT_EQ(dirty_calls, 1);
  ASSERT_EQ(s.write_calls, 1);
  EXPECT_EQ(s.buf_counts[0], 1u + 3 * 3);
  EXPECT_EQ(shard.pending_bytes(s.id), 0u);

  // While that batch is outstanding, newer payloads queue.
  shard.post(make_update("file:///g/4"));
  shard.drain();
  EXPECT_EQ(SendStatus::Ok, shard.send(s.id, "X"));  // queued in order with the notifications already matched
  shard.post(make_update("file:///g/5"));
  pump(shard);
  EXPECT_EQ(s.write_calls, 1);
  EXPECT_FALSE(shard.has_dirty());
  EXPECT_EQ(shard.pending_bytes(s.id), 2 * update_frame(kSse, "1", "file:///g/4").size() + 1);

  int dirty_before = dirty_calls;
  s.complete();
  EXPECT_TRUE(shard.has_dirty());
  EXPECT_EQ(dirty_calls, dirty_before + 1);  // write_done made the stream due: the loop is told
  shard.flush();
  ASSERT_EQ(s.write_calls, 2);
  EXPECT_EQ(s.buf_counts[1], 1u + 3 + 1 + 3);
  s.complete();
  EXPECT_EQ(s.writes[0], update_frame(kSse, "1", "file:///g/1") + update_frame(kSse, "1", "file:///g/2") +
                             update_frame(kSse, "1", "file:///g/3"));
  EXPECT_EQ(s.writes[1], update_frame(kSse, "1", "file:///g/4") + "X" + update_frame(kSse, "1", "file:///g/5"));
  EXPECT_EQ(shard.stats().coalesced.load(), 0u);
  EXPECT_FALSE(shard.has_dirty());
  expect_well_formed(s);
}

TEST(Shard, SameEventWhileWritingCoalescesKeepingPublishOrder) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  (void)shard.subscribe(s.id, kinds(kTools | kPrompts, {"file:///a", "file:///b", "file:///c"}), "1");

  shard.post(make_update("file:///c"));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);  // the stream is now behind

  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "1"}}));  // A1
  shard.post(make_update("file:///b", kDefaultTenant, {{"rev", "1"}}));  // B1
  pump(shard);
  std::size_t one = update_frame(kSse, "1", "file:///a", ",\"rev\":1").size();
  EXPECT_EQ(shard.pending_bytes(s.id), 2 * one);
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "2"}}));  // A2 replaces A1
  pump(shard);
  EXPECT_EQ(shard.stats().coalesced.load(), 1u);
  EXPECT_EQ(shard.pending_bytes(s.id), 2 * one);

  // Control bytes never coalesce; different kinds with the same (empty) uri do not either.
  EXPECT_EQ(SendStatus::Ok, shard.send(s.id, "K"));
  EXPECT_EQ(SendStatus::Ok, shard.send(s.id, "K"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  shard.post(make_list_changed(Kind::PromptsListChanged));
  pump(shard);
  EXPECT_EQ(shard.stats().coalesced.load(), 1u);
  shard.post(make_list_changed(Kind::ToolsListChanged));  // same kind: replaces the first
  pump(shard);
  EXPECT_EQ(shard.stats().coalesced.load(), 2u);

  s.complete();
  shard.flush();
  ASSERT_EQ(s.write_calls, 2);
  s.complete();
  EXPECT_EQ(s.writes[1], update_frame(kSse, "1", "file:///b", ",\"rev\":1") +
                             update_frame(kSse, "1", "file:///a", ",\"rev\":2") + "KK" +
                             list_changed_frame(kSse, "prompts", "1") + list_changed_frame(kSse, "tools", "1"));
  expect_well_formed(s);
}

TEST(Shard, CoalescingIsPerSubscription) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///a"}), "1");
  (void)shard.subscribe(s.id, uris({"file:///"}), "2");
  shard.post(make_update("file:///warm"));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);

  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "1"}}));
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "2"}}));
  pump(shard);
  EXPECT_EQ(shard.stats().coalesced.load(), 2u);  // once for each subscription
  s.complete();
  shard.flush();
  s.complete();
  std::string a2 = ",\"rev\":2";
  // Both subscriptions keep only rev 2; the first-matched subscription's copy comes first.
  std::string want12 = update_frame(kSse, "1", "file:///a", a2) + update_frame(kSse, "2", "file:///a", a2);
  std::string want21 = update_frame(kSse, "2", "file:///a", a2) + update_frame(kSse, "1", "file:///a", a2);
  EXPECT_TRUE(s.writes[1] == want12 || s.writes[1] == want21) << s.writes[1];
}

TEST(Shard, NoCoalescingWhenTheStreamIsNotBehind) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///a"}), "1");
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "1"}}));
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "2"}}));
  pump(shard);
  EXPECT_EQ(s.bytes,
            update_frame(kSse, "1", "file:///a", ",\"rev\":1") + update_frame(kSse, "1", "file:///a", ",\"rev\":2"));
  EXPECT_EQ(shard.stats().coalesced.load(), 0u);
}

// Design §4: "memory per slow stream stays bounded". A stream stuck behind one write that
// keeps receiving updates for the same resource coalesces each one, so its queue should
// hold one entry, not one per publish.
TEST(Shard, SlowStreamMemoryStaysBoundedWhileCoalescing) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///hot"}), "1");
  PayloadRef hot = make_update("file:///hot");
  shard.post(hot);
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);

  auto publish_n = [&](int n) {
    for (int i = 0; i < n; ++i) {
      shard.post(hot);
      shard.drain();
    }
  };
  publish_n(1000);  // warm up: inbox blocks, allocator
  std::int64_t before = alloc_probe::live_bytes();
  publish_n(12000);
  std::int64_t growth = alloc_probe::live_bytes() - before;
  EXPECT_EQ(shard.stats().coalesced.load(), 12999u);
  EXPECT_EQ(shard.pending_bytes(s.id), update_frame(kSse, "1", "file:///hot").size());
  EXPECT_LT(growth, 64 * 1024) << "the slow stream's queue grew by " << growth << " bytes for one pending notification";

  s.complete();
  shard.flush();
  s.complete();
  EXPECT_EQ(s.writes[1], update_frame(kSse, "1", "file:///hot"));
}

// ---- slow consumers ----

TEST(Shard, PastMaxPendingBytesTheStreamIsClosedAndCounted) {
  const std::size_t one = update_frame(kSse, "1", "file:///s/0").size();
  ShardOptions options;
  options.max_pending_bytes = 2 * one;
  Shard shard(options);
  RecordingSink slow(shard, Mode::Manual), fast(shard);
  slow.open(kSse);
  fast.open(kSse);
  (void)shard.subscribe(slow.id, uris({"file:///s/"}), "1");
  (void)shard.subscribe(slow.id, kinds(kTools), "2");
  (void)shard.subscribe(fast.id, uris({"file:///s/"}), "1");
  EXPECT_EQ(shard.stats().subscriptions.load(), 3);

  shard.post(make_update("file:///s/0"));
  pump(shard);
  ASSERT_EQ(slow.inflight(), 1u);
  shard.post(make_update("file:///s/1"));
  shard.post(make_update("file:///s/2"));
  pump(shard);
  EXPECT_EQ(shard.pending_bytes(slow.id), 2 * one);  // at the bound, not past it
  EXPECT_EQ(slow.close_requests, 0);

  shard.post(make_update("file:///s/3"));
  pump(shard);
  EXPECT_EQ(slow.close_requests, 1);
  EXPECT_EQ(shard.stats().slow_closes.load(), 1u);
  EXPECT_EQ(shard.stream_count(), 1u);
  EXPECT_EQ(shard.stats().streams.load(), 1);
  EXPECT_EQ(shard.subscription_count(), 1u);
  EXPECT_EQ(shard.stats().subscriptions.load(), 1);

  // The closed stream gets nothing more; the other one got everything.
  shard.post(make_update("file:///s/4"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  pump(shard);
  EXPECT_EQ(slow.write_calls, 1);
  slow.complete();  // its outstanding batch stays readable until the transport is done
  EXPECT_EQ(slow.bytes, update_frame(kSse, "1", "file:///s/0"));
  std::string all;
  for (int i = 0; i <= 4; ++i) all += update_frame(kSse, "1", "file:///s/" + std::to_string(i));
  EXPECT_EQ(fast.bytes, all);
  expect_well_formed(slow);
  expect_well_formed(fast);
}

// ---- freeing ----

TEST(Shard, UnsubscribeAndCloseStreamFreeSubscriptions) {
  Shard shard;
  RecordingSink s(shard), t(shard);
  s.open(kSse);
  t.open(kLine);
  SubId x = shard.subscribe(s.id, uris({"file:///x", "file:///y/"}), "1");
  SubId y = shard.subscribe(s.id, kinds(kTools | kPrompts | kResources), "2");
  (void)shard.subscribe(t.id, uris({"file:///x"}), "3");
  (void)shard.subscribe(t.id, kinds(kTools), "4");
  EXPECT_EQ(shard.subscription_count(), 4u);
  EXPECT_EQ(shard.stats().subscriptions.load(), 4);
  EXPECT_EQ(shard.stats().streams.load(), 2);

  shard.unsubscribe(x);
  shard.unsubscribe(x);  // twice: a no-op
  EXPECT_EQ(shard.subscription_count(), 3u);
  EXPECT_EQ(shard.stats().subscriptions.load(), 3);
  shard.post(make_update("file:///y/z"));
  pump(shard);
  EXPECT_EQ(s.write_calls, 0);
  EXPECT_EQ(shard.stats().deliveries.load(), 0u);

  shard.unsubscribe(y);
  t.close();
  EXPECT_EQ(shard.subscription_count(), 0u);
  EXPECT_EQ(shard.stats().subscriptions.load(), 0);
  EXPECT_EQ(shard.stream_count(), 1u);
  s.close();
  EXPECT_EQ(shard.stream_count(), 0u);
  EXPECT_EQ(shard.stats().streams.load(), 0);

  shard.post(make_update("file:///x"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  pump(shard);
  EXPECT_EQ(shard.stats().deliveries.load(), 0u);
  EXPECT_EQ(s.write_calls + t.write_calls, 0);

  // Stream slots are reused, with a new generation, and start clean.
  RecordingSink u(shard);
  u.open(kSse);
  EXPECT_TRUE(u.id.index == s.id.index || u.id.index == t.id.index);
  EXPECT_TRUE(u.id != s.id && u.id != t.id);
  (void)shard.subscribe(u.id, uris({"file:///x"}), "5");
  shard.post(make_update("file:///x"));
  pump(shard);
  EXPECT_EQ(u.bytes, update_frame(kSse, "5", "file:///x"));
}

TEST(Shard, IdTokenOutlivesUnsubscribeWhileABatchIsInFlight) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  const std::string token = R"("a-rather-long-subscription-id-token-that-is-heap-allocated")";
  SubId sub = shard.subscribe(s.id, uris({"file:///t"}), token);
  shard.post(make_update("file:///t"));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);

  shard.unsubscribe(sub);
  EXPECT_EQ(shard.subscription_count(), 0u);
  // A new subscription may take the same SubId; the in-flight batch keeps the old token.
  SubId again = shard.subscribe(s.id, uris({"file:///other"}), R"("new")");
  (void)again;
  s.complete();  // reads the batch's buffers now: a freed token would be an ASan report
  EXPECT_EQ(s.bytes, update_frame(kSse, token, "file:///t"));
}

TEST(Shard, QueuedNotificationsSurviveUnsubscribeAndCloseStream) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  SubId sub = shard.subscribe(s.id, uris({"file:///q/"}), R"("queued-token")");
  shard.post(make_update("file:///q/1"));
  pump(shard);
  shard.post(make_update("file:///q/2"));
  shard.drain();  // queued behind the outstanding batch
  shard.unsubscribe(sub);
  s.complete();
  shard.flush();
  ASSERT_EQ(s.inflight(), 1u);
  s.close();  // closes with a batch in flight: the batch must stay readable
  EXPECT_EQ(shard.stream_count(), 0u);
  s.complete();
  EXPECT_EQ(s.bytes, update_frame(kSse, R"("queued-token")", "file:///q/1") +
                         update_frame(kSse, R"("queued-token")", "file:///q/2"));
}

// ---- keepalive ----

TEST(Shard, KeepaliveGoesOnlyToIdleSseStreams) {
  Shard shard;
  RecordingSink idle1(shard), idle2(shard), line(shard), busy(shard, Mode::Manual), queued(shard);
  idle1.open(kSse);
  idle2.open(kSse);
  line.open(kLine);
  busy.open(kSse);
  queued.open(kSse);
  (void)shard.subscribe(busy.id, uris({"file:///busy"}), "1");
  (void)shard.subscribe(queued.id, uris({"file:///queued"}), "2");

  const std::uint64_t interval = 15000;
  shard.keepalive(1000, interval);  // first sweep: starts the idle clocks
  EXPECT_FALSE(shard.has_dirty());
  shard.post(make_update("file:///busy"));
  pump(shard, 2000);
  ASSERT_EQ(busy.inflight(), 1u);  // writing from now on

  shard.keepalive(15999, interval);
  EXPECT_FALSE(shard.has_dirty());
  shard.post(make_update("file:///queued"));
  shard.drain();  // queued has unwritten output at the next sweep

  shard.keepalive(16000, interval);
  shard.flush(16000);
  const std::string ka = ": keepalive\n\n";
  EXPECT_EQ(idle1.bytes, ka);
  EXPECT_EQ(idle2.bytes, ka);
  EXPECT_EQ(line.bytes, "");
  EXPECT_EQ(busy.write_calls, 1);
  EXPECT_EQ(queued.bytes, update_frame(kSse, "2", "file:///queued"));

  shard.keepalive(30999, interval);  // everyone wrote at 16000
  EXPECT_FALSE(shard.has_dirty());
  shard.keepalive(31000, interval);
  shard.flush(31000);
  EXPECT_EQ(idle1.bytes, ka + ka);
  EXPECT_EQ(queued.bytes, update_frame(kSse, "2", "file:///queued") + ka);
  EXPECT_EQ(line.bytes, "");
  EXPECT_EQ(busy.write_calls, 1);
  busy.complete();
}

// ---- inbox ----

TEST(Shard, PostsFromDifferentThreadsAreDeliveredInHappensBeforeOrder) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  (void)shard.subscribe(s.id, uris({"file:///o/"}), "1");
  std::string want;
  // Each thread posts after the previous one finished (join = happens-before), each
  // from its own queue producer.
  for (int t = 0; t < 6; ++t) {
    std::vector<std::string> batch;
    for (int i = 0; i < 3; ++i) batch.push_back("file:///o/" + std::to_string(t) + "-" + std::to_string(i));
    std::thread([&shard, batch] {
      for (const auto& uri : batch) shard.post(make_update(uri));
    }).join();
    for (const auto& uri : batch) want += update_frame(kLine, "1", uri);
  }
  pump(shard);
  EXPECT_EQ(s.bytes, want);
}

TEST(Shard, DrainTakesBoundedBatchesAndReportsWhatRemains) {
  ShardOptions options;
  options.drain_batch = 2;
  Shard shard(options);
  int wakes = 0;
  shard.set_waker([](void* n) { ++*static_cast<int*>(n); }, &wakes);
  RecordingSink s(shard);
  s.open(kLine);
  (void)shard.subscribe(s.id, uris({"file:///d/"}), "1");
  for (int i = 0; i < 5; ++i) shard.post(make_update("file:///d/" + std::to_string(i)));
  std::vector<PayloadRef> bulk{make_update("file:///d/5"), make_update("file:///d/6")};
  shard.post_bulk(bulk.data(), bulk.size());
  EXPECT_EQ(wakes, 6);

  EXPECT_TRUE(shard.drain(1));
  EXPECT_EQ(shard.stats().payloads.load(), 2u);
  EXPECT_TRUE(shard.drain(2));
  EXPECT_EQ(shard.stats().payloads.load(), 6u);
  EXPECT_FALSE(shard.drain(8));
  EXPECT_EQ(shard.stats().payloads.load(), 7u);
  shard.flush();
  std::string want;
  for (int i = 0; i < 7; ++i) want += update_frame(kLine, "1", "file:///d/" + std::to_string(i));
  EXPECT_EQ(s.bytes, want);
}

// ---- per-stream journals (StreamJournal: a 2025 session's event ids) ----

namespace journal_test {
// Numbers each notification "id: N\n"; skips those whose uri is in `skip`.
// ---- task status (notifications/tasks): keyed by task id, and replayed to a new listen ----

Filter tasks(std::vector<std::string> ids, TenantId tenant = kDefaultTenant) {
  Filter f;
  f.tenant = tenant;
  f.task_ids = std::move(ids);
  return f;
}

TEST(ShardTasks, ATaskReachesTheListensOfItsIdOnlyWithoutPrefixes) {
  Shard shard;
  RecordingSink a(shard), b(shard), other(shard);
  a.open(kSse);
  b.open(kSse);
  other.open(kSse);
  (void)shard.subscribe(a.id, tasks({"t1", "t/"}), R"("a")");
  (void)shard.subscribe(b.id, tasks({"t2"}), R"("b")");
  (void)shard.subscribe(other.id, tasks({"t1"}, TenantId{1, 1}), R"("o")");
  shard.post(make_task("t1", "working"));
  shard.post(make_task("t/x", "working"));  // "t/" is a task id, not a prefix
  shard.post(make_update("t1"));            // a resource of the same name is another key
  pump(shard);
  EXPECT_EQ(a.bytes, task_frame(kSse, R"("a")", "t1", "working"));
  EXPECT_EQ(b.bytes, "");
  EXPECT_EQ(other.bytes, "") << "another tenant's task of the same id";
  expect_well_formed(a);
}

TEST(ShardTasks, AReplayedStateIsNotSentAgainByItsPublishButANewerOneIs) {
  Shard shard;
  RecordingSink a(shard), b(shard);
  a.open(kSse);
  b.open(kSse);
  SubId sa = shard.subscribe(a.id, tasks({"t1"}), R"("a")");
  PayloadRef working = make_task("t1", "working");
  // The state was kept before its publish reached this shard: the new listen gets it now...
  shard.replay(sa, working);
  // ...and the publish of that same state, matched afterwards, is skipped for it only.
  (void)shard.subscribe(b.id, tasks({"t1"}), R"("b")");
  shard.post(working);
  shard.post(make_task("t1", "completed"));
  pump(shard);
  EXPECT_EQ(a.bytes, task_frame(kSse, R"("a")", "t1", "working") + task_frame(kSse, R"("a")", "t1", "completed"));
  EXPECT_EQ(b.bytes, task_frame(kSse, R"("b")", "t1", "working") + task_frame(kSse, R"("b")", "t1", "completed"));
  EXPECT_EQ(shard.stats().replays.load(), 1u);
  EXPECT_EQ(shard.stats().replays_skipped.load(), 1u);
  EXPECT_EQ(shard.stats().deliveries.load(), 4u);
}

TEST(ShardTasks, AReplayMarkGoesWithANewerStateOrTheSubscription) {
  Shard shard;
  RecordingSink a(shard);
  a.open(kSse);
  SubId sa = shard.subscribe(a.id, tasks({"t1"}), R"("a")");
  PayloadRef old_state = make_task("t1", "working");
  shard.replay(sa, old_state);
  shard.post(make_task("t1", "input_required"));  // newer: delivered, and the mark is gone
  shard.post(old_state);                          // a late copy of the replayed one: no mark left, delivered
  pump(shard);
  EXPECT_EQ(a.bytes, task_frame(kSse, R"("a")", "t1", "working") +
                         task_frame(kSse, R"("a")", "t1", "input_required") +
                         task_frame(kSse, R"("a")", "t1", "working"));
  EXPECT_EQ(shard.stats().replays_skipped.load(), 0u);
  // A mark held by a subscription that ends goes with it; a stale id replays nothing.
  shard.replay(sa, make_task("t1", "completed"));
  shard.unsubscribe(sa);
  shard.replay(sa, make_task("t1", "failed"));
  pump(shard);
  EXPECT_EQ(shard.stats().replays.load(), 2u);
}

TEST(ShardTasks, TheNewestStateOfATaskReplacesAnUnwrittenOlderOne) {
  Shard shard;
  RecordingSink a(shard, Mode::Manual);
  a.open(kSse);
  (void)shard.subscribe(a.id, tasks({"t1", "t2"}), R"("a")");
  shard.post(make_task("t1", "working"));
  pump(shard);  // a batch in flight: what follows waits, and coalesces per task
  shard.post(make_task("t1", "input_required"));
  shard.post(make_task("t2", "working"));
  shard.post(make_task("t1", "completed"));
  pump(shard);
  a.complete();
  pump(shard);
  a.complete();
  EXPECT_EQ(a.bytes, task_frame(kSse, R"("a")", "t1", "working") + task_frame(kSse, R"("a")", "t2", "working") +
                         task_frame(kSse, R"("a")", "t1", "completed"));
  EXPECT_EQ(shard.stats().coalesced.load(), 1u);
}

class CountingJournal final : public StreamJournal {
 public:
  std::optional<std::string> record(const PayloadRef& p) override {
    ++calls;
    seen.emplace_back(p->uri());
    if (skip == p->uri()) return std::nullopt;
    return "id: " + std::to_string(++next) + "\n";
  }
  int calls = 0;
  int next = 0;
  std::string skip;
  std::vector<std::string> seen;
};
std::string plain_update(std::string_view uri, std::string_view extra = {}) {
  return std::string("event: message\ndata: ") +
         R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) + "\"" +
         std::string(extra) + "}}\n\n";
}
}  // namespace journal_test

TEST(ShardJournal, EachNotificationIsPrefixedWithWhatTheJournalReturns) {
  Shard shard;
  journal_test::CountingJournal j;
  RecordingSink s(shard), plain(shard);
  s.open(kSse, &j);
  plain.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///a", "file:///b"}), "");
  (void)shard.subscribe(plain.id, uris({"file:///a", "file:///b"}), "");
  shard.post(make_update("file:///a"));
  shard.post(make_update("file:///b"));
  pump(shard);
  using journal_test::plain_update;
  EXPECT_EQ(s.bytes, "id: 1\n" + plain_update("file:///a") + "id: 2\n" + plain_update("file:///b"));
  // A stream without a journal is unchanged.
  EXPECT_EQ(plain.bytes, plain_update("file:///a") + plain_update("file:///b"));
  EXPECT_EQ(j.calls, 2);
  EXPECT_EQ(shard.stats().deliveries.load(), 4u);
}

TEST(ShardJournal, NulloptQueuesNothingForThatStreamOnly) {
  Shard shard;
  journal_test::CountingJournal j;
  j.skip = "file:///a";
  RecordingSink s(shard), other(shard);
  s.open(kSse, &j);
  other.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///a", "file:///b"}), "");
  (void)shard.subscribe(other.id, uris({"file:///a"}), "");
  shard.post(make_update("file:///a"));
  shard.post(make_update("file:///b"));
  pump(shard);
  EXPECT_EQ(s.bytes, "id: 1\n" + journal_test::plain_update("file:///b"));
  EXPECT_EQ(other.bytes, journal_test::plain_update("file:///a"));
  EXPECT_EQ(j.seen, (std::vector<std::string>{"file:///a", "file:///b"}));  // recorded both
  EXPECT_EQ(shard.stats().deliveries.load(), 2u);
}

TEST(ShardJournal, CoalescingReplacesAnUnwrittenEntryWithTheNewerOneAndItsId) {
  Shard shard;
  journal_test::CountingJournal j;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse, &j);
  (void)shard.subscribe(s.id, uris({"file:///a", "file:///b", "file:///c"}), "");
  shard.post(make_update("file:///c"));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);  // behind: what follows coalesces
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "1"}}));  // id 2
  shard.post(make_update("file:///b", kDefaultTenant, {{"rev", "1"}}));  // id 3
  shard.post(make_update("file:///a", kDefaultTenant, {{"rev", "2"}}));  // id 4 replaces id 2
  pump(shard);
  using journal_test::plain_update;
  EXPECT_EQ(shard.stats().coalesced.load(), 1u);
  std::string b1 = "id: 3\n" + plain_update("file:///b", ",\"rev\":1");
  std::string a2 = "id: 4\n" + plain_update("file:///a", ",\"rev\":2");
  EXPECT_EQ(shard.pending_bytes(s.id), b1.size() + a2.size());  // the prefixes are counted
  s.complete();
  shard.flush();
  ASSERT_EQ(s.write_calls, 2);
  s.complete();
  EXPECT_EQ(s.writes[0], "id: 1\n" + plain_update("file:///c"));
  EXPECT_EQ(s.writes[1], b1 + a2);
  expect_well_formed(s);
}

TEST(ShardJournal, EndStreamClosesAndTellsTheSinkOnce) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///a"}), "");
  StreamId id = s.id;
  shard.end_stream(id, CloseReason::Ended);
  EXPECT_EQ(s.close_requests, 1);
  EXPECT_FALSE(shard.is_open(id));
  EXPECT_EQ(shard.subscription_count(), 0u);
  shard.end_stream(id, CloseReason::Ended);  // stale: nothing
  EXPECT_EQ(s.close_requests, 1);
}

}  // namespace
}  // namespace mcpfan

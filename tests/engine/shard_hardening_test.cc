// Hardening regressions for engine/src/shard.cc: stale handles, the pending-bytes bound on
// send(), O(1) coalescing with many distinct pending keys, and exceptions that must not
// stall or kill the shard.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "mcpfan/shard.h"
#include "test_sink.h"

namespace mcpfan {
namespace {

using namespace test;  // the recording sink and payload builders of test_sink.h
using Mode = RecordingSink::Mode;
constexpr Framing kSse = Framing::Sse, kLine = Framing::Line;

Filter uris(std::vector<std::string> u) {
  Filter f;
  f.uris = std::move(u);
  return f;
}

void pump(Shard& shard) {
  while (shard.drain()) {
  }
  shard.flush(0);
}

// Item 5: with bare integer ids, close_stream(old) after the id was reused closed the new
// owner's stream (shard.h even told sinks to make that call after close_requested).
TEST(ShardHandles, AStaleStreamHandleNamesNothingAfterTheSlotIsReused) {
  Shard shard;
  RecordingSink old_sink(shard);
  StreamId old_id = old_sink.open(kSse);
  old_sink.close();
  RecordingSink fresh(shard);
  StreamId fresh_id = fresh.open(kSse);
  ASSERT_EQ(fresh_id.index, old_id.index) << "the slot is reused";
  ASSERT_NE(fresh_id, old_id);
  (void)shard.subscribe(fresh_id, uris({"file:///x"}), "1");

  // Every call with the stale handle is a no-op for the stream now in that slot.
  shard.close_stream(old_id);
  shard.write_done(old_id);
  EXPECT_EQ(shard.send(old_id, "STALE\n"), SendStatus::Closed);
  EXPECT_EQ(shard.pending_bytes(old_id), 0u);
  EXPECT_FALSE(shard.is_open(old_id));
  EXPECT_FALSE(shard.subscribe(old_id, uris({"file:///x"}), "2").valid());

  EXPECT_TRUE(shard.is_open(fresh_id));
  EXPECT_EQ(shard.stream_count(), 1u);
  shard.post(make_update("file:///x"));
  pump(shard);
  EXPECT_EQ(fresh.bytes, update_frame(kSse, "1", "file:///x"));
}

TEST(ShardHandles, AStaleSubscriptionHandleNamesNothing) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kSse);
  SubId a = shard.subscribe(s.id, uris({"file:///a"}), "1");
  shard.unsubscribe(a);
  SubId b = shard.subscribe(s.id, uris({"file:///b"}), "2");
  ASSERT_EQ(b.index, a.index);
  shard.unsubscribe(a);                                // stale: b stays
  shard.add_uri(a, kDefaultTenant, "file:///stale");  // stale: not added to b
  shard.remove_uri(a, kDefaultTenant, "file:///b");   // stale: not removed from b
  EXPECT_EQ(shard.subscription_count(), 1u);
  shard.post(make_update("file:///stale"));
  shard.post(make_update("file:///b"));
  pump(shard);
  EXPECT_EQ(s.bytes, update_frame(kSse, "2", "file:///b"));
}

// Item 2: only deliver() checked --max-pending-bytes, so a stdio client that pipelined
// requests and never read grew the server's memory through send() until the write timeout.
TEST(ShardBounds, SendPastMaxPendingBytesClosesTheStreamAndSaysSo) {
  ShardOptions options;
  options.max_pending_bytes = 100;
  Shard shard(options);
  RecordingSink stuck(shard, Mode::Manual);
  stuck.open(kLine);
  (void)shard.subscribe(stuck.id, uris({"file:///x"}), "1");
  ASSERT_EQ(shard.send(stuck.id, std::string(60, 'a') + "\n"), SendStatus::Ok);
  shard.flush(0);
  ASSERT_EQ(stuck.inflight(), 1u);  // the client reads nothing more: the next answers queue
  ASSERT_EQ(shard.send(stuck.id, std::string(60, 'b') + "\n"), SendStatus::Ok);
  EXPECT_EQ(shard.send(stuck.id, std::string(60, 'c') + "\n"), SendStatus::Closed);
  EXPECT_FALSE(shard.is_open(stuck.id));
  EXPECT_EQ(shard.stats().slow_closes.load(), 1u);
  EXPECT_EQ(shard.subscription_count(), 0u);
  EXPECT_EQ(stuck.close_requests, 0) << "the caller learns from the status, not from a callback into itself";
  EXPECT_EQ(shard.send(stuck.id, "more\n"), SendStatus::Closed);
  stuck.complete();  // the batch in flight stays readable
  EXPECT_EQ(stuck.bytes, std::string(60, 'a') + "\n");
}

// Item 4: each enqueue to a stream with a write in flight scanned its pending list and
// erased from the middle of a vector (quadratic). Coalescing now finds the older entry
// through a map and leaves a tombstone that compaction removes: the bytes must be exactly
// what the old rule gave — one entry per key, in the order of each key's latest publish.
TEST(ShardCoalescing, ManyDistinctPendingKeysKeepOnePerKeyInLatestPublishOrder) {
  Shard shard;
  RecordingSink s(shard, Mode::Manual);
  s.open(kSse);
  (void)shard.subscribe(s.id, uris({"file:///d/"}), "1");
  shard.post(make_update("file:///d/first"));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);

  constexpr int kKeys = 3000;
  auto uri = [](int i) { return "file:///d/" + std::to_string(i); };
  for (int i = 0; i < kKeys; ++i) shard.post(make_update(uri(i)));
  // Re-publish every even key (in reverse), then key 1 again: each replaces its older entry.
  for (int i = kKeys - 2; i >= 0; i -= 2) shard.post(make_update(uri(i)));
  shard.post(make_update(uri(1)));
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.stats().coalesced.load(), static_cast<std::uint64_t>(kKeys / 2 + 1));

  std::string want;
  for (int i = 3; i < kKeys; i += 2) want += update_frame(kSse, "1", uri(i));
  for (int i = kKeys - 2; i >= 0; i -= 2) want += update_frame(kSse, "1", uri(i));
  want += update_frame(kSse, "1", uri(1));
  EXPECT_EQ(shard.pending_bytes(s.id), want.size());

  s.complete();
  shard.flush(0);
  ASSERT_EQ(s.inflight(), 1u);
  s.complete();
  EXPECT_EQ(s.writes.back(), want);
  EXPECT_EQ(s.buf_counts.back(), 1 + 3 * static_cast<std::size_t>(kKeys)) << "no tombstone reaches the batch";

  // Behind again: coalescing starts over with an empty map.
  shard.post(make_update(uri(5)));
  pump(shard);
  ASSERT_EQ(s.inflight(), 1u);
  shard.post(make_update(uri(5)));
  shard.post(make_update(uri(5)));
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.pending_bytes(s.id), update_frame(kSse, "1", uri(5)).size());
}

// Item 7: an exception from a posted task (transport code) escaped drain() into the libuv
// callback (std::terminate), and its sequence number was never passed, so the shard
// would have waited for it forever. It is now counted, and the shard goes on in order.
TEST(ShardExceptions, AThrowingTaskIsCountedAndLaterPostsStillRunInOrder) {
  Shard shard;
  RecordingSink s(shard);
  s.open(kLine);
  (void)shard.subscribe(s.id, uris({"file:///x"}), "1");
  std::vector<int> ran;
  shard.post_task([&] { ran.push_back(1); });
  shard.post_task([&]() { throw std::runtime_error("task failed"); });
  shard.post_task([&] { ran.push_back(3); });
  shard.post(make_update("file:///x"));
  EXPECT_NO_THROW(pump(shard));
  EXPECT_EQ(ran, (std::vector<int>{1, 3}));
  EXPECT_EQ(shard.stats().exceptions.load(), 1u);
  EXPECT_EQ(s.bytes, update_frame(kLine, "1", "file:///x"));
}

class ThrowingSink final : public StreamSink {
 public:
  void write_batch(OutBatch&&) override { throw std::bad_alloc(); }
  void close_requested(CloseReason r) override {
    ++closes;
    reason = r;
  }
  int closes = 0;
  CloseReason reason = CloseReason::SlowConsumer;
};

TEST(ShardExceptions, ASinkThatThrowsLosesItsStreamAndNoOneElseIsAffected) {
  Shard shard;
  ThrowingSink bad;
  StreamId bad_id = shard.open_stream(&bad, kSse);
  RecordingSink good(shard);
  good.open(kSse);
  (void)shard.subscribe(bad_id, uris({"file:///x"}), "1");
  (void)shard.subscribe(good.id, uris({"file:///x"}), "2");
  shard.post(make_update("file:///x"));
  EXPECT_NO_THROW(pump(shard));
  EXPECT_EQ(bad.closes, 1);
  EXPECT_EQ(bad.reason, CloseReason::Failed);
  EXPECT_FALSE(shard.is_open(bad_id));
  EXPECT_EQ(shard.stats().exceptions.load(), 1u);
  EXPECT_EQ(good.bytes, update_frame(kSse, "2", "file:///x"));
  shard.post(make_list_changed(Kind::ToolsListChanged));
  EXPECT_NO_THROW(pump(shard));
}

}  // namespace
}  // namespace mcpfan

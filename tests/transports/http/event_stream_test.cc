// The EventStream's contract with its carrier (http/event_stream.h), without a socket: what an
// HTTP/2 stream will have to do is what this recording carrier does. Over a real worker's
// shard (route_harness.h: its loop never runs; the test drains and flushes the shard itself).
#include "http/event_stream.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/test_sink.h"
#include "route_harness.h"
#include "mcpfan/hub.h"
#include "server/loop_context.h"

namespace mcpfan::detail::testing {
namespace {

/** Records each call in order; a batch's bytes as "events:<bytes>". Answers write_events with `answer`. */
class RecordingCarrier final : public StreamCarrier {
 public:
  std::vector<std::string> calls;
  Wrote answer = Wrote::Done;
  EventStream* stream = nullptr;

  void stream_started() override { calls.emplace_back("started"); }
  void write_head() override { calls.emplace_back("head"); }
  Wrote write_events(OutBatch&& batch) override {
    std::string text;
    for (std::size_t i = 1; i < batch.bufs.size(); ++i) {
      text.append(static_cast<const char*>(batch.bufs[i].iov_base), batch.bufs[i].iov_len);
    }
    calls.push_back("events:" + text);
    return answer;
  }
  void write_end() override { calls.emplace_back("end"); }
  // What a connection does: it closes, and closing closes its stream.
  void abort() override {
    calls.emplace_back("abort");
    stream->close();
  }
};

class EventStreamTest : public ::testing::Test {
 protected:
  EventStreamTest() : harness_(ServerConfig{}), stream_(harness_.context(), carrier_) { carrier_.stream = &stream_; }
  ~EventStreamTest() override { stream_.close(); }

  Shard& shard() { return harness_.context().shard(); }
  void pump() {
    while (shard().drain()) {
    }
    shard().flush();
  }
  void listen_to(const std::string& uri, std::string ack = "ACK\n\n") {
    Filter f;
    f.tenant = kDefaultTenant;
    f.uris = {uri};
    stream_.begin_listen(f, "7", std::move(ack));
  }
  /** The calls since the last take(). */
  std::vector<std::string> take() { return std::exchange(carrier_.calls, {}); }

  RouteHarness harness_;
  RecordingCarrier carrier_;
  EventStream stream_;
};

using Calls = std::vector<std::string>;

TEST_F(EventStreamTest, AListenStartsTheCarrierThenWritesTheHeadAndTheAckIsItsFirstBatch) {
  listen_to("file:///a");
  // The head only once the subscription exists: a client that publishes on seeing the 200 finds it.
  EXPECT_EQ(take(), (Calls{"started", "head"}));
  EXPECT_EQ(shard().subscription_count(), 1u);
  pump();
  EXPECT_EQ(take(), (Calls{"events:ACK\n\n"}));
  ASSERT_TRUE(shard().post(test::make_update("file:///a")));
  pump();
  Calls calls = take();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], "events:" + test::update_frame(Framing::Sse, "7", "file:///a"));
}

TEST_F(EventStreamTest, AHeldHeadHoldsTheFirstBatchUntilReleasedThenBothGoInOrder) {
  stream_.hold_head();
  listen_to("file:///a");
  pump();
  EXPECT_EQ(take(), (Calls{"started"})) << "nothing before the 200";
  stream_.release_head();
  EXPECT_EQ(take(), (Calls{"head", "events:ACK\n\n"}));
}

TEST_F(EventStreamTest, AQueuedBatchHoldsTheNextUntilTheCarrierSaysItIsOut) {
  listen_to("file:///a");
  carrier_.answer = StreamCarrier::Wrote::Queued;
  pump();
  take();
  ASSERT_TRUE(shard().post(test::make_update("file:///a")));
  pump();
  EXPECT_EQ(take(), Calls{}) << "one batch in flight per stream";
  carrier_.answer = StreamCarrier::Wrote::Done;
  stream_.batch_written();
  pump();
  EXPECT_EQ(take().size(), 1u);
}

TEST_F(EventStreamTest, ShutdownSendsAListensFinalResultThenItsCleanEnd) {
  listen_to("file:///a");
  pump();
  take();
  stream_.shutdown();
  pump();
  Calls calls = take();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_NE(calls[0].find(R"("id":7)"), std::string::npos) << calls[0];
  EXPECT_NE(calls[0].find("complete"), std::string::npos) << calls[0];
  EXPECT_EQ(calls[1], "end");
  EXPECT_FALSE(stream_.open());
  EXPECT_EQ(shard().stream_count(), 0u);
}

TEST_F(EventStreamTest, AFailedWriteAbortsTheCarrierAndClosesTheShardsStream) {
  listen_to("file:///a");
  carrier_.answer = StreamCarrier::Wrote::Failed;
  pump();
  EXPECT_EQ(take(), (Calls{"started", "head", "events:ACK\n\n", "abort"}));
  EXPECT_FALSE(stream_.open());
  EXPECT_EQ(shard().stream_count(), 0u);
  EXPECT_EQ(shard().subscription_count(), 0u);
}

TEST_F(EventStreamTest, AnInjectedEventPastTheStreamsBoundAbortsAndReportsTheStreamGone) {
  listen_to("file:///a");
  pump();
  take();
  const std::size_t bound = ShardOptions{}.max_pending_bytes;
  carrier_.answer = StreamCarrier::Wrote::Queued;  // nothing drains: the bound is reached
  EXPECT_TRUE(stream_.inject_event("data: small\n\n"));
  EXPECT_FALSE(stream_.inject_event(std::string(bound + 1, 'x')));
  Calls calls = take();
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back(), "abort");
  EXPECT_FALSE(stream_.inject_event("data: after\n\n")) << "a closed stream takes nothing";
}

}  // namespace
}  // namespace mcpfan::detail::testing

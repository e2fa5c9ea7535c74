// 1,000 concurrent listen streams across 2 workers: one publish reaches every
// stream exactly once; closing the sockets frees everything. Run with the stream batches sent
// through io_uring (the default ring, and a ring of 4 entries, which fills up and flushes
// mid-flush many times) and through libuv writes (--io-uring-entries 0, the fallback).
#include <memory>

#include "harness.h"

namespace itest {
namespace {

constexpr int kStreams = 1000;

std::string IdJson(int i) {  // mix string and numeric ids
  return i % 2 ? std::to_string(i) : "\"fan:" + std::to_string(i) + "\"";
}

class Fanout : public ::testing::TestWithParam<const char*> {};  // --io-uring-entries, or "" for the default

TEST_P(Fanout, ThousandStreamsTwoWorkersEachReceiveOnce) {
  ASSERT_GE(RaiseFdLimit(4 * kStreams + 256), uint64_t(kStreams + 128))
      << "cannot raise RLIMIT_NOFILE far enough for " << kStreams << " sockets";
  const std::string entries = GetParam();
  std::vector<std::string> args{"--workers", "2"};
  if (!entries.empty()) args.insert(args.end(), {"--io-uring-entries", entries});
  ServerProcess srv(args);  // inherits the raised limit
  ASSERT_TRUE(srv.ok()) << srv.error();
  // With a ring asked for, each loop sets one up as it starts: both have one, or the kernel
  // refused and the server said so.
  bool uring = false;
  if (entries == "0") {
    EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_io_uring_workers", 0));
  } else {
    auto refused = [&] { return srv.Stderr().find("io_uring sends are off") != std::string::npos; };
    EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_io_uring_workers", [&](double v) { return v == 2 || refused(); }));
    uring = !refused();
    if (!uring) {
      EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_io_uring_workers", 0)) << srv.Stderr();
    }
  }

  std::vector<std::unique_ptr<SseStream>> owned;
  std::vector<SseStream*> streams;
  const char* filter = R"({"resourceSubscriptions":["file:///fan/x"],"toolsListChanged":true})";
  for (int i = 0; i < kStreams; ++i) {
    owned.push_back(std::make_unique<SseStream>());
    std::string err;
    ASSERT_TRUE(owned.back()->Start(srv.port(), ListenRequest(IdJson(i), filter), &err))
        << "stream " << i << ": " << err;
    streams.push_back(owned.back().get());
  }

  // Every stream: 200 event-stream + the acknowledgement.
  auto has = [](size_t n) { return [n](SseStream& s) { return s.is_sse() && s.events().size() >= n; }; };
  size_t acked = PumpAll(streams, has(1), Ms(30000));
  ASSERT_EQ(acked, size_t(kStreams)) << "streams acknowledged in time";
  for (int i = 0; i < kStreams; ++i) {
    Json ack(streams[i]->events().front().data);
    ASSERT_TRUE(ack.ok()) << i << ": " << streams[i]->events().front().data;
    ASSERT_EQ(ack.GetString({"method"}), "notifications/subscriptions/acknowledged") << i << ": " << ack.text();
    ASSERT_TRUE(JsonMatches(ack.Get({"params", "_meta", kSubId}), IdJson(i))) << "stream " << i;
  }
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", kStreams));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", kStreams));

  // The event, then a marker: per-stream order means the marker arrives last,
  // so [ack, event, marker] exactly proves "once, and nothing else".
  ASSERT_TRUE(
      PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///fan/x"}})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto start = Clock::now();
  size_t got = PumpAll(streams, has(3), Ms(30000));
  auto took = std::chrono::duration_cast<Ms>(Clock::now() - start).count();
  EXPECT_EQ(got, size_t(kStreams)) << "streams that received both notifications within 30 s";
  RecordProperty("fanout_ms", std::to_string(took));
  // Every stream's notifications went through the ring (at least one send each), or none did.
  auto sends = ReadMetric(srv.port(), "mcpfan_io_uring_sends_total");
  ASSERT_TRUE(sends.has_value());
  if (uring) EXPECT_GE(*sends, double(kStreams));
  else EXPECT_EQ(*sends, 0);

  int bad = 0;
  for (int i = 0; i < kStreams && bad < 5; ++i) {
    auto& evs = streams[i]->events();
    bool ok = evs.size() == 3;
    if (ok) {
      Json e1(evs[1].data), e2(evs[2].data);
      ok = IsNotification(e1, "notifications/resources/updated", IdJson(i), R"({"uri":"file:///fan/x"})") &&
           IsNotification(e2, "notifications/tools/list_changed", IdJson(i));
    }
    if (!ok || !streams[i]->id_lines().empty()) {
      ++bad;
      ADD_FAILURE() << "stream " << i << " got:" << DescribeEvents(evs)
                    << (streams[i]->id_lines().empty() ? "" : "\n  and SSE id fields");
    }
  }

  for (auto& s : owned) s->conn().Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0, Ms(15000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0, Ms(15000)));
  // Only the scrape itself may still be open.
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_connections_open", [](double v) { return v <= 1; }, Ms(15000)));
}

INSTANTIATE_TEST_SUITE_P(Sends, Fanout, ::testing::Values("", "4", "0"), [](const auto& info) {
  std::string e = info.param;
  return e.empty() ? std::string("IoUringDefault") : e == "0" ? std::string("LibuvWrites") : "IoUring" + e;
});

}  // namespace
}  // namespace itest

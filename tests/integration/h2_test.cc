// HTTP/2 in cleartext with prior knowledge (h2c), against the real mcpfan: every route over
// h2 streams, many listens on one connection, cancellation by RST_STREAM, flow control per
// stream, shutdown's final results. The hostile peers are in h2_hostile_test.cc.
#include "h2_client.h"
#include "harness.h"
#include "test_helpers.h"

namespace itest {
namespace {

bool IsAck(const SseEvent& e) {
  return e.data.find("notifications/subscriptions/acknowledged") != std::string::npos;
}

// The events of `s` other than its acknowledgement.
std::vector<SseEvent> Delivered(const H2Client::Stream& s) {
  std::vector<SseEvent> out;
  for (const SseEvent& e : s.events) {
    if (!IsAck(e)) out.push_back(e);
  }
  return out;
}

TEST(Http2, EveryRouteAnswersOverH2c) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  EXPECT_GE(c.max_concurrent_streams(), 1000u);  // nghttp2's default of 100 is too low for a hub
  std::int32_t livez = c.Request("GET", "/livez", {});
  std::int32_t metrics = c.Request("GET", "/metrics", {});
  std::int32_t missing = c.Request("GET", "/nope", {});
  std::int32_t publish = c.Request("POST", "/v1/publish", {{"content-type", "application/json"}},
                                   R"([{"method":"notifications/tools/list_changed"}])");
  std::int32_t discover =
      c.Request("POST", "/mcp", McpHeaders(kV2026, "server/discover"), RpcBody("1", "server/discover", {}, kV2026));
  ASSERT_TRUE(c.RunUntil([&] {
    for (auto id : {livez, metrics, missing, publish, discover}) {
      if (!c.stream(id).closed) return false;
    }
    return true;
  }));
  EXPECT_EQ(c.stream(livez).status, 200);
  EXPECT_EQ(c.stream(livez).data, "ok\n");
  EXPECT_EQ(c.stream(metrics).status, 200);
  EXPECT_NE(c.stream(metrics).data.find("mcpfan_h2_connections_open 1"), std::string::npos);
  EXPECT_EQ(c.stream(missing).status, 404);
  EXPECT_EQ(c.stream(publish).status, 202);
  EXPECT_EQ(c.stream(publish).data, R"({"accepted":1})");
  EXPECT_EQ(c.stream(discover).status, 200);
  EXPECT_NE(c.stream(discover).data.find("\"result\""), std::string::npos) << c.stream(discover).data;
}

TEST(Http2, ListenGetsThePublishAndItsFinalResultOnShutdown) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t id = c.Listen(R"("h2")", R"({"resourceSubscriptions":["file:///h2/"]})");
  ASSERT_TRUE(c.RunUntil([&] { return !c.stream(id).events.empty(); })) << c.stream(id).data;
  EXPECT_EQ(c.stream(id).status, 200);
  ASSERT_TRUE(IsAck(c.stream(id).events.front()));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///h2/a")));
  ASSERT_TRUE(c.RunUntil([&] { return Delivered(c.stream(id)).size() == 1; })) << c.stream(id).data;
  EXPECT_TRUE(IsNotification(Json(Delivered(c.stream(id))[0].data), "notifications/resources/updated", R"("h2")",
                             R"({"uri":"file:///h2/a"})"));
  srv.Signal(SIGTERM);
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(id).closed; }, kExitBound));
  EXPECT_EQ(c.stream(id).rst_code, 0u);  // a clean END_STREAM, not a reset
  auto events = Delivered(c.stream(id));
  ASSERT_EQ(events.size(), 2u) << c.stream(id).data;
  EXPECT_NE(events[1].data.find(R"("resultType":"complete")"), std::string::npos) << events[1].data;
  EXPECT_TRUE(srv.WaitExit(kExitBound));
}

TEST(Http2, AThousandListensOnOneConnectionEachGetOnePublishExactlyOnce) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  constexpr int kListens = 1000;
  std::vector<std::int32_t> ids;
  for (int i = 0; i < kListens; ++i) {
    ids.push_back(c.Listen("\"l" + std::to_string(i) + "\"", R"({"resourceSubscriptions":["file:///many/"]})"));
  }
  ASSERT_TRUE(c.RunUntil(
      [&] {
        for (auto id : ids) {
          if (c.stream(id).events.empty()) return false;
        }
        return true;
      },
      Ms(30000)));
  auto flushes_before = ReadMetric(srv.port(), "mcpfan_h2_flushes_total");
  ASSERT_TRUE(flushes_before);
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///many/x")));
  ASSERT_TRUE(c.RunUntil(
      [&] {
        for (auto id : ids) {
          if (Delivered(c.stream(id)).empty()) return false;
        }
        return true;
      },
      Ms(30000)));
  // Nothing more arrives: exactly once on every stream.
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///elsewhere/y")));
  c.RunUntil([] { return false; }, Ms(200));
  for (int i = 0; i < kListens; ++i) {
    auto events = Delivered(c.stream(ids[i]));
    ASSERT_EQ(events.size(), 1u) << "stream " << ids[i];
    ASSERT_TRUE(IsNotification(Json(events[0].data), "notifications/resources/updated",
                               "\"l" + std::to_string(i) + "\"", R"({"uri":"file:///many/x"})"));
  }
  // The 1,000 deliveries left in a few writes, not one each: every stream's frames of a loop
  // turn share the connection's one write.
  auto flushes_after = ReadMetric(srv.port(), "mcpfan_h2_flushes_total");
  ASSERT_TRUE(flushes_after);
  EXPECT_LT(*flushes_after - *flushes_before, kListens / 4.0);
}

TEST(Http2, RstStreamEndsTheListen) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t a = c.Listen(R"("a")", R"({"resourceSubscriptions":["file:///rst/"]})");
  std::int32_t b = c.Listen(R"("b")", R"({"resourceSubscriptions":["file:///rst/"]})");
  ASSERT_TRUE(c.RunUntil([&] { return !c.stream(a).events.empty() && !c.stream(b).events.empty(); }));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 2));
  c.Reset(a);
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1));
  // The other stream of the connection goes on.
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///rst/z")));
  ASSERT_TRUE(c.RunUntil([&] { return Delivered(c.stream(b)).size() == 1; }));
  EXPECT_TRUE(Delivered(c.stream(a)).empty());
}

TEST(Http2, StreamsPastTheLimitEndTheConnectionAndAreCounted) {
  ServerProcess srv({"--h2-max-streams", "3"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_EQ(c.max_concurrent_streams(), 3u);
  std::vector<std::int32_t> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(c.Listen("\"s" + std::to_string(i) + "\"", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(c.RunUntil([&] {
    for (auto id : ids) {
      if (c.stream(id).events.empty()) return false;
    }
    return true;
  }));
  // nghttp2's client keeps to the limit itself; a raw HEADERS goes past it.
  std::int32_t extra = ids.back() + 2;
  std::string frame = H2Client::Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, extra,
                                      H2Client::GetBlock("/livez"));
  ASSERT_TRUE(c.SendRaw(frame));
  // Past a limit it acknowledged the client broke the protocol: nghttp2 ends the connection
  // (RFC 9113 §5.1.2 allows a stream error; nghttp2 makes it a connection error), naming why.
  ASSERT_TRUE(c.RunUntil([&] { return c.goaway(); }));
  EXPECT_EQ(c.goaway_code(), static_cast<std::uint32_t>(NGHTTP2_PROTOCOL_ERROR));
  EXPECT_NE(c.goaway_reason().find("max concurrent streams"), std::string::npos) << c.goaway_reason();
  EXPECT_TRUE(
      PollMetric(srv.port(), R"(mcpfan_limit_hits_total{limit="h2_streams"})", [](double v) { return v >= 1; }));
}

// A stream whose reader stops: its window shuts, its backlog grows in mcpfan, and it is reset
// as a slow consumer at --max-pending-bytes; the other stream of the connection never waits.
TEST(Http2, ASlowStreamIsResetAndItsNeighbourGoesOn) {
  ServerProcess srv({"--max-pending-bytes", "16384", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client::Options o;
  o.manual_window = true;
  o.initial_window = 4096;
  H2Client c(o);
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t slow = c.Listen(R"("slow")", R"({"resourceSubscriptions":["file:///slow/"]})");
  std::int32_t fast = c.Listen(R"("fast")", R"({"resourceSubscriptions":["file:///fast/"]})");
  std::size_t fast_seen = 0;
  auto keep_fast_open = [&] {  // only the fast stream's bytes (and the connection's) are given back
    std::size_t n = c.stream(fast).data.size();
    if (n > fast_seen) {
      c.Consume(fast, n - fast_seen);
      fast_seen = n;
    }
  };
  ASSERT_TRUE(c.RunUntil([&] { return !c.stream(slow).events.empty() && !c.stream(fast).events.empty(); }));
  keep_fast_open();
  std::string pad(400, 'p');
  for (int i = 0; i < 200 && !c.stream(slow).closed; ++i) {
    // Distinct URIs: nothing coalesces, the backlog only grows.
    ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///slow/" + std::to_string(i), R"("pad":")" + pad + "\"")));
    c.RunUntil([&] { return c.stream(slow).closed; }, Ms(5));
  }
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(slow).closed; }, Ms(10000)));
  EXPECT_EQ(c.stream(slow).rst_code, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_slow_consumer_closes_total", [](double v) { return v >= 1; }));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///fast/1")));
  ASSERT_TRUE(c.RunUntil([&] {
    keep_fast_open();
    return Delivered(c.stream(fast)).size() == 1;
  }));
  EXPECT_FALSE(c.goaway());
}

// A stream whose window stays shut while bytes wait is reset after --write-timeout-ms, counted.
TEST(Http2, AWindowThatStaysShutIsResetAfterTheWriteTimeout) {
  ServerProcess srv({"--write-timeout-ms", "300", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client::Options o;
  o.manual_window = true;
  o.initial_window = 0;  // not one byte of DATA until the client opens it (it never does)
  H2Client c(o);
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t id = c.Listen(R"("shut")", R"({"toolsListChanged":true})");
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(id).status == 200 || c.stream(id).closed; }));
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(id).closed; }, Ms(15000)));
  EXPECT_EQ(c.stream(id).rst_code, static_cast<std::uint32_t>(NGHTTP2_CANCEL));
  EXPECT_TRUE(c.stream(id).data.empty());
  EXPECT_TRUE(
      PollMetric(srv.port(), R"(mcpfan_limit_hits_total{limit="h2_zero_window"})", [](double v) { return v >= 1; }));
}

TEST(Http2, NoH2AnswersThePrefaceAsHttp1) {
  ServerProcess srv({"--no-h2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = Roundtrip(srv.port(), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  ASSERT_TRUE(r);
  EXPECT_GE(r->status, 400);
}

}  // namespace
}  // namespace itest

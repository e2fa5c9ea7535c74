// Stream lifecycle: notifications/cancelled, client close, keepalive comments.
#include "harness.h"

namespace itest {
namespace {

std::string CancelRequest(std::string_view request_id_json) {
  std::string body = R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":)" +
                     Envelope(kV2026) + R"(,"requestId":)" + std::string(request_id_json) + "}}";
  // Notifications carry only the version header.
  return McpPost(body, McpHeaders(kV2026, ""));
}

// Over HTTP a client cancels a listen by closing its stream; the SDK then also POSTs
// notifications/cancelled for it. Requests carry no client identity (no session, often a
// shared token), so that POST must not end anyone else's listen with the same id: SDK
// clients all name their first listen "listen:0".
TEST(Lifecycle, CancelPostDoesNotEndAnotherClientsListen) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  ASSERT_TRUE(OpenListen(a, srv.port(), R"("listen:0")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenListen(b, srv.port(), R"("listen:0")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 2));

  auto r = Roundtrip(srv.port(), CancelRequest(R"("listen:0")"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;

  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  for (SseStream* s : {&a, &b}) {
    std::string err;
    auto m = s->NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err << " ended=" << s->ended();
    EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("listen:0")"));
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 2));
}

TEST(Lifecycle, CancelPostWithNumericIdIsAccepted) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), "913", R"({"promptsListChanged":true})"));
  auto r = Roundtrip(srv.port(), CancelRequest("913"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  // Closing the stream is what cancels it.
  s.conn().Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
}

TEST(Lifecycle, CancelUnknownRequestIdIsHarmless) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("keep")", R"({"toolsListChanged":true})"));
  for (const char* id : {R"("nope")", "12345", R"("KEEP")", "-1"}) {
    auto r = Roundtrip(srv.port(), CancelRequest(id));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 202) << id << ": " << r->body;
  }
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("keep")"));
}

TEST(Lifecycle, ClosingStreamFreesSubscription) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  ASSERT_TRUE(OpenListen(a, srv.port(), R"("a")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenListen(b, srv.port(), R"("b")", R"({"resourceSubscriptions":["file:///z"]})"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 2));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 2));

  a.conn().Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 1));
  b.conn().Reset();  // abrupt close (RST)
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
  // Publishing to the freed subscriptions is harmless.
  EXPECT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

TEST(Lifecycle, KeepaliveCommentsOnIdleStream) {
  ServerProcess srv({"--keepalive-ms", "100"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("ka")", R"({"toolsListChanged":true})"));
  auto start = Clock::now();
  ASSERT_TRUE(s.WaitComments(3, Ms(5000))) << "got " << s.comments().size() << " keepalive comments in 5 s";
  auto took = std::chrono::duration_cast<Ms>(Clock::now() - start).count();
  RecordProperty("three_keepalives_ms", std::to_string(took));
  for (const auto& c : s.comments()) EXPECT_EQ(c, "keepalive");
  EXPECT_TRUE(s.events().empty()) << "keepalives must be comments, not events:" << DescribeEvents(s.events());
  // The stream still works after keepalives.
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("ka")"));
}

TEST(Lifecycle, AFlagOutOfRangeIsRefusedBeforeServing) {
  // --workers has no parse-time range of its own: Server::check() (what start() checks) checks
  // every field, and a configuration error exits 2 (cli_test.cc).
  ChildProcess p;
  ASSERT_TRUE(p.Spawn({MCPFAN_BIN, "--listen", "127.0.0.1:0", "--workers", "5000"})) << p.error();
  ASSERT_TRUE(p.WaitExit(Ms(10000)));
  EXPECT_EQ(p.DescribeStatus(), "exit 2");
  EXPECT_NE(p.Stderr().find("ServerConfig::workers = 5000 is outside 0..1024 (--workers)"), std::string::npos)
      << p.Stderr();
  EXPECT_EQ(p.Stderr().find("listening on"), std::string::npos) << p.Stderr();
}

}  // namespace
}  // namespace itest

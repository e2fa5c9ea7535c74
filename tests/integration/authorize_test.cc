// Per-subscription authorization by the application (--authorize-url; docs/security.md): a
// scripted application (a loopback HTTP server) answers which of a listen's URIs and kinds the
// caller may watch. The acknowledgement is narrowed to that, answers are cached for their
// ttlMs and asked once per distinct question in flight, and an application that is slow, down
// or answers an error fails the request closed (503), counted.
#include <atomic>
#include <string>
#include <vector>

#include "fake_upstream.h"
#include "h2_client.h"
#include "harness.h"
#include "session_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

constexpr std::string_view kJsonType = "Content-Type: application/json\r\n";
constexpr std::string_view kAsk =
    R"({"resourceSubscriptions":["file:///a","file:///b"],"toolsListChanged":true,"promptsListChanged":true})";

std::string AuthorizeListen(std::string_view id, std::string_view notifications = kAsk) {
  return McpPost(RpcBody(id, "subscriptions/listen", R"("notifications":)" + std::string(notifications), "2026-07-28"),
                 McpHeaders("2026-07-28", "subscriptions/listen"));
}

// An application that allows file:///a and the tool list for 60 s, counting its questions.
struct Application {
  explicit Application(std::string answer =
                           R"({"notifications":{"resourceSubscriptions":["file:///a"],"toolsListChanged":true},)"
                           R"("ttlMs":60000})",
                       int status = 200)
      : up([this, answer, status](int fd, const UpstreamRequest&) {
          if (hold) (void)gate.Wait(Ms(20000));
          FakeUpstream::Write(fd, FakeUpstream::Answer(status, kJsonType, answer));
          return FakeUpstream::Next::Read;
        }) {}
  std::string url() const { return "http://127.0.0.1:" + std::to_string(up.port()) + "/authorize"; }
  std::atomic<bool> hold{false};
  Gate gate;
  FakeUpstream up;
};

TEST(Authorize, TheAcknowledgementIsNarrowedToWhatTheApplicationAllowsAndOnlyThatIsDelivered) {
  Application app;
  ServerProcess srv({"--authorize-url", app.url()});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(
      OpenListen(s, srv.port(), "1", kAsk, R"({"resourceSubscriptions":["file:///a"],"toolsListChanged":true})"));
  auto asked = app.up.requests();
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].method, "POST");
  EXPECT_EQ(asked[0].target, "/authorize");
  Json q(asked[0].body);
  EXPECT_EQ(q.GetString({"tenant"}).value_or(""), "default");
  EXPECT_EQ(q.GetString({"method"}).value_or(""), "subscriptions/listen");
  EXPECT_TRUE(JsonMatches(q.Get({"notifications"}), kAsk));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///b"}})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/prompts/list_changed"})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///a"}})"));
  auto note = s.NextMessage();
  ASSERT_TRUE(note);
  EXPECT_TRUE(IsNotification(*note, "notifications/resources/updated", "1", R"({"uri":"file:///a"})"));
  EXPECT_FALSE(s.NextMessage(Ms(300))) << "delivered what the application did not allow";
}

TEST(Authorize, AnAnswerIsReusedForItsTtlAndEqualQuestionsInFlightAskOnce) {
  Application app;
  ServerProcess srv({"--authorize-url", app.url(), "--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  app.hold = true;
  // Three equal listens while the application has not answered: one question.
  std::vector<SseStream> streams(3);
  for (auto& s : streams) ASSERT_TRUE(s.Start(srv.port(), AuthorizeListen("1")));
  ASSERT_TRUE(app.up.WaitRequests(1));
  ASSERT_TRUE(PollMetric(srv.port(), "mcpfan_oauth_waiting", [](double v) { return v == 3; }));
  app.gate.Open();
  for (auto& s : streams) {
    std::string err;
    auto ack = s.NextMessage(kIo, &err);
    ASSERT_TRUE(ack) << err;
    EXPECT_TRUE(JsonMatches(ack->Get({"params", "notifications"}),
                            R"({"resourceSubscriptions":["file:///a"],"toolsListChanged":true})"));
  }
  // Later: from the cache.
  SseStream later;
  ASSERT_TRUE(OpenListen(later, srv.port(), "2", kAsk));
  EXPECT_EQ(app.up.requests().size(), 1u);
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_authorize_calls_total", 1));
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_authorize_cache_hits_total", [](double v) { return v >= 1; }));
}

TEST(Authorize, HttpTwoStreamsWaitForTheAnswerWhileTheirConnectionServesOthers) {
  Application app;
  ServerProcess srv({"--authorize-url", app.url()});
  ASSERT_TRUE(srv.ok()) << srv.error();
  app.hold = true;
  H2Client h2;
  ASSERT_TRUE(h2.Connect(srv.port()));
  std::int32_t waiting = h2.Listen("1", kAsk);
  ASSERT_GT(waiting, 0);
  ASSERT_TRUE(h2.RunUntil([&] { return !app.up.requests().empty(); }));  // sends the listen; it waits
  // The suspended stream holds nothing else up: another request on the connection is answered.
  std::int32_t health = h2.Request("GET", "/livez", {});
  ASSERT_TRUE(h2.RunUntil([&] { return h2.stream(health).closed; }));
  EXPECT_EQ(h2.stream(health).status, 200);
  EXPECT_EQ(h2.stream(waiting).status, 0) << "answered before the application";
  app.gate.Open();
  ASSERT_TRUE(h2.RunUntil([&] { return !h2.stream(waiting).events.empty(); }));
  EXPECT_EQ(h2.stream(waiting).status, 200);
  Json ack(h2.stream(waiting).events.front().data);
  EXPECT_TRUE(JsonMatches(ack.Get({"params", "notifications"}),
                          R"({"resourceSubscriptions":["file:///a"],"toolsListChanged":true})"));
}

TEST(Authorize, APipelinedRequestBehindAWaitingOneIsAnsweredAfterItInOrder) {
  Application app;
  ServerProcess srv({"--authorize-url", app.url()});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  app.hold = true;
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send(SessionPostRequest(sid, Rpc2025("5", "resources/subscribe", R"({"uri":"file:///a"})")) +
                     BuildRequest("GET", "/livez", {}, "")));
  ASSERT_TRUE(app.up.WaitRequests(1));
  app.gate.Open();
  auto first = c.ReadResponse();
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200) << first->body;
  EXPECT_NE(first->body.find(R"("id":5)"), std::string::npos) << first->body;
  auto second = c.ReadResponse();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->status, 200);
  EXPECT_EQ(second->body, "ok\n");
}

TEST(Authorize, AnApplicationThatAllowsNothingGets403AndADeniedSubscribeToo) {
  Application app(R"({"notifications":{}})");
  ServerProcess srv({"--authorize-url", app.url()});
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), AuthorizeListen("1"));
  EXPECT_TRUE(IsRpcError(r, 403, -32031, "1", {"--authorize-url"}));
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  RpcReply sub = SessionCall(srv.port(), sid, Rpc2025("2", "resources/subscribe", R"({"uri":"file:///a"})"));
  EXPECT_TRUE(IsRpcError(sub, 403, -32031, "2", {"--authorize-url"}));
  Json q(app.up.requests().back().body);
  EXPECT_EQ(q.GetString({"method"}).value_or(""), "resources/subscribe");
  EXPECT_TRUE(JsonMatches(q.Get({"notifications"}), R"({"resourceSubscriptions":["file:///a"]})"));
}

TEST(Authorize, ASlowADownAndAFailingApplicationEachFailTheRequestClosed) {
  {
    Application slow;
    slow.hold = true;
    ServerProcess srv({"--authorize-url", slow.url(), "--authorize-timeout-ms", "300"});
    ASSERT_TRUE(srv.ok()) << srv.error();
    RpcReply r = McpCall(srv.port(), AuthorizeListen("1"));
    EXPECT_EQ(r.http.status, 503) << r.http.body;
    EXPECT_NE(r.http.body.find("did not answer"), std::string::npos) << r.http.body;
    EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_authorize_failures_total", 1));
    slow.gate.Open();
  }
  {
    ServerProcess srv({"--authorize-url", "http://127.0.0.1:" + std::to_string(UnusedPort()) + "/authorize"});
    ASSERT_TRUE(srv.ok()) << srv.error();
    RpcReply r = McpCall(srv.port(), AuthorizeListen("1"));
    EXPECT_EQ(r.http.status, 503) << r.http.body;
    EXPECT_EQ(r.http.Get("Retry-After").value_or(""), "1");
  }
  {
    Application failing(R"({"error":"boom"})", 500);
    ServerProcess srv({"--authorize-url", failing.url()});
    ASSERT_TRUE(srv.ok()) << srv.error();
    RpcReply r = McpCall(srv.port(), AuthorizeListen("1"));
    EXPECT_EQ(r.http.status, 503) << r.http.body;
    EXPECT_NE(r.http.body.find("HTTP 500"), std::string::npos) << r.http.body;
  }
  {
    Application garbled(R"({"notifications":{"resourceSubscriptions":"file:///a"}})");
    ServerProcess srv({"--authorize-url", garbled.url()});
    ASSERT_TRUE(srv.ok()) << srv.error();
    RpcReply r = McpCall(srv.port(), AuthorizeListen("1"));
    EXPECT_EQ(r.http.status, 503) << r.http.body;
    EXPECT_NE(r.http.body.find("not an array"), std::string::npos) << r.http.body;
  }
}

}  // namespace
}  // namespace itest

// 2025-era MCP sessions over HTTP (design §2.2; tests/interop/sdk_v1 and conformance
// FINDINGS): initialize, the GET stream, resources/subscribe|unsubscribe ordered with
// publishes (also across workers), 409/404/403, DELETE, idle expiry, gauges.
#include <signal.h>

#include <string>
#include <vector>

#include "harness.h"
#include "session_client.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

// The next message on a session stream, which must be a plain (no subscriptionId)
// notification `method` with exactly `params`.
::testing::AssertionResult NextIs(SseStream& s, std::string_view method, std::string_view params, Ms timeout = kIo) {
  std::string err;
  auto m = s.NextMessage(timeout, &err);
  if (!m) return ::testing::AssertionFailure() << "waiting for " << method << " " << params << ": " << err;
  return IsPlainNotification(*m, method, params);
}

// Nothing but (optional) keepalive comments within `quiet`.
::testing::AssertionResult NothingMore(SseStream& s, Ms quiet = Ms(300)) {
  auto ev = s.Next(quiet);
  if (ev) return ::testing::AssertionFailure() << "unexpected event: [" << ev->event << "] " << ev->data;
  return ::testing::AssertionSuccess();
}

// A session with its GET stream open.
struct OpenSession {
  std::string sid;
  SseStream stream;
};

::testing::AssertionResult StartSession(int port, OpenSession& s) {
  if (auto r = Initialize(port, &s.sid); !r) return r;
  RpcReply n = McpCall(port, SessionPostRequest(s.sid, R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  if (n.http.status != 202) {
    return ::testing::AssertionFailure() << "notifications/initialized: want 202, got " << n.http.status << " "
                                         << n.http.body.substr(0, 300);
  }
  return OpenSessionStream(s.stream, port, s.sid);
}

TEST(Session, InitializeGivesSessionAndEmptyResults) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid, sid2;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  ASSERT_TRUE(Initialize(srv.port(), &sid2, R"("init")"));
  EXPECT_NE(sid, sid2) << "two initializes must create two sessions";

  RpcReply n = SessionCall(srv.port(), sid, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(n.http.status, 202) << n.http.body;

  for (const char* method : {"ping", "logging/setLevel"}) {
    std::string params = std::string(method) == "ping" ? "" : R"({"level":"info"})";
    RpcReply r = SessionCall(srv.port(), sid, Rpc2025("7", method, params));
    ASSERT_EQ(r.http.status, 200) << method << ": " << r.http.body;
    ASSERT_TRUE(r.msg.ok()) << method << ": " << r.err;
    // Strict-empty: not even _meta or resultType (sdk_v1 FINDINGS §0.6, conformance §0.4).
    EXPECT_TRUE(IsResult(r.msg, "7", "{}")) << method;
  }
  // The conformance suite sends an older 2025 revision in the header of a session request.
  auto h = McpHeaders("2025-03-26", "");
  h.push_back({"Mcp-Session-Id", sid});
  RpcReply old = McpCall(srv.port(), McpPost(Rpc2025("8", "ping"), h));
  ASSERT_TRUE(old.msg.ok()) << old.err << " " << old.http.body;
  EXPECT_EQ(old.http.status, 200);
  EXPECT_TRUE(IsResult(old.msg, "8", "{}"));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 2));
}

TEST(Session, SubscribeThenPublishArrivesVerbatimWithoutSubscriptionId) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///s/a.txt", "1"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///s/dir/", R"("two")"));

  const std::string a_params =
      R"({"uri":"file:///s/a.txt","_meta":{"origin/rev":42,"test/seq":1},"extra":[1,"x",null]})";
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":)" + a_params + "}"));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///s/b.txt")));       // not subscribed
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///s/a.txt.bak")));   // prefix trap
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///s/dir/c.txt")));   // sub-resource of dir/
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///s/dir")));         // not under "dir/"
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"m":1}}})"));

  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", a_params));
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///s/dir/c.txt"})"));
  EXPECT_TRUE(NextIs(s.stream, "notifications/tools/list_changed", R"({"_meta":{"m":1}})"));
  EXPECT_TRUE(NothingMore(s.stream));
  // Event ids on session streams (resumption) are checked in session_resume_test.cc.
}

// design §3: params are delivered verbatim; a 2025 session adds nothing to them, so an
// empty publisher `_meta` object must arrive as an empty object too.
TEST(Session, PublisherParamsVerbatimIncludingEmptyMeta) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///v/a", "1"));
  const std::string p1 = R"({"uri":"file:///v/a","_meta":{}})";
  const std::string p2 = R"({"_meta":{},"x":{}})";
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":)" + p1 + "}"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed","params":)" + p2 + "}"));
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", p1));
  EXPECT_TRUE(NextIs(s.stream, "notifications/tools/list_changed", p2));
}

TEST(Session, SigtermEndsGetStreamCleanly) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<OpenSession> sessions(3);
  for (auto& s : sessions) ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(srv.Signal(SIGTERM));
  for (size_t i = 0; i < sessions.size(); ++i) {
    EXPECT_TRUE(sessions[i].stream.WaitEnd(Ms(2000)))
        << "session " << i << ": the GET stream must end with the chunked terminator";
    // A JSON-RPC result on a GET stream would confuse 2025 clients; nothing is sent.
    EXPECT_TRUE(sessions[i].stream.events().empty())
        << "session " << i << ":" << DescribeEvents(sessions[i].stream.events());
  }
  ASSERT_TRUE(srv.WaitExit(kExitBound)) << "not exited after SIGTERM (a hang)";
  EXPECT_EQ(srv.DescribeStatus(), "exit 0");
}

TEST(Session, AllThreeListChangedKindsArrive) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  // No resources/subscribe needed: list_changed of the tenant always goes to the session.
  ASSERT_TRUE(PublishOk(srv.port(), R"([{"method":"notifications/resources/list_changed"},
                                        {"method":"notifications/prompts/list_changed","params":{"_meta":{"k":"v"}}},
                                        {"method":"notifications/tools/list_changed"}])",
                        3));
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/list_changed", "{}"));
  EXPECT_TRUE(NextIs(s.stream, "notifications/prompts/list_changed", R"({"_meta":{"k":"v"}})"));
  EXPECT_TRUE(NextIs(s.stream, "notifications/tools/list_changed", "{}"));
  EXPECT_TRUE(NothingMore(s.stream));
}

TEST(Session, UnsubscribeStopsUpdates) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///u/a", "1"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///u/marker", "2"));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///u/a", R"("_meta":{"seq":1})")));
  ASSERT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///u/a","_meta":{"seq":1}})"));

  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///u/a", "3", /*subscribe=*/false));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///u/a", R"("_meta":{"seq":2})")));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///u/marker")));
  // Per-stream order is publish order: had the update been delivered, it would come first.
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///u/marker"})"));
  EXPECT_TRUE(NothingMore(s.stream));
  // Unsubscribing something never subscribed is still {}.
  EXPECT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///u/never", "4", /*subscribe=*/false));
}

// design §4: at most once per (subscription, event), even when an exact URI and a
// '/'-prefix of the session both match; subscribe is idempotent, so one unsubscribe
// after two subscribes ends the URI.
TEST(Session, OverlappingAndRepeatedSubscribes) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///ov/dir/", "1"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///ov/dir/a", "2"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///ov/b", "3"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///ov/b", "4"));  // again
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///ov/dir/a")));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///ov/b")));
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///ov/dir/a"})"));
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///ov/b"})"));
  EXPECT_TRUE(NothingMore(s.stream)) << "each update exactly once";
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///ov/b", "5", /*subscribe=*/false));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///ov/b")));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///ov/dir/z")));  // marker
  EXPECT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///ov/dir/z"})"))
      << "one unsubscribe ends a URI subscribed twice";
  EXPECT_TRUE(NothingMore(s.stream));
}

// Subscriptions made before the GET stream opens apply to it, and the session keeps its
// URIs across a GET stream that ends (the SDK re-GETs after 1 s and never re-subscribes).
TEST(Session, SubscriptionsOutliveTheGetStream) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "file:///o/a", "1"));
  {
    SseStream first;
    ASSERT_TRUE(OpenSessionStream(first, srv.port(), sid));
    ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///o/a")));
    EXPECT_TRUE(NextIs(first, "notifications/resources/updated", R"({"uri":"file:///o/a"})"));
    first.conn().Close();  // the client drops the stream
  }
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0));
  SseStream second;
  // The server may need a moment to notice the close; a 409 in between is allowed.
  bool opened = false;
  std::string last;
  for (int i = 0; i < 100 && !opened; ++i) {
    SseStream attempt;
    auto r = OpenSessionStream(attempt, srv.port(), sid);
    if (r) {
      second = std::move(attempt);
      opened = true;
    } else {
      last = r.message();
      std::this_thread::sleep_for(Ms(20));
    }
  }
  ASSERT_TRUE(opened) << last;
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///o/a", R"("_meta":{"n":2})")));
  EXPECT_TRUE(NextIs(second, "notifications/resources/updated", R"({"uri":"file:///o/a","_meta":{"n":2}})"));
}

// The subscribe POST and the GET stream may sit on different workers; a publish sent
// after the {} reply must be matched against the new URI set (sdk_v1 FINDINGS §6).
TEST(Session, SubscribeAppliesBeforeNextPublishAcrossWorkers) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  constexpr int kSessions = 8;  // SO_REUSEPORT spreads their GET streams over both workers
  std::vector<OpenSession> sessions(kSessions);
  for (int i = 0; i < kSessions; ++i) {
    ASSERT_TRUE(StartSession(srv.port(), sessions[size_t(i)])) << "session " << i;
    ASSERT_TRUE(SessionSubscribe(srv.port(), sessions[size_t(i)].sid, "x:///marker/" + std::to_string(i), "1"));
  }
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", kSessions));
  int failures = 0;
  for (int round = 0; round < 50 && failures < 3; ++round) {
    OpenSession& s = sessions[size_t(round % kSessions)];
    std::string uri = "x:///round/" + std::to_string(round);
    std::string marker = "x:///marker/" + std::to_string(round % kSessions);
    std::string params = R"({"uri":")" + uri + R"(","_meta":{"round":)" + std::to_string(round) + "}}";
    std::string pub = R"({"method":"notifications/resources/updated","params":)" + params + "}";
    // Subscribe, then publish at once (each request on a fresh connection: any worker).
    ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, uri, std::to_string(round * 2 + 10)));
    ASSERT_TRUE(PublishOk(srv.port(), pub));
    auto got = NextIs(s.stream, "notifications/resources/updated", params, Ms(3000));
    if (!got) {
      ++failures;
      ADD_FAILURE() << "round " << round << ": update published right after the subscribe's {} did not arrive first: "
                    << got.message();
      continue;
    }
    // Unsubscribe, then publish the URI and the session's marker: only the marker may arrive.
    ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, uri, std::to_string(round * 2 + 11), false));
    ASSERT_TRUE(PublishOk(srv.port(), pub));
    ASSERT_TRUE(PublishOk(srv.port(), Updated(marker)));
    auto only_marker = NextIs(s.stream, "notifications/resources/updated", R"({"uri":")" + marker + R"("})", Ms(3000));
    if (!only_marker) {
      ++failures;
      ADD_FAILURE() << "round " << round << ": after unsubscribe's {} the next event must be the marker: "
                    << only_marker.message();
    }
  }
  // No session received anything meant for another.
  for (int i = 0; i < kSessions; ++i) {
    EXPECT_TRUE(NothingMore(sessions[size_t(i)].stream, Ms(50))) << "session " << i;
  }
}

TEST(Session, SecondGetIs409AndFirstKeepsWorking) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  // Several sessions and several second GETs: the two GETs of one session often sit on
  // different workers.
  std::vector<OpenSession> sessions(4);
  for (auto& s : sessions) {
    ASSERT_TRUE(StartSession(srv.port(), s));
    for (int i = 0; i < 3; ++i) {
      SseStream second;
      std::string err;
      ASSERT_TRUE(second.Open(srv.port(), SessionGetRequest(s.sid), kIo, &err)) << err;
      EXPECT_EQ(second.head().status, 409) << second.head().body;
    }
  }
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  for (auto& s : sessions) {
    EXPECT_TRUE(NextIs(s.stream, "notifications/tools/list_changed", "{}"));
    EXPECT_TRUE(NothingMore(s.stream, Ms(50)));
  }
}

TEST(Session, GetWithoutSessionHeaderIs400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = Roundtrip(srv.port(), BuildRequest("GET", "/mcp", {{"Accept", "text/event-stream"}}));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
}

TEST(Session, DeleteEndsStreamSessionAndItsSubscriptions) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  // Sessions whose stream may sit on the other worker than the DELETE.
  std::vector<OpenSession> others(4);
  for (size_t i = 0; i < others.size(); ++i) {
    ASSERT_TRUE(StartSession(srv.port(), others[i]));
    ASSERT_TRUE(SessionSubscribe(srv.port(), others[i].sid, "file:///d/other", "1"));
  }
  std::string streamless;  // never opened a GET stream
  ASSERT_TRUE(Initialize(srv.port(), &streamless));
  ASSERT_TRUE(SessionSubscribe(srv.port(), streamless, "file:///d/a", "1"));
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_EQ(DeleteSession(srv.port(), others[i].sid), 200);
    EXPECT_TRUE(others[i].stream.WaitEnd(kIo)) << "session " << i << ": DELETE must end its GET stream";
  }
  EXPECT_EQ(DeleteSession(srv.port(), streamless), 200);
  EXPECT_TRUE(IsRpcError(SessionCall(srv.port(), streamless, Rpc2025("1", "ping")), 404, -32001, "1"));

  OpenSession s;
  ASSERT_TRUE(StartSession(srv.port(), s));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///d/a", "1"));
  ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, "file:///d/dir/", "2"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 1));
  ASSERT_TRUE(PollMetric(srv.port(), "mcpfan_subscriptions_active", [](double v) { return v >= 1; }));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///d/a")));
  ASSERT_TRUE(NextIs(s.stream, "notifications/resources/updated", R"({"uri":"file:///d/a"})"));

  EXPECT_EQ(DeleteSession(srv.port(), s.sid), 200);
  EXPECT_TRUE(s.stream.WaitEnd(kIo)) << "DELETE must end the GET stream with the chunked terminator; "
                                     << (s.stream.eof() ? "closed without it" : "still open")
                                     << "; events: " << DescribeEvents(s.stream.events());

  RpcReply ping = SessionCall(srv.port(), s.sid, Rpc2025("9", "ping"));
  EXPECT_TRUE(IsRpcError(ping, 404, -32001, "9"));
  auto get = Roundtrip(srv.port(), SessionGetRequest(s.sid));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 404) << get->body;
  RpcReply sub = SessionCall(srv.port(), s.sid, Rpc2025("10", "resources/subscribe", R"({"uri":"file:///d/a"})"));
  EXPECT_EQ(sub.http.status, 404) << sub.http.body;
  EXPECT_EQ(DeleteSession(srv.port(), s.sid), 404);

  // A session's subscriptions die with the session.
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0));
  auto before = ReadMetric(srv.port(), "mcpfan_deliveries_total");
  ASSERT_TRUE(before);
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///d/a")));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///d/dir/x")));
  std::this_thread::sleep_for(Ms(200));
  EXPECT_EQ(ReadMetric(srv.port(), "mcpfan_deliveries_total"), before) << "a deleted session still received deliveries";
}

TEST(Session, IdleSessionWithoutStreamExpires) {
  ServerProcess srv({"--session-idle-ms", "200"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string idle;
  ASSERT_TRUE(Initialize(srv.port(), &idle));
  ASSERT_TRUE(SessionSubscribe(srv.port(), idle, "file:///i/a", "1"));
  RpcReply fresh = SessionCall(srv.port(), idle, Rpc2025("1", "ping"));
  EXPECT_TRUE(IsResult(fresh.msg, "1", "{}")) << "a session used just now must still exist";

  OpenSession streaming;  // has a GET stream open: must not expire
  ASSERT_TRUE(StartSession(srv.port(), streaming));
  ASSERT_TRUE(SessionSubscribe(srv.port(), streaming.sid, "file:///i/b", "1"));

  // Polling the gauge does not touch the session (a ping would refresh its idle clock).
  auto t0 = Clock::now();
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 1, Ms(5000)));
  auto took = std::chrono::duration_cast<Ms>(Clock::now() - t0).count();
  EXPECT_LE(took, 2000) << "a 200 ms idle session should be gone after about a second";
  RpcReply gone = SessionCall(srv.port(), idle, Rpc2025("2", "ping"));
  EXPECT_TRUE(IsRpcError(gone, 404, -32001, "2"));

  // The streaming session outlived several idle periods and still delivers.
  RpcReply alive = SessionCall(srv.port(), streaming.sid, Rpc2025("3", "ping"));
  EXPECT_TRUE(IsResult(alive.msg, "3", "{}")) << alive.http.status << " " << alive.http.body;
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///i/b")));
  EXPECT_TRUE(NextIs(streaming.stream, "notifications/resources/updated", R"({"uri":"file:///i/b"})"));

  // Once its stream closes it is idle too, and expires with its subscription.
  streaming.stream.conn().Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 0, Ms(5000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
  RpcReply gone2 = SessionCall(srv.port(), streaming.sid, Rpc2025("4", "ping"));
  EXPECT_TRUE(IsRpcError(gone2, 404, -32001, "4"));
}

TEST(Session, UnknownSessionIs404) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string bogus = "0123456789abcdef0123456789abcdef";
  RpcReply ping = SessionCall(srv.port(), bogus, Rpc2025(R"("p")", "ping"));
  EXPECT_TRUE(IsRpcError(ping, 404, -32001, R"("p")"));
  RpcReply sub = SessionCall(srv.port(), bogus, Rpc2025("3", "resources/subscribe", R"({"uri":"file:///x"})"));
  EXPECT_TRUE(IsRpcError(sub, 404, -32001, "3"));
  RpcReply note = SessionCall(srv.port(), bogus, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(note.http.status, 404) << note.http.body;
  auto get = Roundtrip(srv.port(), SessionGetRequest(bogus));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 404) << get->body;
  EXPECT_EQ(DeleteSession(srv.port(), bogus), 404);
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 0));
}

std::string InitBody() {
  return R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
         R"("capabilities":{},"clientInfo":{"name":"itest-host","version":"1.0.0"}}})";
}

int InitStatusWithHost(int port, std::string_view host) {
  auto r = Roundtrip(port, RequestWithHost("POST", "/mcp", host,
                                           {{"Content-Type", "application/json"},
                                            {"Accept", "application/json, text/event-stream"}},
                                           InitBody()));
  return r ? r->status : 0;
}

TEST(Session, HostAllowList) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string p = std::to_string(srv.port());
  EXPECT_EQ(InitStatusWithHost(srv.port(), "evil.example.com"), 403);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "evil.example.com:" + p), 403);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "127.0.0.1.evil.example.com:" + p), 403);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "localhost.evil:" + p), 403);
  // A bad Host is refused whatever the path (the publish endpoint included).
  auto pub = Roundtrip(srv.port(), RequestWithHost("POST", "/v1/publish", "evil.example.com",
                                                   {{"Content-Type", "application/json"}},
                                                   R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(pub);
  EXPECT_EQ(pub->status, 403) << pub->body;
  EXPECT_EQ(InitStatusWithHost(srv.port(), "127.0.0.1:" + p), 200);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "localhost:" + p), 200);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "LOCALHOST"), 200);
  EXPECT_EQ(InitStatusWithHost(srv.port(), "[::1]:" + p), 200);
  // conformance dns-rebinding-protection: rebinding Host + Origin -> 4xx.
  auto evil = Roundtrip(srv.port(), RequestWithHost("POST", "/mcp", "evil.example.com",
                                                    {{"Content-Type", "application/json"},
                                                     {"Origin", "http://evil.example.com"},
                                                     {"Accept", "application/json, text/event-stream"}},
                                                    InitBody()));
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 403);
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 4))
      << "only the four allowed initializes create sessions";
}

TEST(Session, AllowHostFlag) {
  ServerProcess one({"--allow-host", "mcp.example.com", "--allow-host", "other.example"});
  ASSERT_TRUE(one.ok()) << one.error();
  const std::string p = std::to_string(one.port());
  EXPECT_EQ(InitStatusWithHost(one.port(), "mcp.example.com"), 200);
  EXPECT_EQ(InitStatusWithHost(one.port(), "mcp.example.com:" + p), 200);
  EXPECT_EQ(InitStatusWithHost(one.port(), "other.example"), 200);
  EXPECT_EQ(InitStatusWithHost(one.port(), "evil.example.com"), 403);

  ServerProcess any({"--allow-host", "*"});
  ASSERT_TRUE(any.ok()) << any.error();
  EXPECT_EQ(InitStatusWithHost(any.port(), "evil.example.com"), 200);
  EXPECT_EQ(InitStatusWithHost(any.port(), "whatever:1234"), 200);
}

// What a session's initialize advertises (tools, prompts, resources with listChanged) has
// handlers: the lists are empty (a hub holds none); anything else is -32601 at 200.
TEST(Session, UnservedMethodsAre200WithMethodNotFoundAndTheListsAreEmpty) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  RpcReply call = SessionCall(srv.port(), sid, Rpc2025("5", "tools/call", R"({"name":"x","arguments":{}})"));
  EXPECT_TRUE(IsRpcError(call, 200, -32601, "5"));
  RpcReply list = SessionCall(srv.port(), sid, Rpc2025(R"("L")", "tools/list", "{}"));
  EXPECT_TRUE(IsResult(list.msg, R"("L")", R"({"tools":[]})")) << list.msg.text();
  RpcReply prompts = SessionCall(srv.port(), sid, Rpc2025("7", "prompts/list", "{}"));
  EXPECT_TRUE(IsResult(prompts.msg, "7", R"({"prompts":[]})")) << prompts.msg.text();
  RpcReply read = SessionCall(srv.port(), sid, Rpc2025("8", "resources/read", R"({"uri":"file:///x"})"));
  EXPECT_TRUE(IsRpcError(read, 200, -32002, "8"));
  // The session survives a refused request.
  RpcReply ping = SessionCall(srv.port(), sid, Rpc2025("6", "ping"));
  EXPECT_TRUE(IsResult(ping.msg, "6", "{}"));
}

}  // namespace
}  // namespace itest

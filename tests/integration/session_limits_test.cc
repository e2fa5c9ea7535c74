// Every per-client table is bounded (docs/security.md "Limits"): 2025 sessions without a stream (one
// connection pipelining initialize created 50,000 of them in 0.5 s, held for 5 minutes),
// the URIs of one session, and the listens of one stdio client. Each refusal is the
// documented answer, is counted, and leaves other clients served.
#include "harness.h"
#include "session_client.h"
#include "stdio_client.h"

namespace itest {
namespace {

std::string Hits(std::string_view limit) { return "mcpfan_limit_hits_total{limit=\"" + std::string(limit) + "\"}"; }

std::string InitializeRequest(int id) {
  return BuildRequest(
      "POST", "/mcp", {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}},
      Rpc2025(std::to_string(id), "initialize",
              R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}})"));
}

TEST(SessionLimits, PipelinedInitializeStopsAtTheTenantsCeilingOthersServed) {
  ServerProcess srv({"--workers", "2", "--max-idle-sessions-per-tenant", "50", "--max-idle-sessions", "80"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::string burst;
  for (int i = 0; i < 100; ++i) burst += InitializeRequest(i);
  ASSERT_TRUE(c.Send(burst));
  std::vector<std::string> sids;
  int refused = 0;
  for (int i = 0; i < 100; ++i) {
    std::string err;
    auto r = c.ReadResponse(kIo, &err);
    ASSERT_TRUE(r) << "answer " << i << ": " << err;
    if (r->status == 200) {
      sids.push_back(r->Get("Mcp-Session-Id").value_or(""));
      continue;
    }
    ++refused;
    EXPECT_EQ(r->status, 429) << r->body;
    Json j(r->body);
    EXPECT_EQ(j.GetInt({"error", "code"}), -32032) << r->body;
    EXPECT_NE(r->body.find("sessions without an open stream"), std::string::npos) << r->body;
  }
  EXPECT_EQ(sids.size(), 50u);
  EXPECT_EQ(refused, 50);
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("idle_sessions_per_tenant"), 50));
  // Other clients are served, and a session whose stream opens makes room for another.
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
  std::string more;
  EXPECT_EQ(McpCall(srv.port(), InitializeRequest(900)).http.status, 429);
  SseStream stream;
  ASSERT_TRUE(OpenSessionStream(stream, srv.port(), sids[0]));
  EXPECT_TRUE(Initialize(srv.port(), &more));
  // A deleted session frees its place too.
  EXPECT_EQ(DeleteSession(srv.port(), sids[1]), 200);
  std::string third;
  EXPECT_TRUE(Initialize(srv.port(), &third));
}

TEST(SessionLimits, TheCeilingInAllAnswers503) {
  ServerProcess srv({"--workers", "1", "--max-idle-sessions", "30", "--max-idle-sessions-per-tenant", "0"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (int i = 0; i < 30; ++i) {
    std::string sid;
    ASSERT_TRUE(Initialize(srv.port(), &sid)) << i;
  }
  auto r = McpCall(srv.port(), InitializeRequest(31));
  EXPECT_TRUE(IsRpcError(r, 503, -32032, "31", {"sessions without an open stream"}));
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("idle_sessions"), 1));
}

TEST(SessionLimits, OneSessionSubscribesToAtMostMaxUrisPerListen) {
  ServerProcess srv({"--workers", "2", "--max-uris-per-listen", "3"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "mem://s/" + std::to_string(i)));
  ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "mem://s/1")) << "an URI it holds is not a new one";
  auto r = SessionCall(srv.port(), sid, Rpc2025("9", "resources/subscribe", R"({"uri":"mem://s/3"})"));
  EXPECT_TRUE(IsRpcError(r, 200, -32602, "9", {"--max-uris-per-listen"}));
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("uris_per_listen"), 1));
  ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "mem://s/0", "10", /*subscribe=*/false));
  EXPECT_TRUE(SessionSubscribe(srv.port(), sid, "mem://s/3", "11"));
}

TEST(SessionLimits, AStdioClientHoldsAtMostMaxListensPerConnection) {
  StdioChild c({"--workers", "1", "--max-listens-per-connection", "2"});
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  for (const char* id : {"\"a\"", "\"b\""}) {
    ASSERT_TRUE(c.io().SendLine(StdioListen(id, R"({"toolsListChanged":true})"), kIo, &err)) << err;
    auto ack = c.io().NextJson(kIo, &err);
    ASSERT_TRUE(ack) << err;
    EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
  }
  ASSERT_TRUE(c.io().SendLine(StdioListen("\"c\"", R"({"toolsListChanged":true})"), kIo, &err)) << err;
  auto refused = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(refused) << err;
  EXPECT_EQ(refused->GetInt({"error", "code"}), -32032);
  EXPECT_EQ(refused->GetString({"id"}), "c");
  EXPECT_TRUE(PollMetricEq(c.port(), Hits("listens_per_connection"), 1));
  // Cancelling one makes room.
  ASSERT_TRUE(
      c.io().SendLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}})", kIo, &err));
  ASSERT_TRUE(c.io().SendLine(StdioListen("\"d\"", R"({"toolsListChanged":true})"), kIo, &err)) << err;
  auto ack = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
}

}  // namespace
}  // namespace itest

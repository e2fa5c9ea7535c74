// HTTP/2 with the other routes and the other clients: a 2025-era session whole over one h2c
// connection (initialize, GET stream, resources/subscribe, a publish, DELETE), a request the
// front proxy forwards, and Debian's own HTTP/2 clients (curl with prior knowledge, nghttp,
// h2load) against the real mcpfan.
#include <atomic>
#include <cstdio>
#include <thread>

#include "fake_upstream.h"
#include "h2_client.h"
#include "harness.h"
#include "session_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

std::string HeaderOf(const H2Client::Stream& s, std::string_view name) {
  for (const Header& h : s.headers) {
    if (h.name == name) return h.value;
  }
  return {};
}

TEST(Http2Routes, A2025SessionWholeOverOneConnection) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t init =
      c.Request("POST", "/mcp", McpHeaders("", ""),
                R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                R"("capabilities":{},"clientInfo":{"name":"h2","version":"1"}}})");
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(init).closed; }));
  ASSERT_EQ(c.stream(init).status, 200) << c.stream(init).data;
  const std::string sid = HeaderOf(c.stream(init), "mcp-session-id");
  ASSERT_FALSE(sid.empty());
  auto session = McpHeaders(kV2025, "");
  session.push_back({"mcp-session-id", sid});
  std::int32_t initialized =
      c.Request("POST", "/mcp", session, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  std::int32_t get = c.Request(
      "GET", "/mcp",
      {{"accept", "text/event-stream"}, {"mcp-session-id", sid}, {"mcp-protocol-version", std::string(kV2025)}});
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(initialized).closed && c.stream(get).status != 0; }));
  EXPECT_EQ(c.stream(initialized).status, 202);
  ASSERT_EQ(c.stream(get).status, 200) << c.stream(get).data;
  std::int32_t sub =
      c.Request("POST", "/mcp", session, Rpc2025("1", "resources/subscribe", R"({"uri":"file:///s/a"})"));
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(sub).closed; }));
  ASSERT_EQ(c.stream(sub).status, 200) << c.stream(sub).data;
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///s/a")));
  auto updated = [&] {
    for (const SseEvent& e : c.stream(get).events) {
      if (e.data.find("notifications/resources/updated") != std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(c.RunUntil(updated)) << c.stream(get).data;
  // DELETE ends the session, and its GET stream cleanly.
  std::int32_t del = c.Request("DELETE", "/mcp", session);
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(del).closed && c.stream(get).closed; }));
  EXPECT_EQ(c.stream(del).status, 200);
  EXPECT_EQ(c.stream(get).rst_code, 0u);
}

TEST(Http2Routes, TheFrontProxyForwardsAnH2Request) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, "Content-Type: application/json\r\n",
                                                 R"({"jsonrpc":"2.0","id":)" + IdOf(r) + R"(,"result":{"ok":true}})"));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv({"--upstream", "http://127.0.0.1:" + std::to_string(up.port()) + "/mcp"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t call = c.Request("POST", "/mcp", McpHeaders(kV2026, "tools/call", "t"),
                                RpcBody("7", "tools/call", R"("name":"t","arguments":{})"));
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(call).closed; }));
  EXPECT_EQ(c.stream(call).status, 200);
  EXPECT_EQ(c.stream(call).data, R"({"jsonrpc":"2.0","id":7,"result":{"ok":true}})");
  // An Mcp-Name that is not the body's (SEP-2243) is refused over h2 too, and not forwarded.
  std::int32_t wrong = c.Request("POST", "/mcp", McpHeaders(kV2026, "tools/call", "other"),
                                 RpcBody("9", "tools/call", R"("name":"t","arguments":{})"));
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(wrong).closed; }));
  EXPECT_EQ(c.stream(wrong).status, 400);
  EXPECT_NE(c.stream(wrong).data.find(R"("code":-32020)"), std::string::npos) << c.stream(wrong).data;
  ASSERT_EQ(up.requests().size(), 1u);
}

// A client that sends its request and half-closes still gets the answer the upstream writes
// afterwards, as over HTTP/1.1 (RFC 9112 §9.6); then the connection ends.
TEST(Http2Routes, AHalfCloseStillGetsTheProxiedAnswer) {
  std::atomic<bool> answer{false};
  FakeUpstream up([&answer](int fd, const UpstreamRequest& r) {
    // Answers once the test has half-closed (bounded: 10 s).
    for (int i = 0; i < 1000 && !answer.load(); ++i) std::this_thread::sleep_for(Ms(10));
    FakeUpstream::Write(fd,
                        FakeUpstream::Answer(200, "Content-Type: application/json\r\n",
                                             R"({"jsonrpc":"2.0","id":)" + IdOf(r) + R"(,"result":{"late":true}})"));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv({"--upstream", "http://127.0.0.1:" + std::to_string(up.port()) + "/mcp"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  std::int32_t call = c.Request("POST", "/mcp", McpHeaders(kV2026, "tools/call", "t"),
                                RpcBody("8", "tools/call", R"("name":"t","arguments":{})"));
  ASSERT_TRUE(c.ShutdownWrite());
  answer = true;
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(call).closed; })) << "peer closed: " << c.peer_closed();
  EXPECT_EQ(c.stream(call).status, 200);
  EXPECT_EQ(c.stream(call).data, R"({"jsonrpc":"2.0","id":8,"result":{"late":true}})");
  EXPECT_TRUE(c.goaway());
  EXPECT_EQ(c.goaway_code(), 0u);
}

TEST(Http2Routes, CurlNghttpAndH2loadWithPriorKnowledge) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string base = "http://127.0.0.1:" + std::to_string(srv.port());
  EXPECT_EQ(Sh("curl -sS --max-time 10 --http2-prior-knowledge -w ' %{http_version}' " + base + "/livez 2>&1"),
            "ok\n 2");
  // nghttp speaks h2c with prior knowledge to an http:// URL (-u would try Upgrade instead).
  std::string nghttp = Sh("timeout 10 nghttp -v " + base + "/livez 2>&1");
  EXPECT_NE(nghttp.find(":status: 200"), std::string::npos) << nghttp;
  std::string h2load = Sh("timeout 30 h2load -n 2000 -c 4 -m 20 " + base + "/livez 2>&1");
  EXPECT_NE(h2load.find("2000 succeeded, 0 failed"), std::string::npos) << h2load;
}

}  // namespace
}  // namespace itest

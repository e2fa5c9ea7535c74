// --upstream with a host name (docs/protocol.md "Front proxy"): `localhost` works as every
// SDK example writes it; a name that does not resolve answers 502 naming the host and the
// resolver's error, counted, while listens go on; a name is looked up again once its
// addresses failed a connect (an upstream that moved), and for every new connection with
// --upstream-resolve-ttl-ms 0. Resolutions are counted by mcpfan_upstream_resolutions_total,
// so nothing here depends on what /etc/hosts holds beyond "localhost".
#include <memory>
#include <string>

#include "fake_upstream.h"
#include "harness.h"

namespace itest {
namespace {

constexpr std::string_view kJson = "Content-Type: application/json\r\n";

std::string ToolCall(std::string_view id_json) {
  return McpPost(RpcBody(id_json, "tools/call", R"("name":"t","arguments":{})"), McpHeaders(kV2026, "tools/call", "t"));
}

std::string ToolResult(std::string_view id_json) {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id_json) + R"(,"result":{"content":[{"type":"text","text":"ok"}]}})";
}

FakeUpstream::Handler Answers() {
  return [](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, ToolResult(IdOf(r))));
    return FakeUpstream::Next::Read;
  };
}

std::string LocalhostUrl(int port) { return "http://localhost:" + std::to_string(port) + "/mcp"; }

double Metric(int port, std::string_view name) { return ReadMetric(port, name).value_or(-1); }

TEST(UpstreamNames, LocalhostIsResolvedAndForwardedTo) {
  FakeUpstream up(Answers());
  ServerProcess srv({"--workers", "2", "--upstream", LocalhostUrl(up.port())});
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), ToolCall("3"));
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  EXPECT_EQ(r.http.body, ToolResult("3"));
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].Get("host").value_or(""), "localhost:" + std::to_string(up.port())) << "the Host header as written";
  EXPECT_GE(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 1);
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolve_failures_total"), 0);
}

TEST(UpstreamNames, AnUnresolvableNameIs502NamingTheHostAndListensGoOn) {
  // RFC 6761: .invalid never resolves, and needs no DNS server to say so.
  const std::string host = "mcp-upstream.invalid";
  ServerProcess srv({"--workers", "2", "--upstream", "http://" + host + ":3000/mcp"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (const char* id : {"1", "2"}) {
    auto r = Roundtrip(srv.port(), ToolCall(id));
    ASSERT_TRUE(r) << "no answer within " << kIo.count() << " ms";
    EXPECT_EQ(r->status, 502) << r->body;
    EXPECT_NE(r->body.find("cannot resolve the upstream host " + host), std::string::npos) << r->body;
    EXPECT_NE(r->body.find("RFC 6761"), std::string::npos) << "the resolver's reason: " << r->body;
  }
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_upstream_resolve_failures_total", [](double v) { return v >= 2; }));
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 0);
  EXPECT_TRUE(ServesListenAndPublish(srv.port())) << "listens are mcpfan's own: no upstream needed";
}

TEST(UpstreamNames, AFailedConnectMakesTheNextConnectionLookTheNameUpAgain) {
  auto up = std::make_unique<FakeUpstream>(Answers());
  const int port = up->port();
  // One worker, no pooling: every request opens a connection; addresses kept for 10 min.
  ServerProcess srv({"--workers", "1", "--upstream", LocalhostUrl(port), "--upstream-max-idle", "0",
                     "--upstream-resolve-ttl-ms", "600000"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (const char* id : {"1", "2"}) {
    RpcReply r = McpCall(srv.port(), ToolCall(id));
    ASSERT_EQ(r.http.status, 200) << r.http.body;
  }
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 1) << "the second connection reuses the answer";
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_connects_total"), 2);

  up.reset();  // the upstream goes away: connects are refused
  auto gone = Roundtrip(srv.port(), ToolCall("3"));
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 502) << gone->body;
  EXPECT_NE(gone->body.find("connect to "), std::string::npos) << gone->body;
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 1);

  up = std::make_unique<FakeUpstream>(Answers(), port);  // back, where it was
  ASSERT_EQ(up->port(), port);
  RpcReply back = McpCall(srv.port(), ToolCall("4"));
  ASSERT_EQ(back.http.status, 200) << back.http.body;
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 2) << "looked up again after the failed connect";
}

TEST(UpstreamNames, TtlZeroLooksTheNameUpForEveryNewConnection) {
  FakeUpstream up(Answers());
  ServerProcess srv({"--workers", "1", "--upstream", LocalhostUrl(up.port()), "--upstream-max-idle", "0",
                     "--upstream-resolve-ttl-ms", "0"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (const char* id : {"1", "2", "3"}) {
    RpcReply r = McpCall(srv.port(), ToolCall(id));
    ASSERT_EQ(r.http.status, 200) << r.http.body;
  }
  EXPECT_EQ(Metric(srv.port(), "mcpfan_upstream_resolutions_total"), 3);
}

}  // namespace
}  // namespace itest

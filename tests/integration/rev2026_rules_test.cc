// The 2026-07-28 request rules (design §2.1; docs/protocol.md "Errors and statuses"), as the newest
// conformance suite's server-stateless scenario checks them: per-request fields, header/body agreement before
// version support, 404 for methods the revision does not have, OWS around header values,
// and capabilities that match the handlers. Over HTTP and, where the rule is not HTTP's,
// over stdio too.
#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

class Rev2026 : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = std::make_unique<ServerProcess>();
    ASSERT_TRUE(srv_->ok()) << srv_->error();
  }
  int port() const { return srv_->port(); }
  RpcReply Post(std::string_view body, std::vector<Header> headers) {
    return McpCall(port(), McpPost(body, std::move(headers)));
  }
  std::unique_ptr<ServerProcess> srv_;
};

std::string WithoutCapabilities(std::string_view id, std::string_view method) {
  return std::string(R"({"jsonrpc":"2.0","id":)") + std::string(id) + R"(,"method":")" + std::string(method) +
         R"(","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
}

TEST_F(Rev2026, MissingMetaOrItsVersionIsInvalidParams400) {
  auto no_meta =
      Post(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}})", McpHeaders(kV2026, "server/discover"));
  EXPECT_TRUE(IsRpcError(no_meta, 400, -32602, "1", {"protocolVersion"}));
  auto no_params =
      Post(R"({"jsonrpc":"2.0","id":2,"method":"server/discover"})", McpHeaders(kV2026, "server/discover"));
  EXPECT_TRUE(IsRpcError(no_params, 400, -32602, "2", {"protocolVersion"}));
  auto no_version = Post(
      R"({"jsonrpc":"2.0","id":3,"method":"server/discover",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}})",
      McpHeaders(kV2026, "server/discover"));
  EXPECT_TRUE(IsRpcError(no_version, 400, -32602, "3", {"protocolVersion"}));
}

TEST_F(Rev2026, MissingClientCapabilitiesIsInvalidParams400) {
  for (std::string_view method : {"server/discover", "subscriptions/listen"}) {
    auto r = Post(WithoutCapabilities("4", method), McpHeaders(kV2026, method));
    EXPECT_TRUE(IsRpcError(r, 400, -32602, "4", {"clientCapabilities"})) << method;
  }
  // Not an object: malformed too.
  auto bad = Post(
      R"({"jsonrpc":"2.0","id":5,"method":"server/discover",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
      R"("io.modelcontextprotocol/clientCapabilities":true}}})",
      McpHeaders(kV2026, "server/discover"));
  EXPECT_TRUE(IsRpcError(bad, 400, -32602, "5", {"clientCapabilities"}));
  EXPECT_TRUE(PollMetricEq(port(), "mcpfan_listen_streams_open", 0));
}

// A header/body disagreement is -32020 even when the body names a version nobody serves.
TEST_F(Rev2026, HeaderBodyMismatchIsCheckedBeforeVersionSupport) {
  auto r = Post(RpcBody("6", "server/discover", {}, "v999.0.0"), McpHeaders(kV2026, "server/discover"));
  EXPECT_TRUE(IsRpcError(r, 400, -32020, "6", {"v999.0.0"}));
  // Without the header, an unknown body version is still -32022 with the supported list.
  auto unknown = Post(RpcBody("7", "server/discover", {}, "v999.0.0"), McpHeaders("", "server/discover"));
  EXPECT_TRUE(IsRpcError(unknown, 400, -32022, "7"));
}

TEST_F(Rev2026, UnknownAndRemovedMethodsAre404MethodNotFound) {
  for (std::string_view method : {"foo/bar", "tools/call", "initialize", "ping", "logging/setLevel",
                                  "resources/subscribe", "resources/unsubscribe"}) {
    auto r = Post(RpcBody("8", method), McpHeaders(kV2026, method));
    EXPECT_TRUE(IsRpcError(r, 404, -32601, "8", {"method"})) << method;
  }
  // A notification of any name is still answered 202.
  auto n = McpCall(port(), McpPost(R"({"jsonrpc":"2.0","method":"notifications/whatever","params":{"_meta":)" +
                                       Envelope(kV2026) + "}}",
                                   McpHeaders(kV2026, "")));
  EXPECT_EQ(n.http.status, 202);
}

// OWS (RFC 9110 §5.5) around a field value is not part of it, at either end.
TEST_F(Rev2026, WhitespaceAroundHeaderValuesIsNotPartOfThem) {
  auto r = Post(RpcBody("9", "server/discover"),
                {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"},
                 {"MCP-Protocol-Version", "2026-07-28 \t"}, {"Mcp-Method", "server/discover \t"}});
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  EXPECT_TRUE(r.msg.Has({"result", "capabilities"})) << r.msg.text();
}

// What server/discover advertises has handlers: the lists a hub holds are empty.
TEST_F(Rev2026, AdvertisedCapabilitiesHaveHandlers) {
  auto d = Post(RpcBody("10", "server/discover"), McpHeaders(kV2026, "server/discover"));
  ASSERT_EQ(d.http.status, 200);
  struct Check {
    const char* capability;
    const char* method;
    const char* key;
  };
  for (Check c : {Check{"tools", "tools/list", "tools"}, Check{"prompts", "prompts/list", "prompts"},
                  Check{"resources", "resources/list", "resources"}}) {
    ASSERT_TRUE(d.msg.Has({"result", "capabilities", c.capability})) << d.msg.text();
    auto r = Post(RpcBody("11", c.method), McpHeaders(kV2026, c.method));
    ASSERT_EQ(r.http.status, 200) << c.method << ": " << r.http.body;
    EXPECT_EQ(r.msg.GetString({"result", "resultType"}), "complete") << r.msg.text();
    EXPECT_EQ(r.msg.GetString({"result", "cacheScope"}), "public") << r.msg.text();  // caching hints: required
    EXPECT_EQ(r.msg.GetInt({"result", "ttlMs"}), 0) << r.msg.text();
    auto list = r.msg.Get({"result", c.key});
    ASSERT_TRUE(list) << r.msg.text();
    EXPECT_EQ(Dump(*list), "[]");
  }
}

// stdio: the same per-request fields and methods (no HTTP statuses there).
TEST(Rev2026Stdio, TheSameRulesHold) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  ASSERT_TRUE(c.io().SendLine(WithoutCapabilities(R"("a")", "subscriptions/listen"), kIo, &err)) << err;
  auto missing = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(missing) << err;
  EXPECT_TRUE(IsError(*missing, R"("a")", -32602));
  ASSERT_TRUE(c.io().SendLine(RpcBody(R"("b")", "ping"), kIo, &err)) << err;
  auto ping = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(ping) << err;
  EXPECT_TRUE(IsError(*ping, R"("b")", -32601));
  ASSERT_TRUE(c.io().SendLine(RpcBody(R"("c")", "tools/list"), kIo, &err)) << err;
  auto list = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(list) << err;
  EXPECT_TRUE(IsResult(*list, R"("c")", R"({"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"})"));
  // A 2025-era ping (no envelope) on the same connection is served.
  ASSERT_TRUE(c.io().SendLine(R"({"jsonrpc":"2.0","id":"d","method":"ping"})", kIo, &err)) << err;
  auto old_ping = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(old_ping) << err;
  EXPECT_TRUE(IsResult(*old_ping, R"("d")", "{}"));
}

}  // namespace
}  // namespace itest

// server/discover and the protocol-version / header rules (design.md 2.1).
#include "harness.h"

namespace itest {
namespace {

std::string Discover(std::string_view id, std::string_view body_version,
                     std::string_view header_version, std::string_view header_method) {
  return McpPost(RpcBody(id, "server/discover", {}, body_version),
                 McpHeaders(header_version, header_method));
}

void CheckDiscoverResult(const RpcReply& r, std::string_view id, std::string_view version) {
  ASSERT_TRUE(r.err.empty()) << r.err;
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  ASSERT_TRUE(r.msg.ok()) << r.msg.error();
  EXPECT_EQ(r.msg.GetString({"jsonrpc"}), "2.0") << r.msg.text();
  EXPECT_TRUE(JsonMatches(r.msg.Get({"id"}), id));
  EXPECT_FALSE(r.msg.Has({"error"})) << r.msg.text();
  auto result = r.msg.Get({"result"});
  ASSERT_TRUE(result) << r.msg.text();

  auto versions = r.msg.Get({"result", "supportedVersions"});
  ASSERT_TRUE(versions && versions->is_array()) << r.msg.text();
  bool has2026 = false, has_draft = false;
  for (auto v : simdjson::dom::array(*versions)) {
    std::string_view s;
    ASSERT_FALSE(v.get_string().get(s)) << "supportedVersions holds a non-string: " << r.msg.text();
    has2026 |= s == kV2026;
    has_draft |= s == kDraft;
  }
  EXPECT_TRUE(has2026) << "supportedVersions lacks 2026-07-28: " << r.msg.text();
  EXPECT_TRUE(has_draft) << "supportedVersions lacks DRAFT-2026-v1: " << r.msg.text();

  EXPECT_TRUE(JsonMatches(r.msg.Get({"result", "capabilities"}),
                          R"({"resources":{"subscribe":true,"listChanged":true},
                              "tools":{"listChanged":true},"prompts":{"listChanged":true},
                              "extensions":{"io.modelcontextprotocol/tasks":{}}})"));
  EXPECT_EQ(r.msg.GetString({"result", "resultType"}), "complete") << r.msg.text();
  EXPECT_EQ(r.msg.GetString({"result", "_meta", "io.modelcontextprotocol/serverInfo", "name"}), "mcpfan")
      << r.msg.text();
  EXPECT_TRUE(r.msg.GetString({"result", "_meta", "io.modelcontextprotocol/serverInfo", "version"}))
      << "serverInfo.version should be a string: " << r.msg.text();

  // The revision the request named is echoed wherever the server states one.
  if (auto h = r.http.Get("mcp-protocol-version")) {
    EXPECT_EQ(*h, version);
  }
  if (auto v = r.msg.GetString({"result", "_meta", "io.modelcontextprotocol/protocolVersion"})) {
    EXPECT_EQ(*v, version);
  }
  if (auto v = r.msg.GetString({"result", "protocolVersion"})) {
    EXPECT_EQ(*v, version);
  }
}

TEST(Discover, Revision2026WithHeaders) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover("1", kV2026, kV2026, "server/discover"));
  CheckDiscoverResult(r, "1", kV2026);
}

TEST(Discover, DraftWithHeaders) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover(R"("d-1")", kDraft, kDraft, "server/discover"));
  CheckDiscoverResult(r, R"("d-1")", kDraft);
}

TEST(Discover, DraftWithoutHeadersAccepted) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover("2", kDraft, "", ""));
  CheckDiscoverResult(r, "2", kDraft);

  // A header-less draft listen works end to end, as on the seed page.
  SseStream s;
  std::string req = McpPost(
      RpcBody("1", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})", kDraft), McpHeaders("", ""));
  std::string err;
  ASSERT_TRUE(s.Open(srv.port(), req, kIo, &err)) << err;
  ASSERT_TRUE(s.is_sse()) << s.head().status << " " << s.head().body;
  auto ack = s.NextMessage(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
  EXPECT_TRUE(JsonMatches(ack->Get({"params", "_meta", kSubId}), "1"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", "1"));
}

TEST(Discover, MissingVersionHeaderOn2026Is32020) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover("3", kV2026, "", "server/discover"));
  EXPECT_TRUE(IsRpcError(r, 400, -32020, "3"));
}

TEST(Discover, MissingMethodHeaderOn2026Is32020) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover("4", kV2026, kV2026, ""));
  EXPECT_TRUE(IsRpcError(r, 400, -32020, "4"));
}

TEST(Discover, VersionHeaderMismatchIs32020) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  EXPECT_TRUE(IsRpcError(McpCall(srv.port(), Discover("5", kV2026, kDraft, "server/discover")), 400, -32020, "5"));
  EXPECT_TRUE(IsRpcError(McpCall(srv.port(), Discover("6", kDraft, kV2026, "server/discover")), 400, -32020, "6"));
}

TEST(Discover, MethodHeaderMismatchIs32020) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover("7", kV2026, kV2026, "subscriptions/listen"));
  EXPECT_TRUE(IsRpcError(r, 400, -32020, "7"));
  // A mismatching listen must not open a stream either.
  auto l = McpCall(srv.port(),
                   McpPost(RpcBody("8", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"),
                           McpHeaders(kV2026, "server/discover")));
  EXPECT_TRUE(IsRpcError(l, 400, -32020, "8"));
}

TEST(Discover, UnknownVersionIs32022) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = McpCall(srv.port(), Discover(R"("v")", "2099-01-01", "2099-01-01", "server/discover"));
  ASSERT_TRUE(IsRpcError(r, 400, -32022, R"("v")"));
  EXPECT_EQ(r.msg.GetString({"error", "data", "requested"}), "2099-01-01") << r.msg.text();
  auto supported = r.msg.Get({"error", "data", "supported"});
  ASSERT_TRUE(supported && supported->is_array()) << r.msg.text();
  bool has2026 = false, has_draft = false;
  for (auto v : simdjson::dom::array(*supported)) {
    std::string_view s;
    if (!v.get_string().get(s)) {
      has2026 |= s == kV2026;
      has_draft |= s == kDraft;
    }
  }
  EXPECT_TRUE(has2026 && has_draft) << "error.data.supported must list both revisions: " << r.msg.text();
}

}  // namespace
}  // namespace itest

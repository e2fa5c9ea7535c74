// SEP-2243's routing headers on the wire (docs/protocol.md "Routing headers"): a 2026-07-28
// request whose Mcp-Method or Mcp-Name says something its body does not is refused 400 with
// -32020, where mcpfan answers itself and where it forwards to --upstream (before the upstream
// sees it); whitespace around a value and the case of a header's name do not matter; a
// DRAFT-2026-v1 request may omit the headers but not contradict its body. The pure check:
// tests/transports/http/mcp_name_check_test.cc.
#include <string>
#include <vector>

#include "fake_upstream.h"
#include "harness.h"

namespace itest {
namespace {

struct Family {
  std::string_view method, member, value;
};
// One method per member Mcp-Name mirrors, and the three task methods (SEP-2663).
constexpr Family kFamilies[] = {
    {"tools/call", "name", "get_weather"},          {"prompts/get", "name", "code_review"},
    {"resources/read", "uri", "file:///a%20b.txt"}, {"tasks/get", "taskId", "task-1"},
    {"tasks/update", "taskId", "task-2"},           {"tasks/cancel", "taskId", "task-3"},
};

// A request of `f` whose body carries `marker` (to find it at the upstream), its member `value`.
std::string Body(const Family& f, std::string_view id, std::string_view marker, std::string_view version = kV2026) {
  return RpcBody(
      id, f.method,
      "\"" + std::string(f.member) + "\":\"" + std::string(f.value) + "\",\"x-marker\":\"" + std::string(marker) + "\"",
      version);
}

// Content-Type and Accept, then `extra` as given (names in the case given).
std::vector<Header> Headers(std::vector<Header> extra) {
  std::vector<Header> h{{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}};
  h.insert(h.end(), extra.begin(), extra.end());
  return h;
}

std::vector<Header> Mirrored(const Family& f, std::string_view name, std::string_view version = kV2026) {
  return Headers({{"MCP-Protocol-Version", std::string(version)},
                  {"Mcp-Method", std::string(f.method)},
                  {"Mcp-Name", std::string(name)}});
}

std::string Message(const RpcReply& r) {
  return r.msg.GetString({"error", "message"}).value_or("(none)");
}

FakeUpstream::Handler AnswerEverything() {
  return [](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, "Content-Type: application/json\r\n",
                                                 R"({"jsonrpc":"2.0","id":)" + IdOf(r) + R"(,"result":{}})"));
    return FakeUpstream::Next::Read;
  };
}

// Where mcpfan answers itself, a request that passed the header checks gets mcpfan's own
// answer: resources/read is -32002 (a hub holds no resources), the others are not its methods
// (404 -32601).
::testing::AssertionResult Served(const RpcReply& r, const Family& f, std::string_view id) {
  return f.method == "resources/read" ? IsRpcError(r, 200, -32002, id) : IsRpcError(r, 404, -32601, id);
}

class RoutingHeaders : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(srv_.ok()) << srv_.error(); }
  RpcReply Post(const std::string& body, std::vector<Header> h) { return McpCall(srv_.port(), McpPost(body, h)); }
  ServerProcess srv_{{"--workers", "2"}};
};

TEST_F(RoutingHeaders, AMatchingNamePassesForEachMethod) {
  for (const Family& f : kFamilies) {
    auto r = Post(Body(f, "1", "m"), Mirrored(f, f.value));
    EXPECT_TRUE(Served(r, f, "1")) << f.method << ": " << r.http.body;
  }
}

TEST_F(RoutingHeaders, AMismatchingNameIs400NamingHeaderValueAndField) {
  for (const Family& f : kFamilies) {
    auto r = Post(Body(f, "2", "m"), Mirrored(f, "other-value"));
    EXPECT_TRUE(IsRpcError(r, 400, -32020, "2")) << f.method << ": " << r.http.body;
    EXPECT_EQ(Message(r), "Mcp-Name header value 'other-value' does not match params." + std::string(f.member) + " '" +
                              std::string(f.value) + "'")
        << f.method;
  }
}

TEST_F(RoutingHeaders, AMissingNameIs400In2026ButNotInTheDraft) {
  for (const Family& f : kFamilies) {
    auto r = Post(Body(f, "3", "m"),
                  Headers({{"MCP-Protocol-Version", std::string(kV2026)}, {"Mcp-Method", std::string(f.method)}}));
    EXPECT_TRUE(IsRpcError(r, 400, -32020, "3", {"missing Mcp-Name"})) << f.method << ": " << r.http.body;
    auto draft = Post(Body(f, "4", "m", kDraft), Headers({{"MCP-Protocol-Version", std::string(kDraft)}}));
    EXPECT_TRUE(Served(draft, f, "4")) << f.method << ": " << draft.http.body;
    // The draft may omit it, not contradict it.
    auto wrong = Post(Body(f, "5", "m", kDraft), Headers({{"Mcp-Name", "other-value"}}));
    EXPECT_TRUE(IsRpcError(wrong, 400, -32020, "5", {"other-value"})) << f.method << ": " << wrong.http.body;
  }
}

TEST_F(RoutingHeaders, WhitespaceAroundValuesAndTheCaseOfNamesDoNotMatter) {
  for (const Family& f : kFamilies) {
    auto padded = Post(Body(f, "6", "m"), Headers({{"MCP-Protocol-Version", std::string(kV2026)},
                                                   {"Mcp-Method", " \t" + std::string(f.method) + "\t "},
                                                   {"Mcp-Name", "  " + std::string(f.value) + " \t"}}));
    EXPECT_TRUE(Served(padded, f, "6")) << f.method << ": " << padded.http.body;
    auto lower = Post(Body(f, "7", "m"), Headers({{"mcp-protocol-version", std::string(kV2026)},
                                                  {"mcp-method", std::string(f.method)},
                                                  {"mcp-name", std::string(f.value)}}));
    EXPECT_TRUE(Served(lower, f, "7")) << f.method << ": " << lower.http.body;
    auto upper = Post(Body(f, "8", "m"), Headers({{"MCP-PROTOCOL-VERSION", std::string(kV2026)},
                                                  {"MCP-METHOD", std::string(f.method)},
                                                  {"MCP-NAME", "other-value"}}));
    EXPECT_TRUE(IsRpcError(upper, 400, -32020, "8", {"other-value"})) << f.method << ": " << upper.http.body;
  }
}

TEST_F(RoutingHeaders, ABase64SentinelIsDecodedBeforeTheComparison) {
  const Family& call = kFamilies[0];
  auto ok = Post(Body(call, "9", "m"), Mirrored(call, "=?base64?Z2V0X3dlYXRoZXI=?="));  // get_weather
  EXPECT_TRUE(Served(ok, call, "9")) << ok.http.body;
  auto bad = Post(Body(call, "10", "m"), Mirrored(call, "=?base64?not base64?="));
  EXPECT_TRUE(IsRpcError(bad, 400, -32020, "10", {"base64"})) << bad.http.body;
}

TEST_F(RoutingHeaders, TheMethodRulesHoldAsBefore) {
  // Values are case-sensitive; a missing Mcp-Method on a 2026-07-28 request is refused.
  auto upper = Post(RpcBody("11", "tools/list"), McpHeaders(kV2026, "TOOLS/LIST"));
  EXPECT_TRUE(IsRpcError(upper, 400, -32020, "11", {"TOOLS/LIST"}));
  auto missing = Post(RpcBody("12", "tools/list"), McpHeaders(kV2026, ""));
  EXPECT_TRUE(IsRpcError(missing, 400, -32020, "12", {"missing Mcp-Method"}));
  auto fine = Post(RpcBody("13", "tools/list"),
                   Headers({{"mcp-protocol-version", std::string(kV2026)}, {"MCP-METHOD", " tools/list "}}));
  EXPECT_EQ(fine.http.status, 200) << fine.http.body;
  // A notification may omit Mcp-Method, but one that names another method is refused.
  std::string note =
      R"({"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":)" + Envelope(kV2026) + "}}";
  EXPECT_EQ(Post(note, McpHeaders(kV2026, "")).http.status, 202);
  EXPECT_EQ(Post(note, McpHeaders(kV2026, "notifications/initialized")).http.status, 202);
  auto wrong = Post(note, McpHeaders(kV2026, "notifications/cancelled"));
  EXPECT_TRUE(IsRpcError(wrong, 400, -32020, "null", {"notifications/cancelled"}));
}

// ---------------------------------------------------------------- through --upstream

class ProxiedRoutingHeaders : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(srv_.ok()) << srv_.error(); }
  RpcReply Post(const std::string& body, std::vector<Header> h) { return McpCall(srv_.port(), McpPost(body, h)); }
  // What reached the upstream, by marker, once every reply is in (a forwarded request is
  // answered only after the upstream answered it).
  std::vector<std::string> Seen() const {
    std::vector<std::string> markers;
    for (const auto& q : up_.requests()) {
      auto at = q.body.find("\"x-marker\":\"");
      markers.push_back(at == std::string::npos ? "?" : q.body.substr(at + 12, q.body.find('"', at + 12) - at - 12));
    }
    return markers;
  }
  FakeUpstream up_{AnswerEverything()};
  ServerProcess srv_{{"--workers", "2", "--upstream", up_.url()}};
};

TEST_F(ProxiedRoutingHeaders, MatchingRequestsAreForwardedAndMismatchingOnesNever) {
  std::vector<std::string> forwarded;
  int id = 100;
  for (const Family& f : kFamilies) {
    std::string m(f.method);
    auto ok = Post(Body(f, std::to_string(++id), "ok " + m), Mirrored(f, f.value));
    EXPECT_EQ(ok.http.status, 200) << m << ": " << ok.http.body;
    forwarded.push_back("ok " + m);
    auto padded = Post(Body(f, std::to_string(++id), "padded " + m),
                       Headers({{"mcp-protocol-version", std::string(kV2026)},
                                {"MCP-METHOD", std::string(f.method)},
                                {"mcp-NAME", "\t " + std::string(f.value) + "  "}}));
    EXPECT_EQ(padded.http.status, 200) << m << ": " << padded.http.body;
    forwarded.push_back("padded " + m);

    auto wrong = Post(Body(f, std::to_string(++id), "wrong " + m), Mirrored(f, "other-value"));
    EXPECT_TRUE(IsRpcError(wrong, 400, -32020, std::to_string(id), {"other-value"})) << m << ": " << wrong.http.body;
    EXPECT_EQ(Message(wrong), "Mcp-Name header value 'other-value' does not match params." + std::string(f.member) +
                                  " '" + std::string(f.value) + "'");
    auto missing = Post(Body(f, std::to_string(++id), "missing " + m),
                        Headers({{"MCP-Protocol-Version", std::string(kV2026)}, {"Mcp-Method", m}}));
    EXPECT_TRUE(IsRpcError(missing, 400, -32020, std::to_string(id), {"missing Mcp-Name"})) << m;
    auto method =
        Post(Body(f, std::to_string(++id), "method " + m), Headers({{"MCP-Protocol-Version", std::string(kV2026)},
                                                                    {"Mcp-Method", "tools/list"},
                                                                    {"Mcp-Name", std::string(f.value)}}));
    EXPECT_TRUE(IsRpcError(method, 400, -32020, std::to_string(id), {"Mcp-Method header tools/list"})) << m;
    // A draft request may omit both; it is forwarded.
    auto draft = Post(Body(f, std::to_string(++id), "draft " + m, kDraft),
                      Headers({{"MCP-Protocol-Version", std::string(kDraft)}}));
    EXPECT_EQ(draft.http.status, 200) << m << ": " << draft.http.body;
    forwarded.push_back("draft " + m);
  }
  EXPECT_EQ(Seen(), forwarded);
}

TEST_F(ProxiedRoutingHeaders, AMethodMismatchIsRefusedWhicheverWayItPoints) {
  // The header would route it to the upstream, the body is a listen mcpfan serves: refused.
  auto listen = Post(RpcBody("1", "subscriptions/listen", R"("notifications":{},"x-marker":"listen")"),
                     McpHeaders(kV2026, "tools/list"));
  EXPECT_TRUE(IsRpcError(listen, 400, -32020, "1", {"does not match"})) << listen.http.body;
  // The header names a listen, the body a tool call: refused by mcpfan's listen route.
  const Family& call = kFamilies[0];
  auto call_as_listen = Post(Body(call, "2", "call-as-listen"), Headers({{"MCP-Protocol-Version", std::string(kV2026)},
                                                                         {"Mcp-Method", "subscriptions/listen"},
                                                                         {"Mcp-Name", std::string(call.value)}}));
  EXPECT_TRUE(IsRpcError(call_as_listen, 400, -32020, "2", {"does not match"})) << call_as_listen.http.body;
  auto list = Post(RpcBody("3", "tools/list", R"("x-marker":"list")"), McpHeaders(kV2026, "prompts/list"));
  EXPECT_TRUE(IsRpcError(list, 400, -32020, "3", {"prompts/list"})) << list.http.body;
  auto missing = Post(RpcBody("4", "tools/list", R"("x-marker":"no-method")"), McpHeaders(kV2026, ""));
  EXPECT_TRUE(IsRpcError(missing, 400, -32020, "4", {"missing Mcp-Method"})) << missing.http.body;
  auto fine = Post(RpcBody("5", "tools/list", R"("x-marker":"fine")"), McpHeaders(kV2026, "tools/list"));
  EXPECT_EQ(fine.http.status, 200) << fine.http.body;
  EXPECT_EQ(Seen(), std::vector<std::string>{"fine"});
}

// A body the upstream could read otherwise than mcpfan (the last of a repeated member, where
// mcpfan's parser takes the first) is refused, escaped member names included.
TEST_F(ProxiedRoutingHeaders, ARepeatedMemberIsRefusedNotForwarded) {
  std::string env = Envelope(kV2026);
  auto names = Post(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":)" + env +
                        R"(,"name":"safe","n\u0061me":"charge-card","x-marker":"names"}})",
                    Mirrored(kFamilies[0], "safe"));
  EXPECT_TRUE(IsRpcError(names, 400, -32020, "1", {"params.name"})) << names.http.body;
  auto methods = Post(R"({"jsonrpc":"2.0","id":2,"method":"tools/list","method":"tools/call","params":{"_meta":)" +
                          env + R"(,"name":"charge-card","x-marker":"methods"}})",
                      McpHeaders(kV2026, "tools/list"));
  EXPECT_TRUE(IsRpcError(methods, 400, -32020, "2", {"\"method\""})) << methods.http.body;
  auto fine = Post(Body(kFamilies[0], "3", "fine"), Mirrored(kFamilies[0], kFamilies[0].value));
  EXPECT_EQ(fine.http.status, 200) << fine.http.body;
  EXPECT_EQ(Seen(), std::vector<std::string>{"fine"});
}

// 2025-era requests (a session, no 2026 envelope) carry no routing headers to check.
TEST_F(ProxiedRoutingHeaders, A2025RequestIsForwardedWhateverItsHeaders) {
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","x-marker":"2025"}})";
  auto r = Post(
      body, Headers({{"MCP-Protocol-Version", "2025-11-25"}, {"Mcp-Session-Id", "s-unknown"}, {"Mcp-Name", "other"}}));
  EXPECT_EQ(r.http.status, 200) << r.http.body;
  EXPECT_EQ(Seen(), std::vector<std::string>{"2025"});
}

}  // namespace
}  // namespace itest

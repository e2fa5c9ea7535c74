// The MCP method table (transports/src/mcp/methods.h): which era has which method, the
// answers made once for every transport, and the -32601 text that lists what is served.
#include <gtest/gtest.h>

#include "mcp/methods.h"
#include "mcpfan/rpc_decoder.h"

namespace mcpfan::detail {
namespace {

TEST(McpMethods, EachEraHasItsMethods) {
  ASSERT_TRUE(find_mcp_method("subscriptions/listen"));
  EXPECT_TRUE(find_mcp_method("subscriptions/listen")->in(Era::Rev2026));
  EXPECT_FALSE(find_mcp_method("subscriptions/listen")->in(Era::Session2025));
  EXPECT_TRUE(find_mcp_method("tools/list")->in(Era::Rev2026));
  EXPECT_TRUE(find_mcp_method("tools/list")->in(Era::Session2025));
  EXPECT_EQ(find_mcp_method("tools/call"), nullptr);
  for (const char* m : {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}) {
    EXPECT_TRUE(removed_in_2026(m)) << m;
  }
  for (const char* m : {"server/discover", "tools/list", "resources/read", "nope"})
    EXPECT_FALSE(removed_in_2026(m)) << m;
}

TEST(McpMethods, ListsAreEmptyAndCarryCachingHintsIn2026) {
  auto in2025 = stateless_reply(*find_mcp_method("resources/templates/list"), Era::Session2025);
  ASSERT_TRUE(in2025 && in2025->result);
  EXPECT_EQ(*in2025->result, R"({"resourceTemplates":[]})");
  auto in2026 = stateless_reply(*find_mcp_method("prompts/list"), Era::Rev2026);
  ASSERT_TRUE(in2026 && in2026->result);
  EXPECT_EQ(*in2026->result, R"({"prompts":[],"resultType":"complete","ttlMs":0,"cacheScope":"public"})");
}

TEST(McpMethods, ReadingAResourceIsResourceNotFoundAndPingIsEmpty) {
  auto read = stateless_reply(*find_mcp_method("resources/read"), Era::Rev2026);
  ASSERT_TRUE(read && read->error);
  EXPECT_EQ(read->error->code, kResourceNotFound);
  auto ping = stateless_reply(*find_mcp_method("logging/setLevel"), Era::Session2025);
  ASSERT_TRUE(ping && ping->result);
  EXPECT_EQ(*ping->result, "{}");
}

TEST(McpMethods, StatefulMethodsAreTheTransports) {
  for (const char* m : {"subscriptions/listen", "initialize", "resources/subscribe", "resources/unsubscribe"}) {
    EXPECT_FALSE(stateless_reply(*find_mcp_method(m), Era::Session2025)) << m;
  }
}

TEST(McpMethods, MethodNotFoundNamesTheMethodItsEraAndWhatIsServed) {
  Error e = method_not_found("ping", kOnly2026, "DRAFT-2026-v1");
  EXPECT_EQ(e.code, rpc_code::kMethodNotFound);
  EXPECT_EQ(e.message,
            "method not found: ping (a 2025-era method: not part of DRAFT-2026-v1) (mcpfan serves server/discover, "
            "subscriptions/listen and the empty tools, prompts and resources lists)");
  Error s = method_not_found("tools/call", kOnly2025);
  EXPECT_EQ(s.message,
            "method not found: tools/call (mcpfan serves initialize, ping, logging/setLevel, resources/subscribe, "
            "resources/unsubscribe and the empty tools, prompts and resources lists in a session)");
  Error listen = method_not_found("subscriptions/listen", kOnly2025);
  EXPECT_NE(listen.message.find("a 2026-07-28 method"), std::string::npos) << listen.message;
}

}  // namespace
}  // namespace mcpfan::detail

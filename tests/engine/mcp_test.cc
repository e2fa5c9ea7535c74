// Tests for engine/src/mcp.cc: the public MCP wire messages (mcpfan/mcp.h, design §2.1/§2.2).
#include "mcpfan/mcp.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

namespace mcpfan {
namespace {

simdjson::dom::element parse(simdjson::dom::parser& p, const std::string& json) {
  auto r = p.parse(json);
  EXPECT_FALSE(r.error()) << json;
  return r.value();
}

TEST(McpTest, VersionChecks) {
  EXPECT_TRUE(mcp::is_2026_version("2026-07-28"));
  EXPECT_TRUE(mcp::is_2026_version("DRAFT-2026-v1"));
  EXPECT_FALSE(mcp::is_2026_version("2025-11-25"));
  EXPECT_FALSE(mcp::is_2026_version(""));
  EXPECT_TRUE(mcp::is_2025_version("2025-11-25"));
  EXPECT_TRUE(mcp::is_2025_version("2024-11-05"));
  EXPECT_FALSE(mcp::is_2025_version("2026-07-28"));
  EXPECT_EQ(mcp::negotiate_2025("2025-06-18"), "2025-06-18");
  EXPECT_EQ(mcp::negotiate_2025("1999-01-01"), "2025-11-25");  // unknown: the latest
}

TEST(McpTest, UnsupportedVersionDataNamesBothSides) {
  simdjson::dom::parser p;
  std::string data = mcp::unsupported_version_data("2030-01-01\"x");
  auto doc = parse(p, data);
  EXPECT_EQ(std::string(doc["requested"].get_string().value()), "2030-01-01\"x");
  auto supported = doc["supported"].get_array().value();
  EXPECT_EQ(supported.size(), 2u);
  EXPECT_EQ(std::string(supported.at(0).get_string().value()), mcp::kRev2026);
}

TEST(McpTest, DiscoverResult) {
  simdjson::dom::parser p;
  auto doc = parse(p, mcp::discover_result());
  EXPECT_EQ(std::string(doc["resultType"].get_string().value()), "complete");
  EXPECT_TRUE(doc["capabilities"]["resources"]["subscribe"].get_bool().value());
  EXPECT_TRUE(doc["capabilities"]["tools"]["listChanged"].get_bool().value());
  EXPECT_EQ(std::string(doc["_meta"]["io.modelcontextprotocol/serverInfo"]["version"].get_string().value()),
            mcp::kServerVersion);
}

TEST(McpTest, InitializeResultEchoesVersion) {
  simdjson::dom::parser p;
  auto doc = parse(p, mcp::initialize_result("2025-06-18"));
  EXPECT_EQ(std::string(doc["protocolVersion"].get_string().value()), "2025-06-18");
  EXPECT_TRUE(doc["capabilities"]["prompts"]["listChanged"].get_bool().value());
}

TEST(McpTest, PlanListenAcknowledgesOnlyWhatIsDelivered) {
  ListenSpec spec;
  spec.flagged = kind_bit(Kind::ToolsListChanged);
  spec.resource_uris = {"file:///a", "file:///dir/"};
  mcp::ListenPlan plan = mcp::plan_listen(spec, kDefaultTenant, R"("listen:0")");
  EXPECT_EQ(plan.filter.kinds, kind_bit(Kind::ToolsListChanged));
  EXPECT_EQ(plan.filter.uris.size(), 2u);
  EXPECT_EQ(plan.ack,
            R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":)"
            R"({"io.modelcontextprotocol/subscriptionId":"listen:0"},"notifications":)"
            R"({"toolsListChanged":true,"resourceSubscriptions":["file:///a","file:///dir/"]}}})");

  mcp::ListenPlan none = mcp::plan_listen(ListenSpec{}, kDefaultTenant, "7");  // numeric id: type kept
  EXPECT_EQ(none.filter.kinds, 0);
  EXPECT_NE(none.ack.find(R"("io.modelcontextprotocol/subscriptionId":7})"), std::string::npos);
  EXPECT_NE(none.ack.find(R"("notifications":{})"), std::string::npos);
}

TEST(McpTest, PlanListenAcknowledgesTheTaskIds) {
  ListenSpec spec;
  spec.task_ids = {"t1", "t\"2"};
  mcp::ListenPlan plan = mcp::plan_listen(spec, kDefaultTenant, "3");
  EXPECT_EQ(plan.filter.task_ids, (std::vector<std::string>{"t1", "t\"2"}));
  EXPECT_TRUE(plan.filter.uris.empty());
  EXPECT_NE(plan.ack.find(R"("notifications":{"taskIds":["t1","t\"2"]})"), std::string::npos) << plan.ack;
}

TEST(McpTest, TaskIdsNeedTheTasksExtension) {
  ListenSpec spec;
  spec.task_ids = {"t1"};
  auto refused = mcp::check_listen_capabilities(spec, /*declares_tasks=*/false);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error.code, -32021);
  EXPECT_NE(refused->error.message.find("io.modelcontextprotocol/tasks"), std::string::npos);
  simdjson::dom::parser p;
  auto data = parse(p, refused->data);
  EXPECT_TRUE(data["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
  EXPECT_FALSE(mcp::check_listen_capabilities(spec, true));
  EXPECT_FALSE(mcp::check_listen_capabilities(ListenSpec{}, false)) << "no task asked for: nothing to declare";
}

TEST(McpTest, OnlyDiscoverAnnouncesTheTasksExtension) {
  simdjson::dom::parser p;
  auto discover = parse(p, mcp::discover_result());
  EXPECT_TRUE(discover["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
  simdjson::dom::parser q;
  auto init = parse(q, mcp::initialize_result("2025-11-25"));
  EXPECT_TRUE(init["capabilities"]["extensions"].error()) << "a 2025 session hears no task";
}

TEST(McpTest, ListenCompleteResult) {
  EXPECT_EQ(mcp::listen_complete_result(R"("listen:0")"),
            R"({"jsonrpc":"2.0","id":"listen:0","result":{"resultType":"complete",)"
            R"("_meta":{"io.modelcontextprotocol/subscriptionId":"listen:0"}}})");
}

TEST(McpTest, PublisherNotificationsEscapeTheUri) {
  PayloadRef p = mcp::resource_updated("file:///a \"b\".txt");
  EXPECT_EQ(p->kind(), Kind::ResourceUpdated);
  EXPECT_EQ(p->plain(Framing::Line),
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///a "
            "\\\"b\\\".txt\"}}\n");
  PayloadRef t = mcp::list_changed(Kind::ToolsListChanged);
  EXPECT_NE(std::string(t->plain(Framing::Line)).find("notifications/tools/list_changed"), std::string::npos);
}

}  // namespace
}  // namespace mcpfan

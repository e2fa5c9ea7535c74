// The HTTP routes as functions of a request value (http/router.h, http/exchange.h): each test
// hands a route an HttpRequest and reads the Response (or the listen) it produced, with no
// socket and no HTTP/1.1 in between. The wire itself is tested in tests/integration.
#include <http_parser.h>

#include <string>

#include "route_harness.h"

namespace mcpfan::detail {
namespace {

using testing::RouteHarness;

constexpr char kV2026[] = "2026-07-28";

HttpRequest Get(std::string url) {
  HttpRequest r;
  r.method = HTTP_GET;
  r.url = std::move(url);
  return r;
}

std::string Envelope() {
  return std::string(R"({"io.modelcontextprotocol/protocolVersion":")") + kV2026 +
         R"(","io.modelcontextprotocol/clientInfo":{"name":"routes-test","version":"1"},)"
         R"("io.modelcontextprotocol/clientCapabilities":{}})";
}

// A 2026-07-28 request with its headers mirrored, as a conforming client sends it.
HttpRequest McpPost(std::string_view id, std::string method, std::string extra_params = {}) {
  HttpRequest r;
  r.method = HTTP_POST;
  r.url = "/mcp";
  r.content_type = "application/json";
  r.accept = "application/json, text/event-stream";
  r.protocol_version = kV2026;
  r.mcp_method = method;
  r.body = std::string(R"({"jsonrpc":"2.0","id":)") + std::string(id) + R"(,"method":")" + method +
           R"(","params":{"_meta":)" + Envelope() + (extra_params.empty() ? "" : "," + extra_params) + "}}";
  return r;
}

HttpRequest Publish(std::string body) {
  HttpRequest r;
  r.method = HTTP_POST;
  r.url = "/v1/publish";
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

TEST(Routes, AnUnknownPathIs404NamingIt) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Get("/nope?x=1"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 404);
  EXPECT_NE(ex->response->body.find("no such path: /nope"), std::string::npos) << ex->response->body;
}

TEST(Routes, AWrongMethodIs405WithAnAllowField) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Get("/v1/publish"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 405);
  EXPECT_EQ(ex->field("Allow"), "POST");
}

TEST(Routes, AForeignHostIsRefusedOnALoopbackListener) {
  RouteHarness h{ServerConfig{}};
  HttpRequest req = Get("/livez");
  req.host = "attacker.example:8080";
  auto ex = h.route(req);
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 403);
  EXPECT_NE(ex->response->body.find("attacker.example"), std::string::npos);
}

TEST(Routes, LivezAnswersOk) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Get("/livez"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 200);
  EXPECT_EQ(ex->response->body, "ok\n");
}

TEST(Routes, MetricsNameTheirFamiliesForALoopbackPeer) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Get("/metrics"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 200);
  EXPECT_EQ(ex->response->content_type, "text/plain; version=0.0.4");
  EXPECT_NE(ex->response->body.find("# TYPE mcpfan_build_info gauge"), std::string::npos);
}

TEST(Routes, AStatusJsonIsNotCached) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Get("/status.json"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 200);
  EXPECT_EQ(ex->field("Cache-Control"), "no-store");
}

TEST(Routes, AnMcpPostThatIsNotJsonIs415) {
  RouteHarness h{ServerConfig{}};
  HttpRequest req = McpPost("1", "server/discover");
  req.content_type = "text/plain";
  auto ex = h.route(req);
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 415);
}

TEST(Routes, DiscoverAnswersWithTheVersionInAField) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(McpPost("7", "server/discover"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 200);
  EXPECT_EQ(ex->field("MCP-Protocol-Version"), kV2026);
  EXPECT_NE(ex->response->body.find(R"("id":7)"), std::string::npos) << ex->response->body;
}

TEST(Routes, AHeaderThatContradictsTheEnvelopeIsAnError) {
  RouteHarness h{ServerConfig{}};
  HttpRequest req = McpPost("2", "server/discover");
  req.protocol_version = "DRAFT-2026-v1";
  auto ex = h.route(req);
  ASSERT_TRUE(ex->response);
  EXPECT_NE(ex->response->body.find("does not match"), std::string::npos) << ex->response->body;
}

TEST(Routes, AListenBecomesAStreamWithItsAckAndHoldsItsUsage) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(McpPost(R"("L1")", "subscriptions/listen",
                            R"("notifications":{"resourceSubscriptions":["file:///a"],"toolsListChanged":true})"));
  ASSERT_FALSE(ex->response) << ex->response->status << " " << ex->response->body;
  ASSERT_TRUE(ex->listen);
  EXPECT_TRUE(ex->usage_held);
  EXPECT_NE(ex->listen->ack_event.find("file:///a"), std::string::npos) << ex->listen->ack_event;
  EXPECT_NE(ex->listen->ack_event.find("notifications/subscriptions/acknowledged"), std::string::npos)
      << ex->listen->ack_event;
}

TEST(Routes, APublishOfBrokenJsonIs400AndPublishesNothing) {
  RouteHarness h{ServerConfig{}};
  std::uint64_t before = h.state().hub->published();
  auto ex = h.route(Publish(R"({"method":"notifications/resources/updated","params":)"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 400);
  EXPECT_EQ(h.state().hub->published(), before);
}

TEST(Routes, AValidPublishIsAcceptedAndReachesTheHub) {
  RouteHarness h{ServerConfig{}};
  auto ex = h.route(Publish(R"({"method":"notifications/resources/updated","params":{"uri":"file:///a"}})"));
  ASSERT_TRUE(ex->response);
  EXPECT_EQ(ex->response->status, 202) << ex->response->body;
  EXPECT_EQ(ex->response->body, R"({"accepted":1})");
  EXPECT_EQ(h.state().hub->published(), 1u);
}

}  // namespace
}  // namespace mcpfan::detail

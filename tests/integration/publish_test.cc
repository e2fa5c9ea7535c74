// POST /v1/publish: replies and counters (design.md 3).
#include "harness.h"
#include "test_helpers.h"

namespace itest {
namespace {

TEST(Publish, SingleIsAcceptedOne) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = Publish(srv.port(), R"({"method":"notifications/tools/list_changed"})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202) << r->body;
  EXPECT_TRUE(r->ContentTypeIs("application/json")) << r->Get("content-type").value_or("<none>");
  Json j(r->body);
  ASSERT_TRUE(j.ok()) << r->body;
  EXPECT_TRUE(JsonMatches(j.root(), R"({"accepted":1})"));
}

TEST(Publish, ArrayIsAcceptedNAndDeliveredInOrder) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(
      OpenListen(s, srv.port(), R"("arr")",
                 R"({"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///p"]})"));
  ASSERT_TRUE(PublishOk(srv.port(),
                        R"([{"method":"notifications/prompts/list_changed"},
                            {"method":"notifications/resources/updated","params":{"uri":"file:///p","_meta":{"k":1}}},
                            {"method":"notifications/tools/list_changed","params":{"_meta":{"k":2}}}])",
                        3));
  std::string err;
  auto a = s.NextMessage(kIo, &err);
  ASSERT_TRUE(a) << err;
  EXPECT_TRUE(IsNotification(*a, "notifications/prompts/list_changed", R"("arr")"));
  auto b = s.NextMessage(kIo, &err);
  ASSERT_TRUE(b) << err;
  EXPECT_TRUE(
      IsNotification(*b, "notifications/resources/updated", R"("arr")", R"({"uri":"file:///p","_meta":{"k":1}})"));
  auto c = s.NextMessage(kIo, &err);
  ASSERT_TRUE(c) << err;
  EXPECT_TRUE(IsNotification(*c, "notifications/tools/list_changed", R"("arr")", R"({"_meta":{"k":2}})"));
}

TEST(Publish, EmptyArrayIsAcceptedZero) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  EXPECT_TRUE(PublishOk(srv.port(), "[]", 0));
}

TEST(Publish, NoSubscribersStillAccepted) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  EXPECT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///none"}})"));
}

TEST(Publish, CountersCountAcceptedAndDelivered) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  ASSERT_TRUE(OpenListen(a, srv.port(), R"("a")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenListen(b, srv.port(), R"("b")", R"({"toolsListChanged":true})"));
  // Baselines after the acks (whether an ack counts as a delivery is not specified).
  auto published0 = ReadMetric(srv.port(), "mcpfan_published_total");
  auto delivered0 = ReadMetric(srv.port(), "mcpfan_deliveries_total");
  ASSERT_TRUE(published0) << "mcpfan_published_total missing from /metrics";
  ASSERT_TRUE(delivered0) << "mcpfan_deliveries_total missing from /metrics";
  ASSERT_TRUE(PublishOk(srv.port(),
                        R"([{"method":"notifications/tools/list_changed"},
                            {"method":"notifications/prompts/list_changed"}])",
                        2));
  std::string err;
  ASSERT_TRUE(a.NextMessage(kIo, &err)) << err;
  ASSERT_TRUE(b.NextMessage(kIo, &err)) << err;
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_published_total", *published0 + 2));
  // Two streams x one matching notification.
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_deliveries_total", *delivered0 + 2));
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// A worker loop's inbox bounded at one notification: a body of two cannot be posted whole, so
// it is refused whole (503, Retry-After, a message naming the bound) and nothing is delivered;
// one notification still passes.
TEST(Publish, ABodyLargerThanAFullInboxIsRefusedWholeWithRetryAfter) {
  ServerProcess srv({"--workers", "1", "--shard-inbox-max", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("inbox")", R"({"resourceSubscriptions":["file:///a","file:///b"]})"));
  auto r = Publish(srv.port(), "[" + Updated("file:///a") + "," + Updated("file:///b") + "]");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->Get("retry-after").value_or(""), "1");
  EXPECT_NE(r->body.find("--shard-inbox-max"), std::string::npos) << r->body;
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///b")));
  auto ev = s.Next();
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->data.find("file:///b"), std::string::npos) << "the refused body was partly delivered: " << ev->data;
}

}  // namespace
}  // namespace itest

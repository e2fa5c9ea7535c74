// subscriptions/listen: stream headers, acknowledgement, delivery of each kind,
// subscription ids, per-stream order (design.md 2.1, 3, 4).
#include <ostream>

#include "harness.h"

namespace itest {
namespace {

TEST(Listen, StreamHeadersAndAckFirst) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  std::string err;
  ASSERT_TRUE(s.Open(srv.port(), ListenRequest(R"("listen:0")", R"({"toolsListChanged":true})"), kIo, &err)) << err;
  const HttpResponse& h = s.head();
  ASSERT_EQ(h.status, 200) << h.body;
  EXPECT_TRUE(h.ContentTypeIs("text/event-stream")) << h.Get("content-type").value_or("<none>");
  EXPECT_EQ(h.Get("cache-control"), "no-cache");
  EXPECT_EQ(h.Get("x-accel-buffering"), "no");
  EXPECT_TRUE(h.chunked) << "SSE stream should use chunked transfer encoding";
  EXPECT_FALSE(h.Get("content-length")) << "a stream has no Content-Length";

  auto ack = s.NextMessage(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_EQ(ack->GetString({"jsonrpc"}), "2.0");
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged") << ack->text();
  EXPECT_FALSE(ack->Has({"id"})) << "the acknowledgement is a notification: " << ack->text();
  EXPECT_TRUE(JsonMatches(ack->Get({"params", "_meta", kSubId}), R"("listen:0")"));
  EXPECT_TRUE(JsonMatches(ack->Get({"params", "notifications"}), R"({"toolsListChanged":true})"));
  EXPECT_TRUE(s.id_lines().empty()) << "SSE id field present: " << s.id_lines().front();
}

TEST(Listen, AckOmitsFalseFlagsAndEmptyLists) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  EXPECT_TRUE(OpenListen(a, srv.port(), R"("a")",
                         R"({"toolsListChanged":true,"promptsListChanged":false,
                             "resourcesListChanged":false,"resourceSubscriptions":[]})",
                         R"({"toolsListChanged":true})"));
  EXPECT_TRUE(OpenListen(b, srv.port(), R"("b")",
                         R"({"promptsListChanged":false,"resourceSubscriptions":["file:///x"]})",
                         R"({"resourceSubscriptions":["file:///x"]})"));
  // An empty filter agrees to nothing.
  SseStream c;
  EXPECT_TRUE(OpenListen(c, srv.port(), R"("c")", R"({})", R"({})"));
}

TEST(Listen, AckEchoesAllFourKinds) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  const char* all = R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,
                        "resourceSubscriptions":["file:///a","file:///dir/"]})";
  EXPECT_TRUE(OpenListen(s, srv.port(), R"("all")", all, all));
}

TEST(Listen, NumericRequestIdKeepsType) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), "7", R"({"toolsListChanged":true})", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", "7"));
  auto sid = m->Get({"params", "_meta", kSubId});
  ASSERT_TRUE(sid);
  EXPECT_TRUE(sid->is_int64() || sid->is_uint64()) << "id 7 must stay a JSON number: " << m->text();
}

// String ids that need JSON escaping, and numbers at the edges, come back
// exactly (the server splices the id into a pre-encoded payload).
TEST(Listen, UnusualIdsRoundTripExactly) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::vector<std::string> ids = {R"("q\"uo\\te/\u00e9\u2028\n")", R"("")", "0", "-5",
                                        "9007199254740993", R"("listen:0")"};
  std::vector<std::unique_ptr<SseStream>> streams;
  for (const auto& id : ids) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenListen(*streams.back(), srv.port(), id, R"({"toolsListChanged":true})")) << id;
  }
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string err;
    auto m = streams[i]->NextMessage(kIo, &err);
    ASSERT_TRUE(m) << ids[i] << ": " << err;
    EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", ids[i])) << ids[i];
  }
}

// ---- one test per kind: publisher params and _meta pass through verbatim.
struct Kind {
  const char* name;
  const char* filter;
  const char* method;
  const char* params;  // what the publisher sends (and the client must see)
};

void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

class ListenKinds : public ::testing::TestWithParam<Kind> {};

TEST_P(ListenKinds, PublishIsDelivered) {
  const Kind& k = GetParam();
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream str, num;
  ASSERT_TRUE(OpenListen(str, srv.port(), R"("listen:0")", k.filter, k.filter));
  ASSERT_TRUE(OpenListen(num, srv.port(), "42", k.filter, k.filter));
  std::string body = std::string(R"({"method":")") + k.method + R"(","params":)" + k.params + "}";
  ASSERT_TRUE(PublishOk(srv.port(), body));
  std::string err;
  auto m1 = str.NextMessage(kIo, &err);
  ASSERT_TRUE(m1) << err;
  EXPECT_TRUE(IsNotification(*m1, k.method, R"("listen:0")", k.params));
  auto m2 = num.NextMessage(kIo, &err);
  ASSERT_TRUE(m2) << err;
  EXPECT_TRUE(IsNotification(*m2, k.method, "42", k.params));
  EXPECT_TRUE(str.id_lines().empty() && num.id_lines().empty()) << "SSE id field present";
}

INSTANTIATE_TEST_SUITE_P(
    AllKinds, ListenKinds,
    ::testing::Values(
        Kind{"ResourcesUpdated", R"({"resourceSubscriptions":["file:///project/config.json"]})",
             "notifications/resources/updated",
             R"({"uri":"file:///project/config.json","_meta":{"origin/rev":42,"x/y":{"z":[1,"two",null]}},
                 "title":"Config","extra":{"nested":[true,false,1.5]}})"},
        Kind{"ResourcesListChanged", R"({"resourcesListChanged":true})", "notifications/resources/list_changed",
             R"({"_meta":{"origin/rev":"r1"},"note":"hello \"quoted\" \u00e9"})"},
        Kind{"ToolsListChanged", R"({"toolsListChanged":true})", "notifications/tools/list_changed",
             R"({"_meta":{"origin/server":"s1"}})"},
        Kind{"PromptsListChanged", R"({"promptsListChanged":true})", "notifications/prompts/list_changed",
             R"({"reason":"reload","count":3})"}),
    [](const ::testing::TestParamInfo<Kind>& i) { return std::string(i.param.name); });

TEST(Listen, ListChangedWithoutParamsCarriesOnlySubscriptionId) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("p")", R"({"promptsListChanged":true})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/prompts/list_changed"})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/prompts/list_changed", R"("p")", "{}"));
}

TEST(Listen, TwoListensOneClientDistinctIds) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream first, second;
  const char* filter = R"({"toolsListChanged":true,"resourceSubscriptions":["file:///shared"]})";
  ASSERT_TRUE(OpenListen(first, srv.port(), R"("listen:0")", filter));
  ASSERT_TRUE(OpenListen(second, srv.port(), R"("listen:1")", filter));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(
      PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///shared"}})"));
  std::string err;
  for (auto [s, id] : {std::pair{&first, R"("listen:0")"}, std::pair{&second, R"("listen:1")"}}) {
    auto t = s->NextMessage(kIo, &err);
    ASSERT_TRUE(t) << id << ": " << err;
    EXPECT_TRUE(IsNotification(*t, "notifications/tools/list_changed", id));
    auto u = s->NextMessage(kIo, &err);
    ASSERT_TRUE(u) << id << ": " << err;
    EXPECT_TRUE(IsNotification(*u, "notifications/resources/updated", id, R"({"uri":"file:///shared"})"));
  }
}

// Per-stream order is publish order: 100 separate publishes, distinct URIs
// (so no coalescing can apply), one prefix subscription.
TEST(Listen, PerStreamOrderEqualsPublishOrder) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s1, s2;
  ASSERT_TRUE(OpenListen(s1, srv.port(), R"("o1")", R"({"resourceSubscriptions":["file:///order/"]})"));
  ASSERT_TRUE(OpenListen(s2, srv.port(), "2", R"({"resourceSubscriptions":["file:///order/"]})"));
  constexpr int kN = 100;
  for (int i = 0; i < kN; ++i) {
    ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///order/)" +
                                          std::to_string(i) + R"(","_meta":{"test/seq":)" + std::to_string(i) + "}}}"));
  }
  for (auto [s, id] : {std::pair{&s1, R"("o1")"}, std::pair{&s2, "2"}}) {
    for (int i = 0; i < kN; ++i) {
      std::string err;
      auto m = s->NextMessage(kIo, &err);
      ASSERT_TRUE(m) << id << " event " << i << ": " << err;
      ASSERT_TRUE(IsNotification(*m, "notifications/resources/updated", id,
                                 R"({"uri":"file:///order/)" + std::to_string(i) + R"(","_meta":{"test/seq":)" +
                                     std::to_string(i) + "}}"))
          << id << " position " << i;
    }
  }
}

// Same, with all 100 in one array body.
TEST(Listen, ArrayPublishKeepsOrder) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("arr")", R"({"resourceSubscriptions":["file:///order/"]})"));
  constexpr int kN = 100;
  std::string body = "[";
  for (int i = 0; i < kN; ++i) {
    if (i) body += ",";
    body +=
        R"({"method":"notifications/resources/updated","params":{"uri":"file:///order/)" + std::to_string(i) + R"("}})";
  }
  body += "]";
  ASSERT_TRUE(PublishOk(srv.port(), body, kN));
  for (int i = 0; i < kN; ++i) {
    std::string err;
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "event " << i << ": " << err;
    ASSERT_TRUE(IsNotification(*m, "notifications/resources/updated", R"("arr")",
                               R"({"uri":"file:///order/)" + std::to_string(i) + R"("})"))
        << "position " << i;
  }
}

}  // namespace
}  // namespace itest

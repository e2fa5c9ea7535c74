// What a listen must NOT receive: unrequested kinds, other URIs, other tenants.
// Each test publishes the unwanted events first and then a wanted marker; since
// per-stream order is publish order, the marker being the next event proves
// nothing unwanted was delivered before it.
#include "harness.h"
#include "test_helpers.h"

namespace itest {
namespace {

constexpr const char* kToolsLc = R"({"method":"notifications/tools/list_changed"})";
constexpr const char* kPromptsLc = R"({"method":"notifications/prompts/list_changed"})";
constexpr const char* kResLc = R"({"method":"notifications/resources/list_changed"})";

// The next event is exactly `method` (+ params) for `sid`.
::testing::AssertionResult NextIs(SseStream& s, std::string_view method, std::string_view sid,
                                  std::string_view params = "{}") {
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  if (!m) return ::testing::AssertionFailure() << "no event: " << err;
  return IsNotification(*m, method, sid, params);
}

TEST(Filter, UnrequestedKindsNeverArrive) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream tools, res;
  ASSERT_TRUE(OpenListen(tools, srv.port(), R"("t")", R"({"toolsListChanged":true,"promptsListChanged":false})",
                         R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenListen(res, srv.port(), R"("r")", R"({"resourceSubscriptions":["file:///a","file:///m"]})"));

  // Unwanted by `tools`: prompts, resources list, resource update.
  // Unwanted by `res`: tools, prompts, resources list.
  ASSERT_TRUE(PublishOk(srv.port(), kPromptsLc));
  ASSERT_TRUE(PublishOk(srv.port(), kResLc));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///a")));  // wanted by res only
  ASSERT_TRUE(PublishOk(srv.port(), kToolsLc));              // wanted by tools only
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///m")));  // marker for res

  EXPECT_TRUE(NextIs(tools, "notifications/tools/list_changed", R"("t")"));
  EXPECT_TRUE(NextIs(res, "notifications/resources/updated", R"("r")", R"({"uri":"file:///a"})"));
  EXPECT_TRUE(NextIs(res, "notifications/resources/updated", R"("r")", R"({"uri":"file:///m"})"));
  // And `tools` got nothing after its one event: a final tools marker is next.
  ASSERT_TRUE(PublishOk(srv.port(), kToolsLc));
  EXPECT_TRUE(NextIs(tools, "notifications/tools/list_changed", R"("t")"));
}

TEST(Filter, OtherUrisNeverArrive) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("u")", R"({"resourceSubscriptions":["file:///a","file:///b.txt"]})"));
  for (const char* other : {"file:///ab", "file:///a/x", "file:///", "file:///A", "file:///b.txt2", "file:///b",
                            "file:///a?x", "http:///a"}) {
    ASSERT_TRUE(PublishOk(srv.port(), Updated(other))) << other;
  }
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///b.txt")));
  EXPECT_TRUE(NextIs(s, "notifications/resources/updated", R"("u")", R"({"uri":"file:///b.txt"})"));
}

TEST(Filter, SubResourcePrefixMatch) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream slash, bare;
  ASSERT_TRUE(OpenListen(slash, srv.port(), R"("slash")", R"({"resourceSubscriptions":["file:///dir/"]})"));
  ASSERT_TRUE(OpenListen(bare, srv.port(), R"("bare")", R"({"resourceSubscriptions":["file:///dir"]})"));

  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///dir/a/b")));  // slash only
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///dirx")));     // neither
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///dir/")));     // slash only (equal)
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///dir")));      // bare only (equal) = marker

  EXPECT_TRUE(NextIs(slash, "notifications/resources/updated", R"("slash")", R"({"uri":"file:///dir/a/b"})"));
  EXPECT_TRUE(NextIs(slash, "notifications/resources/updated", R"("slash")", R"({"uri":"file:///dir/"})"));
  EXPECT_TRUE(NextIs(bare, "notifications/resources/updated", R"("bare")", R"({"uri":"file:///dir"})"));
  // `slash` must not have received "file:///dir": a further marker proves it.
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///dir/z")));
  EXPECT_TRUE(NextIs(slash, "notifications/resources/updated", R"("slash")", R"({"uri":"file:///dir/z"})"));
}

// At most once per (subscription, event), even when several of a listen's
// URIs match the same update.
TEST(Filter, OverlappingSubscriptionsDeliverOnce) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("ov")",
                         R"({"resourceSubscriptions":["file:///d/","file:///d/x","file:///d/x","file:///"]})"));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///d/x")));
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///d/y")));
  EXPECT_TRUE(NextIs(s, "notifications/resources/updated", R"("ov")", R"({"uri":"file:///d/x"})"));
  EXPECT_TRUE(NextIs(s, "notifications/resources/updated", R"("ov")", R"({"uri":"file:///d/y"})"));
}

TEST(Filter, TenantIsolation) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("ten")",
                         R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,
                             "resourceSubscriptions":["file:///t","file:///t/"]})"));
  // Tenant "a" publishes everything this default-tenant listen would match.
  ASSERT_TRUE(PublishOk(srv.port(), R"({"tenant":"a","method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"tenant":"a","method":"notifications/prompts/list_changed"})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"tenant":"a","method":"notifications/resources/list_changed"})"));
  ASSERT_TRUE(PublishOk(srv.port(),
                        R"([{"tenant":"a","method":"notifications/resources/updated","params":{"uri":"file:///t"}},
                            {"tenant":"a","method":"notifications/resources/updated","params":{"uri":"file:///t/x"}}])",
                        2));
  // Marker from the default tenant.
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///t"}})"));
  EXPECT_TRUE(NextIs(s, "notifications/resources/updated", R"("ten")", R"({"uri":"file:///t"})"));
}

}  // namespace
}  // namespace itest

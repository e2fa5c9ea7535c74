// The tenant table (docs/security.md "Tenants"): publishes only look tenants up, only authenticated
// clients create entries, and an entry is reclaimed when its last client (connection or
// 2025 session) is gone. Before the fix, 2,100 rejected publish bodies naming five fresh
// tenants each filled the 10,000-tenant table, and every new JWT tenant got 503 until
// restart.
#include <fstream>
#include <random>

#include "harness.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

constexpr std::string_view kSecret = "an-hs256-secret-of-more-than-32-bytes!!";
constexpr std::string_view kAdminKey = "pub-admin-0123456789abcdef";

struct TenantServer {
  explicit TenantServer(std::string max_tenants) {
    std::ofstream(dir.path() + "/secret") << kSecret << "\n";
    std::ofstream(dir.path() + "/keys") << kAdminKey << " *\n";
    srv.emplace(std::vector<std::string>{"--jwt-secret-file", dir.path() + "/secret", "--publish-keys-file",
                                         dir.path() + "/keys", "--max-tenants", std::move(max_tenants), "--workers",
                                         "2"});
  }
  int port() const { return srv->port(); }
  TempDir dir;
  std::optional<ServerProcess> srv;
};

Header Bearer(std::string_view token) { return {"Authorization", "Bearer " + std::string(token)}; }

std::string PublishRequest(std::string_view body) {
  return BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}, Bearer(kAdminKey)}, body);
}

std::string ListenFor(std::string_view token, std::string_view uri) {
  auto h = McpHeaders(kV2026, "subscriptions/listen");
  h.push_back(Bearer(token));
  return McpPost(RpcBody("\"l\"", "subscriptions/listen",
                         R"("notifications":{"resourceSubscriptions":[")" + std::string(uri) + "\"]}"),
                 h);
}

std::string UpdateFor(std::string_view tenant, std::string_view uri) {
  return R"({"tenant":")" + std::string(tenant) + R"(","method":"notifications/resources/updated","params":{"uri":")" +
         std::string(uri) + "\"}}";
}

// A tenant's client listens and receives a publish addressed to its tenant.
::testing::AssertionResult TenantListensAndReceives(int port, std::string_view tenant) {
  SseStream s;
  std::string err;
  if (!s.Open(port, ListenFor(Hs256Token(kSecret, tenant), "mem://t/x"), kIo, &err))
    return ::testing::AssertionFailure() << err;
  if (s.head().status != 200)
    return ::testing::AssertionFailure() << "listen of " << tenant << ": " << s.head().status << " " << s.head().body;
  if (!s.NextMessage(kIo, &err)) return ::testing::AssertionFailure() << "no ack: " << err;
  auto r = Roundtrip(port, PublishRequest(UpdateFor(tenant, "mem://t/x")));
  if (!r || r->status != 202) return ::testing::AssertionFailure() << "publish: " << (r ? r->body : "no answer");
  auto m = s.NextMessage(kIo, &err);
  if (!m) return ::testing::AssertionFailure() << tenant << " received nothing: " << err;
  return IsNotification(*m, "notifications/resources/updated", "\"l\"", R"({"uri":"mem://t/x"})");
}

TEST(TenantTable, PublishesNamingRandomTenantsCreateNoTenants) {
  TenantServer s("20");
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::mt19937 rng(91);
  auto fresh = [&] { return "t" + std::to_string(rng()); };
  // 20,000 bodies of five fresh tenants each (100,000 names): every other body has a bad
  // last element and is rejected whole, the rest are valid and accepted for nobody.
  constexpr int kBodies = 20000, kWindow = 200;
  int accepted = 0, rejected = 0;
  for (int sent = 0; sent < kBodies;) {
    Conn c;
    ASSERT_TRUE(c.Connect(s.port()));
    std::string batch;
    int n = 0;
    for (; n < kWindow && sent + n < kBodies; ++n) {
      bool valid = (sent + n) % 2 == 0;
      std::string body = "[";
      for (int k = 0; k < 5; ++k) {
        if (k) body += ",";
        body += (k == 4 && !valid) ? R"({"tenant":")" + fresh() + R"(","method":"notifications/nope"})"
                                   : R"({"tenant":")" + fresh() + R"(","method":"notifications/tools/list_changed"})";
      }
      batch += PublishRequest(body + "]");
    }
    ASSERT_TRUE(c.Send(batch));
    for (int i = 0; i < n; ++i) {
      std::string err;
      auto r = c.ReadResponse(kIo, &err);
      ASSERT_TRUE(r) << "answer " << sent + i << ": " << err;
      if (r->status == 202) {
        EXPECT_EQ(r->body, R"({"accepted":5})");
        ++accepted;
      } else {
        EXPECT_EQ(r->status, 400) << r->body;
        ++rejected;
      }
    }
    sent += n;
  }
  EXPECT_EQ(accepted, kBodies / 2);
  EXPECT_EQ(rejected, kBodies / 2);
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 1)) << "only the default tenant";
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_published_no_audience_total", 5.0 * kBodies / 2));
  // The table has room for new clients' tenants, which are served as usual.
  EXPECT_TRUE(TenantListensAndReceives(s.port(), "newcomer"));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_limit_hits_total{limit=\"tenants\"}", 0));
}

TEST(TenantTable, ATenantIsReclaimedWhenItsLastClientLeaves) {
  TenantServer s("4");  // default + 3
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  for (int i = 0; i < 20; ++i) {
    std::string tenant = "tenant-" + std::to_string(i);
    ASSERT_TRUE(TenantListensAndReceives(s.port(), tenant)) << "client " << i;
    // The stream was closed by the client: once the server has seen it, the entry goes.
    ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 1)) << "after " << tenant;
  }
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_limit_hits_total{limit=\"tenants\"}", 0));
}

TEST(TenantTable, AFullTableRefusesNewTenantsWith503AndServesKnownOnes) {
  TenantServer s("3");  // default + 2
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  SseStream a, b;
  std::string err;
  ASSERT_TRUE(a.Open(s.port(), ListenFor(Hs256Token(kSecret, "a"), "mem://a"), kIo, &err)) << err;
  ASSERT_TRUE(b.Open(s.port(), ListenFor(Hs256Token(kSecret, "b"), "mem://b"), kIo, &err)) << err;
  ASSERT_EQ(a.head().status, 200);
  ASSERT_EQ(b.head().status, 200);
  auto c = McpCall(s.port(), ListenFor(Hs256Token(kSecret, "c"), "mem://c"));
  EXPECT_TRUE(IsRpcError(c, 503, -32032, "\"l\"", {"tenants"}));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_limit_hits_total{limit=\"tenants\"}", 1));
  // A known tenant still gets in (a second stream of a).
  SseStream a2;
  ASSERT_TRUE(a2.Open(s.port(), ListenFor(Hs256Token(kSecret, "a"), "mem://a"), kIo, &err)) << err;
  EXPECT_EQ(a2.head().status, 200);
  // When b leaves, c fits.
  b.conn().Close();
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 2));
  EXPECT_TRUE(TenantListensAndReceives(s.port(), "c"));
}

// A 2025 session outlives the connection that created it, so it holds its tenant too.
TEST(TenantTable, ASessionKeepsItsTenantUntilItEnds) {
  TenantServer s("10");
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::string acme = Hs256Token(kSecret, "acme");
  auto init = McpCall(
      s.port(),
      BuildRequest(
          "POST", "/mcp",
          {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}, Bearer(acme)},
          R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
          R"("clientInfo":{"name":"t","version":"1"}}})"));
  ASSERT_EQ(init.http.status, 200) << init.http.body;
  std::string sid = init.http.Get("Mcp-Session-Id").value_or("");
  ASSERT_FALSE(sid.empty());
  // The connection that made it is closed; the session (and so acme) lives on.
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_connections_open", 1));  // the metrics request itself
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 2));
  auto del = Roundtrip(s.port(), BuildRequest("DELETE", "/mcp", {{"Mcp-Session-Id", sid}, Bearer(acme)}));
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200);
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 1));
}

}  // namespace
}  // namespace itest

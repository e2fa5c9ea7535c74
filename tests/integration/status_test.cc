// The live status page (docs/operations.md "Status page"): GET /status (a self-contained HTML page with a
// strict Content-Security-Policy) and GET /status.json (the numbers of /metrics, as JSON),
// their headers, HEAD, the access rule of /metrics, and the per-tenant rows bounded by
// --metrics-tenants. The page itself runs in Chromium in tests/interop/status_page.
#include <openssl/evp.h>
#include <openssl/sha.h>

#include <cstdio>
#include <fstream>
#include <map>

#include "harness.h"
#include "nats_server.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

constexpr std::string_view kSecret = "an-hs256-secret-of-more-than-32-bytes!!";
constexpr std::string_view kAcmeKey = "pub-acme-0123456789abcdef";
constexpr std::string_view kAdminKey = "pub-admin-0123456789abcdef";

Header Bearer(std::string_view token) { return {"Authorization", "Bearer " + std::string(token)}; }

std::optional<HttpResponse> Get(int port, std::string_view path, std::vector<Header> headers = {}) {
  return Roundtrip(port, BuildRequest("GET", path, headers));
}

std::optional<Json> StatusJson(int port, std::vector<Header> headers = {}) {
  auto r = Get(port, "/status.json", std::move(headers));
  if (!r || r->status != 200) return std::nullopt;
  Json j(r->body);
  if (!j.ok()) return std::nullopt;
  return j;
}

int64_t Field(const Json& j, std::initializer_list<std::string_view> path) { return j.GetInt(path).value_or(-1); }

// Polls /status.json (bounded) until pred holds; the last document seen, or nullopt.
::testing::AssertionResult PollStatus(int port, const std::function<bool(const Json&)>& pred, std::string_view what,
                                      Json* last_out = nullptr) {
  Deadline end = After(Ms(10000));
  std::string last = "(no answer)";
  for (;;) {
    if (auto j = StatusJson(port)) {
      last = j->text();
      if (pred(*j)) {
        if (last_out) *last_out = *j;
        return ::testing::AssertionSuccess();
      }
    }
    if (Clock::now() > end)
      return ::testing::AssertionFailure() << "timed out waiting for " << what << "; last: " << last;
    std::this_thread::sleep_for(Ms(20));
  }
}

// The CSP source 'sha256-<base64>' of the text between `open` and `close` in `page`.
std::string CspHash(std::string_view page, std::string_view open, std::string_view close) {
  auto b = page.find(open);
  auto e = page.find(close, b);
  if (b == std::string_view::npos || e == std::string_view::npos) return "(not in the page)";
  std::string_view text = page.substr(b + open.size(), e - b - open.size());
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char b64[64];
  int n = EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<char*>(b64), static_cast<size_t>(n)) + "'";
}

TEST(Status, PageIsSelfContainedHtmlWithStrictCsp) {
  ServerProcess srv({"--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = Get(srv.port(), "/status");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Get("content-type").value_or(""), "text/html; charset=utf-8");
  EXPECT_EQ(r->Get("cache-control").value_or(""), "no-cache");
  EXPECT_EQ(r->Get("x-content-type-options").value_or(""), "nosniff");
  EXPECT_EQ(r->body.rfind("<!doctype html>", 0), 0u) << r->body.substr(0, 100);
  std::string csp = r->Get("content-security-policy").value_or("");
  EXPECT_EQ(csp.rfind("default-src 'none';", 0), 0u) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  // Exactly the page's own inline script and style may run: by their hashes, no 'unsafe-inline'.
  // The server hashes the text after the first bare opening tag: there must be one of each.
  auto count = [&](std::string_view tag) {
    int n = 0;
    for (auto at = r->body.find(tag); at != std::string::npos; at = r->body.find(tag, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<script"), 1);
  EXPECT_EQ(count("<style"), 1);
  EXPECT_NE(csp.find("script-src " + CspHash(r->body, "<script>", "</script>") + ";"), std::string::npos) << csp;
  EXPECT_NE(csp.find("style-src " + CspHash(r->body, "<style>", "</style>") + ";"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe"), std::string::npos) << csp;
  // No external assets: nothing is loaded by URL but /status.json (and the empty data: icon).
  EXPECT_EQ(r->body.find("src="), std::string::npos);
  EXPECT_EQ(r->body.find("https://"), std::string::npos);
  EXPECT_NE(r->body.find("fetch(\"/status.json\""), std::string::npos);
}

TEST(Status, JsonHasTheFieldsAndTheyMove) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto r = Get(srv.port(), "/status.json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(r->ContentTypeIs("application/json"));
  EXPECT_EQ(r->Get("cache-control").value_or(""), "no-store");
  Json before(r->body);
  ASSERT_TRUE(before.ok()) << before.error() << ": " << r->body;
  EXPECT_EQ(before.GetString({"server"}).value_or(""), "mcpfan");
  EXPECT_EQ(Field(before, {"workers"}), 2);
  for (auto g :
       {"connections", "streams", "subscriptions", "sessions", "sessions_idle", "sessions_parked", "tenants"}) {
    EXPECT_GE(Field(before, {"gauges", g}), 0) << g;
  }
  for (auto c : {"published", "deliveries", "coalesced", "limit_hits", "slow_consumer_closes", "http_requests",
                 "auth_failures"}) {
    EXPECT_GE(Field(before, {"counters", c}), 0) << c;
  }
  EXPECT_EQ(Field(before, {"limit_hits", "uris_per_listen"}), 0);
  EXPECT_TRUE(JsonMatches(before.Get({"tenants"}),
                          R"([{"tenant":"default","connections":0,"streams":0,"subscriptions":0,"limit_hits":0}])"));
  EXPECT_TRUE(JsonMatches(before.Get({"tenants_other"}), "null"));
  EXPECT_TRUE(JsonMatches(before.Get({"backplane"}), "null"));
  EXPECT_TRUE(JsonMatches(before.Get({"upstream"}), "null"));
  EXPECT_EQ(Field(before, {"gauges", "streams"}), 0);
  EXPECT_GT(Field(before, {"unix_ms"}), 1'600'000'000'000);

  SseStream listen;
  ASSERT_TRUE(OpenListen(listen, srv.port(), "\"s\"", R"({"resourceSubscriptions":["file:///st/a"]})"));
  ASSERT_TRUE(PollStatus(srv.port(), [](const Json& j) {
    return j.GetInt({"gauges", "streams"}) == 1 && j.GetInt({"gauges", "subscriptions"}) == 1;
  }, "one stream and one subscription"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///st/a")));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(listen.NextMessage());
  Json after;
  ASSERT_TRUE(PollStatus(srv.port(), [&](const Json& j) {
    return Field(j, {"counters", "published"}) == Field(before, {"counters", "published"}) + 3 &&
           Field(j, {"counters", "deliveries"}) == Field(before, {"counters", "deliveries"}) + 3;
  }, "3 publishes and 3 deliveries", &after));
  EXPECT_TRUE(JsonMatches(after.Get({"tenants"}),
                          R"([{"tenant":"default","connections":1,"streams":1,"subscriptions":1,"limit_hits":0}])"));
  EXPECT_GE(Field(after, {"mono_ms"}), Field(before, {"mono_ms"}));
  EXPECT_GT(Field(after, {"counters", "http_requests"}), Field(before, {"counters", "http_requests"}));
}

TEST(Status, HeadAnswersTheHeadersOfGetWithoutABody) {
  ServerProcess srv({"--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (std::string_view path : {"/status", "/status.json"}) {
    SCOPED_TRACE(std::string(path));
    auto get = Get(srv.port(), path);
    ASSERT_TRUE(get);
    // HEAD then GET on one connection: had the HEAD answer carried a body, the second head
    // would not parse.
    Conn c;
    ASSERT_TRUE(c.Connect(srv.port()));
    ASSERT_TRUE(c.Send(BuildRequest("HEAD", path, {}) + BuildRequest("GET", "/healthz", {})));
    HttpResponse head;
    std::string err;
    ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
    EXPECT_EQ(head.status, 200);
    EXPECT_EQ(head.Get("content-type"), get->Get("content-type"));
    EXPECT_EQ(head.Get("cache-control"), get->Get("cache-control"));
    if (path == "/status") {
      EXPECT_EQ(head.Get("content-security-policy"), get->Get("content-security-policy"));
      EXPECT_EQ(head.Get("content-length").value_or(""), std::to_string(get->body.size()));
    }
    HttpResponse next;
    ASSERT_TRUE(c.ReadHead(next, After(kIo), &err)) << err << "; bytes after the HEAD answer: " << c.in().substr(0, 80);
    EXPECT_EQ(next.status, 200);
  }
  auto post = Roundtrip(srv.port(), BuildRequest("POST", "/status.json", {{"Content-Type", "application/json"}}, "{}"));
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->Get("allow").value_or(""), "GET, HEAD");
}

// The snapshot behind /metrics and /status.json is one: at rest, the two say the same.
TEST(Status, JsonAgreesWithMetrics) {
  TempDir dir;
  std::ofstream(dir.path() + "/secret") << kSecret << "\n";
  ServerProcess srv({"--jwt-secret-file", dir.path() + "/secret", "--workers", "2", "--max-uris-per-listen", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  ASSERT_TRUE(ListenAsTenant(a, srv.port(), kSecret, "acme", "file:///x"));
  ASSERT_TRUE(ListenAsTenant(b, srv.port(), kSecret, "globex", "file:///y"));
  auto h = McpHeaders(kV2026, "subscriptions/listen");
  h.push_back(Bearer(Hs256Token(kSecret, "acme")));
  auto refused =
      McpCall(srv.port(), McpPost(RpcBody("\"r\"", "subscriptions/listen",
                                          R"("notifications":{"resourceSubscriptions":["file:///1","file:///2"]})"),
                                  h));
  EXPECT_NE(refused.http.status, 0);
  ASSERT_TRUE(PublishOk(
      srv.port(), R"({"tenant":"acme","method":"notifications/resources/updated","params":{"uri":"file:///x"}})"));
  ASSERT_TRUE(a.NextMessage());
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_deliveries_total", 1));

  auto j = StatusJson(srv.port());
  ASSERT_TRUE(j);
  const std::map<std::string, std::vector<std::string_view>> same = {
      {"mcpfan_listen_streams_open", {"gauges", "streams"}},
      {"mcpfan_subscriptions_active", {"gauges", "subscriptions"}},
      {"mcpfan_sessions_active", {"gauges", "sessions"}},
      {"mcpfan_sessions_parked", {"gauges", "sessions_parked"}},
      {"mcpfan_session_journaled_total", {"counters", "session_journaled"}},
      {"mcpfan_tenants", {"gauges", "tenants"}},
      {"mcpfan_published_total", {"counters", "published"}},
      {"mcpfan_deliveries_total", {"counters", "deliveries"}},
      {"mcpfan_coalesced_total", {"counters", "coalesced"}},
      {"mcpfan_workers", {"workers"}},
      {"mcpfan_limit_hits_total{limit=\"uris_per_listen\"}", {"limit_hits", "uris_per_listen"}},
  };
  for (const auto& [metric, path] : same) {
    auto m = ReadMetric(srv.port(), metric);
    ASSERT_TRUE(m) << metric;
    std::optional<int64_t> v = path.size() == 1 ? j->GetInt({path[0]}) : j->GetInt({path[0], path[1]});
    EXPECT_EQ(v.value_or(-1), static_cast<int64_t>(*m)) << metric << " vs " << j->text();
  }
  EXPECT_EQ(Field(*j, {"limit_hits", "uris_per_listen"}), 1);
  EXPECT_EQ(Field(*j, {"counters", "limit_hits"}), 1);
  // The tenant rows, number for number.
  auto rows = j->Get({"tenants"});
  ASSERT_TRUE(rows && rows->is_array());
  int seen = 0;
  simdjson::dom::array array = rows->get_array().value();
  for (simdjson::dom::element row : array) {
    std::string tenant(row["tenant"].get_string().value());
    for (std::string_view col : {"connections", "streams", "subscriptions", "limit_hits"}) {
      std::string family = col == "limit_hits" ? "mcpfan_tenant_limit_hits_total" : "mcpfan_tenant_" + std::string(col);
      auto m = ReadMetric(srv.port(), family + "{tenant=\"" + tenant + "\"}");
      ASSERT_TRUE(m) << family << " " << tenant;
      EXPECT_EQ(row[col].get_int64().value(), static_cast<int64_t>(*m)) << tenant << " " << col;
    }
    ++seen;
  }
  EXPECT_EQ(seen, 3);  // default, acme, globex
}

// More tenants than --metrics-tenants: the first are named, the rest summed as "_other", as
// in /metrics.
TEST(Status, TenantRowsAreBoundedLikeMetrics) {
  TempDir dir;
  std::ofstream(dir.path() + "/secret") << kSecret << "\n";
  ServerProcess srv({"--jwt-secret-file", dir.path() + "/secret", "--workers", "2", "--metrics-tenants", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<std::unique_ptr<SseStream>> streams;
  for (std::string_view tenant : {"t1", "t2", "t3", "t4"}) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(ListenAsTenant(*streams.back(), srv.port(), kSecret, tenant, "file:///t"));
  }
  Json j;
  ASSERT_TRUE(PollStatus(
      srv.port(),
      [](const Json& d) {
        return d.GetInt({"gauges", "tenants"}) == 5;
      },
      "5 tenants", &j));
  // Slots: default, t1 named; t2, t3, t4 summed.
  EXPECT_TRUE(JsonMatches(j.Get({"tenants"}),
                          R"([{"tenant":"default","connections":0,"streams":0,"subscriptions":0,"limit_hits":0},)"
                          R"({"tenant":"t1","connections":1,"streams":1,"subscriptions":1,"limit_hits":0}])"));
  EXPECT_TRUE(JsonMatches(j.Get({"tenants_other"}),
                          R"({"tenant":"_other","connections":3,"streams":3,"subscriptions":3,"limit_hits":0})"));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_tenant_streams{tenant=\"_other\"}", 3));
  EXPECT_FALSE(ReadMetric(srv.port(), "mcpfan_tenant_streams{tenant=\"t2\"}").has_value());
  EXPECT_EQ(j.text().find("\"t2\""), std::string::npos) << j.text();
}

// With --publish-listen, /status and /status.json are operator paths: served on the operator
// listener (the page's relative fetch stays on it), 404 naming it on the public one.
TEST(Status, OnTheOperatorListenerWithPublishListen) {
  ServerProcess srv({"--publish-listen", "127.0.0.1:0", "--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  int ops = PublishPort(srv);
  ASSERT_GT(ops, 0) << srv.Stderr();
  for (std::string_view path : {"/status", "/status.json"}) {
    auto pub = Get(srv.port(), path);
    ASSERT_TRUE(pub);
    EXPECT_EQ(pub->status, 404) << path;
    EXPECT_NE(pub->body.find("operator listener"), std::string::npos) << pub->body;
    auto op = Get(ops, path);
    ASSERT_TRUE(op);
    EXPECT_EQ(op->status, 200) << path;
  }
  auto mcp = Get(ops, "/mcp");
  ASSERT_TRUE(mcp);
  EXPECT_NE(mcp->body.find("/status"), std::string::npos)
      << "the operator listener's 404 lists what it serves: " << mcp->body;
}

// Built with the NATS backplane only (MCPFAN_WITH_NATS): without it --nats is refused.
#if MCPFAN_WITH_NATS
// With --nats, the backplane's state: connected, its subjects, then disconnected when NATS goes.
TEST(Status, BackplaneStateWhenThereIsOne) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  ServerProcess srv(NodeArgs(nats, "S"));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Json j;
  ASSERT_TRUE(PollStatus(srv.port(), [](const Json& d) {
    auto c = d.Get({"backplane", "connected"});
    return c && c->is_bool() && c->get_bool().value();
  }, "backplane connected", &j));
  for (auto f : {"subjects", "queued", "sent", "received", "refused", "dropped", "compacted_tenants"}) {
    EXPECT_GE(Field(j, {"backplane", f}), 0) << f << ": " << j.text();
  }
  EXPECT_TRUE(j.Get({"backplane", "lag_seconds"}).has_value());
  int64_t subjects = Field(j, {"backplane", "subjects"});
  SseStream listen;
  ASSERT_TRUE(OpenListen(listen, srv.port(), "\"b\"", R"({"resourceSubscriptions":["file:///bp/a"]})"));
  EXPECT_TRUE(PollStatus(srv.port(), [&](const Json& d) { return Field(d, {"backplane", "subjects"}) > subjects; },
                         "a subject for the listen"));
  nats.Kill9();
  EXPECT_TRUE(PollStatus(srv.port(), [](const Json& d) {
    auto c = d.Get({"backplane", "connected"});
    return c && c->is_bool() && !c->get_bool().value();
  }, "backplane disconnected"));
}
#endif

// With auth configured, /status and /status.json follow /metrics: loopback peers and publisher
// keys for "*" only.
TEST(Status, AccessRuleIsThatOfMetrics) {
  TempDir dir;
  std::ofstream(dir.path() + "/secret") << kSecret << "\n";
  std::ofstream(dir.path() + "/keys") << kAcmeKey << " acme\n" << kAdminKey << " *\n";
  std::vector<std::string> args{
      "--jwt-secret-file", dir.path() + "/secret", "--publish-keys-file", dir.path() + "/keys", "--workers", "1"};
  {
    ServerProcess srv(args);
    ASSERT_TRUE(srv.ok()) << srv.error();
    // A loopback peer needs no key.
    for (std::string_view path : {"/status", "/status.json", "/metrics"}) {
      auto r = Get(srv.port(), path);
      ASSERT_TRUE(r);
      EXPECT_EQ(r->status, 200) << path;
    }
  }
  // A peer that is not loopback: mcpfan in a network namespace of its own on 192.0.2.1 (see
  // non_loopback_peer.sh), asked from that address without a key, with a key bound to one
  // tenant, and with a key for "*".
  std::string cmd = "bash " MCPFAN_SOURCE_DIR "/tests/integration/non_loopback_peer.sh " MCPFAN_BIN;
  for (const auto& a : args) cmd += " '" + a + "'";
  std::string requests;
  for (std::string_view path : {"/status", "/status.json", "/metrics"}) {
    requests += std::string(path) + "\n";
    requests += std::string(path) + " " + std::string(kAcmeKey) + "\n";
    requests += std::string(path) + " " + std::string(kAdminKey) + "\n";
  }
  std::ofstream(dir.path() + "/requests") << requests;
  cmd += " < " + dir.path() + "/requests";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 77) GTEST_SKIP() << "no network namespace here (needs root): " << cmd;
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n" << out;
  EXPECT_EQ(out, "403\n403\n200\n403\n403\n200\n403\n403\n200\n")
      << "(no key, acme key, \"*\" key) x (/status, /status.json, /metrics)";
}

}  // namespace
}  // namespace itest

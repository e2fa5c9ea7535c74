// Authentication and tenants (docs/security.md): client tokens on every transport, publisher keys,
// the publish rate, per-tenant ceilings, and isolation between tenants on one URI.
#include <fstream>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

constexpr std::string_view kSecret = "an-hs256-secret-of-more-than-32-bytes!!";
constexpr std::string_view kAcmeKey = "pub-acme-0123456789abcdef";
constexpr std::string_view kGlobexKey = "pub-globex-0123456789abcdef";
constexpr std::string_view kAdminKey = "pub-admin-0123456789abcdef";

std::string Hits(std::string_view limit) { return "mcpfan_limit_hits_total{limit=\"" + std::string(limit) + "\"}"; }
std::string AuthFail(std::string_view scope, std::string_view reason) {
  return "mcpfan_auth_failures_total{scope=\"" + std::string(scope) + "\",reason=\"" + std::string(reason) + "\"}";
}

// A server with client tokens (HS256) and publisher keys, plus `extra` flags.
struct AuthServer {
  explicit AuthServer(std::vector<std::string> extra = {}) {
    std::ofstream(dir.path() + "/secret") << kSecret << "\n";
    std::ofstream(dir.path() + "/keys") << "# publisher keys\n"
                                        << kAcmeKey << " acme\n"
                                        << kGlobexKey << " globex\n"
                                        << kAdminKey << " *\n";
    std::vector<std::string> args{
        "--jwt-secret-file", dir.path() + "/secret", "--publish-keys-file", dir.path() + "/keys", "--workers", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    srv.emplace(args);
  }
  int port() const { return srv->port(); }
  TempDir dir;
  std::optional<ServerProcess> srv;
};

Header Bearer(std::string_view token) { return {"Authorization", "Bearer " + std::string(token)}; }

std::string ListenBody(std::string_view id, std::string_view notifications) {
  return RpcBody(id, "subscriptions/listen", R"("notifications":)" + std::string(notifications), "2026-07-28");
}

std::string ListenRequest(std::string_view id, std::string_view notifications, std::vector<Header> extra) {
  auto h = McpHeaders("2026-07-28", "subscriptions/listen");
  h.insert(h.end(), extra.begin(), extra.end());
  return McpPost(ListenBody(id, notifications), h);
}

::testing::AssertionResult OpenAuthedListen(SseStream& s, int port, std::string_view token, std::string_view id,
                                            std::string_view notifications) {
  std::string err;
  if (!s.Open(port, ListenRequest(id, notifications, {Bearer(token)}), kIo, &err)) {
    return ::testing::AssertionFailure() << "listen: " << err;
  }
  if (s.head().status != 200) return ::testing::AssertionFailure() << "listen status " << s.head().status;
  auto ack = s.NextMessage(kIo, &err);
  if (!ack) return ::testing::AssertionFailure() << "no ack: " << err;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult PublishAs(int port, std::string_view key, std::string_view body, int want_status = 202) {
  std::vector<Header> h{{"Content-Type", "application/json"}};
  if (!key.empty()) h.push_back(Bearer(key));
  auto r = Roundtrip(port, BuildRequest("POST", "/v1/publish", h, body));
  if (!r) return ::testing::AssertionFailure() << "publish: no response";
  if (r->status != want_status)
    return ::testing::AssertionFailure() << "publish status " << r->status << ": " << r->body;
  return ::testing::AssertionSuccess();
}

std::string UpdatedSeq(std::string_view uri, int seq, std::string_view tenant = {}) {
  std::string b = "{";
  if (!tenant.empty()) b += R"("tenant":")" + std::string(tenant) + "\",";
  return b + R"("method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) +
         R"(","_meta":{"test/seq":)" + std::to_string(seq) + "}}}";
}

TEST(Auth, MissingOrInvalidTokenGets401WithChallenge) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  auto none = McpCall(s.port(), ListenRequest("1", R"({"toolsListChanged":true})", {}));
  EXPECT_EQ(none.http.status, 401);
  auto challenge = none.http.Get("WWW-Authenticate").value_or("");
  EXPECT_EQ(challenge.rfind("Bearer realm=\"mcpfan\"", 0), 0u) << challenge;
  EXPECT_EQ(challenge.find("error="), std::string::npos)
      << "no error code without credentials (RFC 6750): " << challenge;

  auto garbage = McpCall(s.port(), ListenRequest("1", R"({"toolsListChanged":true})", {Bearer("not.a.jwt")}));
  EXPECT_EQ(garbage.http.status, 401);
  EXPECT_NE(garbage.http.Get("WWW-Authenticate").value_or("").find("error=\"invalid_token\""), std::string::npos);
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "missing"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "malformed"), 1));
}

TEST(Auth, ExpiredTamperedAndWrongAlgorithmTokensAreRefused) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  auto status_of = [&](const std::string& token) {
    return McpCall(s.port(), ListenRequest("1", R"({"toolsListChanged":true})", {Bearer(token)}));
  };
  auto expired = status_of(Hs256Token(kSecret, "acme", -60));
  EXPECT_EQ(expired.http.status, 401);
  EXPECT_NE(expired.http.body.find("expired"), std::string::npos) << expired.http.body;

  std::string good = Hs256Token(kSecret, "acme");
  // Tampered: another valid payload (tenant globex) under acme's signature.
  std::string globex = Hs256Token(kSecret, "globex");
  std::string tampered = globex.substr(0, globex.rfind('.')) + good.substr(good.rfind('.'));
  EXPECT_EQ(status_of(tampered).http.status, 401);

  std::string other_secret = Hs256Token("another-secret-that-is-also-long-enough!", "acme");
  EXPECT_EQ(status_of(other_secret).http.status, 401);

  std::string none_alg = Base64Url(R"({"alg":"none","typ":"JWT"})") + "." + Base64Url(R"({"tenant":"acme"})") + ".";
  EXPECT_EQ(status_of(none_alg).http.status, 401);
  std::string hs384 = SignHs256(R"({"alg":"HS384","typ":"JWT"})", R"({"tenant":"acme"})", kSecret);
  EXPECT_EQ(status_of(hs384).http.status, 401);

  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "expired"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "bad_signature"), 2));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "wrong_algorithm"), 2));
  // Each refusal is logged too (docs "Logs"), the token never.
  EXPECT_TRUE(s.srv->WaitForStderr("client authentication failed: ", kIo)) << s.srv->Stderr();
  EXPECT_TRUE(s.srv->WaitForStderr("reason=expired", kIo)) << s.srv->Stderr();
  EXPECT_EQ(s.srv->Stderr().find(good.substr(good.rfind('.') + 1)), std::string::npos) << "a signature in the log";
  // The good token still works.
  SseStream ok;
  EXPECT_TRUE(OpenAuthedListen(ok, s.port(), good, "1", R"({"toolsListChanged":true})"));
}

TEST(Auth, TenantsOnOneUriNeverSeeEachOthersEvents) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  SseStream acme, globex;
  ASSERT_TRUE(OpenAuthedListen(acme, s.port(), Hs256Token(kSecret, "acme"), R"("a")",
                               R"({"resourceSubscriptions":["file:///shared"]})"));
  ASSERT_TRUE(OpenAuthedListen(globex, s.port(), Hs256Token(kSecret, "globex"), R"("g")",
                               R"({"resourceSubscriptions":["file:///shared"]})"));
  ASSERT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///shared", 1)));
  ASSERT_TRUE(PublishAs(s.port(), kGlobexKey, UpdatedSeq("file:///shared", 2)));
  ASSERT_TRUE(PublishAs(s.port(), kAdminKey, UpdatedSeq("file:///shared", 3, "acme")));
  ASSERT_TRUE(PublishAs(s.port(), kAdminKey, UpdatedSeq("file:///shared", 4, "globex")));
  auto seqs = [](SseStream& st) {
    std::vector<int64_t> out;
    for (int i = 0; i < 2; ++i) {
      auto m = st.NextMessage(kIo);
      if (!m) break;
      out.push_back(m->GetInt({"params", "_meta", "test/seq"}).value_or(-1));
    }
    return out;
  };
  EXPECT_EQ(seqs(acme), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(seqs(globex), (std::vector<int64_t>{2, 4}));
  EXPECT_FALSE(acme.NextMessage(Ms(300))) << "acme saw a further event";
  EXPECT_FALSE(globex.NextMessage(Ms(300))) << "globex saw a further event";
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenant_streams{tenant=\"acme\"}", 1));
}

TEST(Auth, UrisClaimRefusesOtherUris) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::string token = Hs256Token(kSecret, "acme", 3600, R"(,"uris":["file:///acme/"])");
  auto r = McpCall(s.port(), ListenRequest("7", R"({"resourceSubscriptions":["file:///acme/a","file:///globex/b"]})",
                                           {Bearer(token)}));
  EXPECT_TRUE(IsRpcError(r, 403, -32602, "7", {"file:///globex/b"}));
  SseStream ok;
  EXPECT_TRUE(OpenAuthedListen(ok, s.port(), token, "8", R"({"resourceSubscriptions":["file:///acme/a"]})"));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "forbidden_uri"), 1));
}

TEST(Auth, PublishersNeedAKeyBoundToTheirTenant) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  EXPECT_TRUE(PublishAs(s.port(), "", UpdatedSeq("file:///x", 1), 401));
  EXPECT_TRUE(PublishAs(s.port(), "pub-nobody-0123456789abcdef", UpdatedSeq("file:///x", 1), 401));
  EXPECT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///x", 1, "globex"), 403));
  EXPECT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///x", 1, "acme"), 202));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("publisher", "missing"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("publisher", "unknown_key"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("publisher", "forbidden_tenant"), 1));
}

TEST(Auth, PublishRateLimitAnswers429PerKey) {
  AuthServer s({"--publish-rate", "0.5", "--publish-burst", "3"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  // A client of acme: the tenant exists (publishing alone creates no tenant), so the hit is
  // also counted against it.
  SseStream listener;
  ASSERT_TRUE(OpenAuthedListen(listener, s.port(), Hs256Token(kSecret, "acme"), "1", R"({"toolsListChanged":true})"));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///r", i))) << i;
  auto r =
      Roundtrip(s.port(), BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}, Bearer(kAcmeKey)},
                                       UpdatedSeq("file:///r", 4)));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 429) << r->body;
  EXPECT_TRUE(r->Get("Retry-After").has_value());
  // Another key has its own bucket.
  EXPECT_TRUE(PublishAs(s.port(), kGlobexKey, UpdatedSeq("file:///r", 5)));
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("publish_rate"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenant_limit_hits_total{tenant=\"acme\"}", 1));
}

TEST(Auth, SessionsBelongToTheirTenant) {
  AuthServer s;
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::string acme = Hs256Token(kSecret, "acme"), globex = Hs256Token(kSecret, "globex");
  auto post = [&](std::string_view token, std::string_view sid, std::string_view body) {
    std::vector<Header> h{
        {"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}, Bearer(token)};
    if (!sid.empty()) {
      h.push_back({"Mcp-Session-Id", std::string(sid)});
      h.push_back({"MCP-Protocol-Version", "2025-11-25"});
    }
    return McpCall(s.port(), McpPost(body, h));
  };
  auto init = post(
      acme, {},
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
      R"("clientInfo":{"name":"t","version":"1"}}})");
  ASSERT_EQ(init.http.status, 200);
  std::string sid = init.http.Get("Mcp-Session-Id").value_or("");
  ASSERT_FALSE(sid.empty());
  auto sub = R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///s"}})";
  EXPECT_EQ(post(globex, sid, sub).http.status, 404) << "another tenant's token must not reach the session";
  EXPECT_EQ(post(acme, sid, sub).http.status, 200);
  SseStream stream;
  std::string err;
  ASSERT_TRUE(stream.Open(
      s.port(), BuildRequest("GET", "/mcp", {{"Accept", "text/event-stream"}, {"Mcp-Session-Id", sid}, Bearer(acme)}),
      kIo, &err))
      << err;
  ASSERT_EQ(stream.head().status, 200);
  stream.AllowIds();  // a session stream: event ids and a priming event (resumable)
  ASSERT_TRUE(PublishAs(s.port(), kGlobexKey, UpdatedSeq("file:///s", 1)));
  ASSERT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///s", 2)));
  auto m = stream.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->GetInt({"params", "_meta", "test/seq"}), 2) << m->text();
  EXPECT_TRUE(PollMetricEq(s.port(), AuthFail("client", "wrong_tenant"), 1));
}

TEST(Auth, PerTenantStreamCeilingRefusesWith429OthersUnaffected) {
  AuthServer s({"--max-streams-per-tenant", "2"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::string acme = Hs256Token(kSecret, "acme"), globex = Hs256Token(kSecret, "globex");
  auto a1 = std::make_unique<SseStream>();
  SseStream a2, g1;
  ASSERT_TRUE(OpenAuthedListen(*a1, s.port(), acme, "1", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenAuthedListen(a2, s.port(), acme, "2", R"({"toolsListChanged":true})"));
  auto third = McpCall(s.port(), ListenRequest("3", R"({"toolsListChanged":true})", {Bearer(acme)}));
  EXPECT_TRUE(IsRpcError(third, 429, -32032, "3", {"acme", "2 streams"}));
  EXPECT_TRUE(OpenAuthedListen(g1, s.port(), globex, "1", R"({"toolsListChanged":true})"));
  a1.reset();  // closing one gives its slot back
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenant_streams{tenant=\"acme\"}", 1));
  SseStream a3;
  EXPECT_TRUE(OpenAuthedListen(a3, s.port(), acme, "3", R"({"toolsListChanged":true})"));
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("streams_per_tenant"), 1));
}

TEST(Auth, PerTenantConnectionAndSubscriptionCeilings) {
  AuthServer s({"--max-connections-per-tenant", "1", "--max-subscriptions-per-tenant", "2"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  std::string acme = Hs256Token(kSecret, "acme");
  auto too_many =
      McpCall(s.port(), ListenRequest("1", R"({"resourceSubscriptions":["a:1","a:2","a:3"]})", {Bearer(acme)}));
  EXPECT_TRUE(IsRpcError(too_many, 429, -32032, "1", {"subscriptions"}));
  // That connection's slot is given back when the server sees it close, and with it acme's
  // last reference: the tenant entry is reclaimed (only "default" is left).
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_tenants", 1));
  SseStream held;
  ASSERT_TRUE(OpenAuthedListen(held, s.port(), acme, "2", R"({"resourceSubscriptions":["a:1"]})"));
  auto second_conn = McpCall(s.port(), ListenRequest("3", R"({"toolsListChanged":true})", {Bearer(acme)}));
  EXPECT_TRUE(IsRpcError(second_conn, 429, -32032, "3", {"connections"}));
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("connections_per_tenant"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("subscriptions_per_tenant"), 1));
}

// --unix clients authenticate with the token in params._meta of a request.
std::string UnixListen(std::string_view id, std::string_view uri, std::string_view token) {
  std::string env = Envelope("2026-07-28");
  if (!token.empty()) env.insert(env.size() - 1, R"(,"mcpfan/authorization":"Bearer )" + std::string(token) + "\"");
  return R"({"jsonrpc":"2.0","id":)" + std::string(id) + R"(,"method":"subscriptions/listen","params":{"_meta":)" +
         env + R"(,"notifications":{"resourceSubscriptions":[")" + std::string(uri) + R"("]}}})";
}

TEST(Auth, UnixClientsAuthenticateInMetaAndAreIsolated) {
  TempDir dir;
  std::string sock = dir.path() + "/s.sock";
  AuthServer s({"--unix", sock});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  LineChannel anon, acme, globex;
  for (LineChannel* c : {&anon, &acme, &globex}) ASSERT_TRUE(ConnectUnix(*c, sock, kIo));
  ASSERT_TRUE(anon.SendLine(UnixListen("1", "file:///u", "")));
  auto refused = anon.NextJson();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->GetInt({"error", "code"}), -32030) << refused->text();
  ASSERT_TRUE(acme.SendLine(UnixListen("1", "file:///u", Hs256Token(kSecret, "acme"))));
  ASSERT_TRUE(globex.SendLine(UnixListen("1", "file:///u", Hs256Token(kSecret, "globex"))));
  ASSERT_TRUE(acme.NextJson());   // acks
  ASSERT_TRUE(globex.NextJson());
  ASSERT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///u", 1)));
  ASSERT_TRUE(PublishAs(s.port(), kGlobexKey, UpdatedSeq("file:///u", 2)));
  auto a = acme.NextJson();
  auto g = globex.NextJson();
  ASSERT_TRUE(a && g);
  EXPECT_EQ(a->GetInt({"params", "_meta", "test/seq"}), 1) << a->text();
  EXPECT_EQ(g->GetInt({"params", "_meta", "test/seq"}), 2) << g->text();
  EXPECT_TRUE(NothingMore(acme));
  EXPECT_TRUE(NothingMore(globex));
  EXPECT_TRUE(NothingMore(anon));
}

TEST(Auth, UnixTenantFlagBindsSocketClientsWithoutToken) {
  TempDir dir;
  std::string sock = dir.path() + "/s.sock";
  AuthServer s({"--unix", sock, "--unix-tenant", "acme"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  LineChannel c;
  ASSERT_TRUE(ConnectUnix(c, sock, kIo));
  ASSERT_TRUE(c.SendLine(UnixListen("1", "file:///t", "")));
  ASSERT_TRUE(c.NextJson());
  ASSERT_TRUE(PublishAs(s.port(), kGlobexKey, UpdatedSeq("file:///t", 1)));
  ASSERT_TRUE(PublishAs(s.port(), kAcmeKey, UpdatedSeq("file:///t", 2)));
  auto m = c.NextJson();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->GetInt({"params", "_meta", "test/seq"}), 2) << m->text();
}

TEST(Auth, OpenListenerNeedsAuthOrInsecure) {
  ChildProcess p;
  // No port is bound: the flag check comes first.
  ASSERT_TRUE(p.Spawn({MCPFAN_BIN, "--listen", "0.0.0.0:0"})) << p.error();
  ASSERT_TRUE(p.WaitExit(Ms(5000)));
  EXPECT_EQ(p.DescribeStatus(), "exit 2");
  EXPECT_NE(p.Stderr().find("without authentication"), std::string::npos) << p.Stderr();
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// Runs a shell command, returns its stdout (trailing newline stripped) or nullopt on failure.
std::optional<std::string> RunCapture(const std::string& cmd) {
  int status = 0;
  std::string out = Sh(cmd, &status);
  if (status != 0) return std::nullopt;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// RS256 and ES256 end to end: keys from the openssl CLI, tokens from mcpfan-token, the
// server configured with the public key only.
TEST(Auth, PublicKeyTokensFromMcpfanToken) {
  for (std::string_view alg : {"RS256", "ES256"}) {
    SCOPED_TRACE(std::string(alg));
    TempDir dir;
    std::string priv = dir.path() + "/key.pem", pub = dir.path() + "/pub.pem";
    std::string gen = alg == "RS256" ? "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048"
                                     : "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256";
    ASSERT_TRUE(
        RunCapture(gen + " -out " + priv + " 2>/dev/null && openssl pkey -in " + priv + " -pubout -out " + pub));
    auto token = RunCapture(std::string(MCPFAN_TOKEN_BIN) + " --alg " + std::string(alg) + " --key-file " + priv +
                            " --tenant acme --uris file:///acme/");
    ASSERT_TRUE(token && !token->empty());
    ServerProcess srv({"--jwt-public-key-file", pub, "--workers", "1"});
    ASSERT_TRUE(srv.ok()) << srv.error();
    SseStream ok;
    EXPECT_TRUE(OpenAuthedListen(ok, srv.port(), *token, "1", R"({"resourceSubscriptions":["file:///acme/x"]})"));
    auto forbidden =
        McpCall(srv.port(), ListenRequest("2", R"({"resourceSubscriptions":["file:///b"]})", {Bearer(*token)}));
    EXPECT_TRUE(IsRpcError(forbidden, 403, -32602, "2", {"file:///b"}));
    // An HS256 token is refused when only a public key is configured.
    auto hs =
        McpCall(srv.port(), ListenRequest("3", R"({"toolsListChanged":true})", {Bearer(Hs256Token(kSecret, "acme"))}));
    EXPECT_EQ(hs.http.status, 401);
  }
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

TEST(Auth, TenantTableFullGets503AndMetricsLabelsAreCapped) {
  // Tenant ids: "default" 0, then in order of first use. Two fit; the third is refused.
  AuthServer s({"--max-tenants", "3", "--metrics-tenants", "1"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  SseStream acme, globex;
  ASSERT_TRUE(OpenAuthedListen(acme, s.port(), Hs256Token(kSecret, "acme"), "1", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(OpenAuthedListen(globex, s.port(), Hs256Token(kSecret, "globex"), "1", R"({"toolsListChanged":true})"));
  auto third =
      McpCall(s.port(), ListenRequest("1", R"({"toolsListChanged":true})", {Bearer(Hs256Token(kSecret, "initech"))}));
  EXPECT_TRUE(IsRpcError(third, 503, -32032, "1", {"tenants"}));
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("tenants"), 1));
  // Only the first tenant ("default") is labelled by name; acme and globex sum as _other.
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenant_streams{tenant=\"_other\"}", 2));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_tenant_streams{tenant=\"default\"}", 0));
  auto acme_line = ReadMetric(s.port(), "mcpfan_tenant_streams{tenant=\"acme\"}");
  EXPECT_FALSE(acme_line.has_value()) << "tenant label past --metrics-tenants";
}

TEST(Auth, OverLongStdioLineIsCounted) {
  TempDir dir;
  std::string sock = dir.path() + "/s.sock";
  ServerProcess srv({"--unix", sock, "--max-line-bytes", "1000", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  LineChannel c;
  ASSERT_TRUE(ConnectUnix(c, sock, kIo));
  ASSERT_TRUE(c.SendLine(std::string(2000, 'x')));
  auto err = c.NextJson();
  ASSERT_TRUE(err);
  EXPECT_EQ(err->GetInt({"error", "code"}), -32600) << err->text();
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("line_bytes"), 1));
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// The stdio transport refuses with the same message as HTTP: the tenant and its ceiling.
TEST(Auth, StdioStreamCeilingNamesTenantAndLimit) {
  TempDir dir;
  std::string sock = dir.path() + "/s.sock";
  AuthServer s({"--unix", sock, "--unix-tenant", "acme", "--max-streams-per-tenant", "1"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  LineChannel c;
  ASSERT_TRUE(ConnectUnix(c, sock, kIo));
  ASSERT_TRUE(c.SendLine(UnixListen("1", "file:///a", "")));
  auto ack = c.NextJson();
  ASSERT_TRUE(ack);
  EXPECT_FALSE(ack->Has({"error"})) << ack->text();
  ASSERT_TRUE(c.SendLine(UnixListen("2", "file:///b", "")));
  auto refused = c.NextJson();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->GetInt({"error", "code"}), -32032) << refused->text();
  std::string msg = refused->GetString({"error", "message"}).value_or("");
  EXPECT_NE(msg.find("\"acme\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 streams"), std::string::npos) << msg;
  EXPECT_TRUE(PollMetricEq(s.port(), Hits("streams_per_tenant"), 1));
}

}  // namespace
}  // namespace itest

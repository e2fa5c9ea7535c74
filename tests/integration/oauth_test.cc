// mcpfan as an OAuth 2.1 resource server (docs/security.md "OAuth") against a real, certified
// OpenID provider (oidc-provider, tests/interop/oauth/provider.mjs): discovery and the JWKS,
// tokens of the provider's clients listened with and refused (scope, tenant claim, audience,
// issuer, expiry), key rotation while a stream is open, a flood of unknown key ids, an
// authorization server that cannot be reached, and introspection of opaque tokens.
#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "fake_upstream.h"
#include "harness.h"
#include "oidc_provider.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

constexpr std::string_view kResource = "https://mcp.example.test/mcp";
constexpr std::string_view kPrm = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";
constexpr std::string_view kPubKey = "pub-acme-0123456789abcdef";
constexpr std::string_view kTools = R"({"toolsListChanged":true})";

std::string OAuthFail(std::string_view reason) {
  return "mcpfan_auth_failures_total{scope=\"client\",reason=\"" + std::string(reason) + "\"}";
}

std::string Secret(std::string_view client) {
  return std::string(client) + "-secret-0123456789";
}

std::string OAuthListenRequest(std::string_view id, std::string_view token) {
  auto h = McpHeaders("2026-07-28", "subscriptions/listen");
  if (!token.empty()) h.push_back({"Authorization", "Bearer " + std::string(token)});
  return McpPost(RpcBody(id, "subscriptions/listen", R"("notifications":)" + std::string(kTools), "2026-07-28"), h);
}

// The provider and an mcpfan that takes its tokens (tenant from org_id, listens need mcp:listen).
struct OAuthSetup {
  explicit OAuthSetup(std::vector<std::string> extra = {}, std::vector<std::string> opaque = {},
                      std::vector<std::string> resources = {std::string(kResource)}) {
    op = OidcProvider::start(resources, {}, 0, &error, opaque);
    if (!op) return;
    std::ofstream(dir.path() + "/keys") << kPubKey << " acme\n";
    std::vector<std::string> args{"--oauth-issuer",
                                  op->issuer(),
                                  "--oauth-resource",
                                  std::string(kResource),
                                  "--oauth-tenant-claim",
                                  "org_id",
                                  "--oauth-listen-scope",
                                  "mcp:listen",
                                  "--publish-keys-file",
                                  dir.path() + "/keys",
                                  "--workers",
                                  "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    srv.emplace(args);
  }
  // Skips the test when node is missing (as the interop tests do), fails on any other problem.
  bool Ready() {
    if (!op) return false;
    EXPECT_TRUE(srv->ok()) << srv->error();
    return srv->ok();
  }
  std::string Token(std::string_view client, std::string_view scope = "mcp:listen",
                    std::string_view resource = kResource) {
    std::string err;
    std::string t =
        op->client_token(std::string(client), Secret(client), std::string(resource), std::string(scope), &err);
    EXPECT_FALSE(t.empty()) << err;
    return t;
  }
  int port() const { return srv->port(); }

  TempDir dir;
  std::string error;
  std::optional<OidcProvider> op;
  std::optional<ServerProcess> srv;
};

#define OAUTH_SETUP_OR_SKIP(s)                                                                 \
  do {                                                                                         \
    if (!(s).op) {                                                                             \
      if ((s).error.find("not found in PATH") != std::string::npos) GTEST_SKIP() << (s).error; \
      FAIL() << (s).error;                                                                     \
    }                                                                                          \
    ASSERT_TRUE((s).Ready());                                                                  \
  } while (0)

::testing::AssertionResult RefusedWith(int port, std::string_view token, int status, std::string_view challenge_part) {
  auto r = Roundtrip(port, OAuthListenRequest("1", token));
  if (!r) return ::testing::AssertionFailure() << "no answer";
  if (r->status != status) return ::testing::AssertionFailure() << "status " << r->status << ": " << r->body;
  auto www = r->Get("WWW-Authenticate");
  if (!www) return ::testing::AssertionFailure() << "no WWW-Authenticate";
  if (www->find(challenge_part) == std::string::npos) {
    return ::testing::AssertionFailure() << "WWW-Authenticate lacks " << challenge_part << ": " << *www;
  }
  if (www->find("resource_metadata=\"" + std::string(kPrm) + "\"") == std::string::npos) {
    return ::testing::AssertionFailure() << "WWW-Authenticate lacks resource_metadata: " << *www;
  }
  return ::testing::AssertionSuccess();
}

TEST(OAuth, AProviderTokenListensInItsOrgTenantAndOtherOrgsHearNothing) {
  OAuthSetup s;
  OAUTH_SETUP_OR_SKIP(s);
  SseStream acme, beta, again;
  std::string acme_token = s.Token("svc-acme");
  ASSERT_TRUE(acme.Open(s.port(), OAuthListenRequest("1", acme_token)));
  ASSERT_EQ(acme.head().status, 200) << acme.head().body;
  ASSERT_TRUE(acme.NextMessage());  // the acknowledgement
  // The same token again: its verdict is remembered, its signature not checked a second time.
  ASSERT_TRUE(again.Open(s.port(), OAuthListenRequest("2", acme_token)));
  ASSERT_EQ(again.head().status, 200) << again.head().body;
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_oauth_token_cache_hits_total", 1));
  ASSERT_TRUE(beta.Open(s.port(), OAuthListenRequest("1", s.Token("svc-beta"))));
  ASSERT_EQ(beta.head().status, 200);
  ASSERT_TRUE(beta.NextMessage());
  std::vector<Header> pub{{"Content-Type", "application/json"}, {"Authorization", "Bearer " + std::string(kPubKey)}};
  auto r =
      Roundtrip(s.port(), BuildRequest("POST", "/v1/publish", pub, R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  auto note = acme.NextMessage();
  ASSERT_TRUE(note);
  EXPECT_TRUE(IsNotification(*note, "notifications/tools/list_changed", "1"));
  EXPECT_FALSE(beta.NextMessage(Ms(300))) << "tenant beta heard tenant acme's change";
}

TEST(OAuth, TheProtectedResourceMetadataNamesTheIssuerAndEveryRefusalPointsAtIt) {
  OAuthSetup s;
  OAUTH_SETUP_OR_SKIP(s);
  for (std::string path : {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"}) {
    auto r = Roundtrip(s.port(), BuildRequest("GET", path, {}, ""));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << path;
    Json doc(r->body);
    EXPECT_EQ(doc.GetString({"resource"}).value_or(""), kResource);
    EXPECT_TRUE(JsonMatches(doc.Get({"authorization_servers"}), "[\"" + s.op->issuer() + "\"]"));
    EXPECT_TRUE(JsonMatches(doc.Get({"scopes_supported"}), R"(["mcp:listen"])"));
  }
  auto other = Roundtrip(s.port(), BuildRequest("GET", "/.well-known/oauth-protected-resource/other", {}, ""));
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  // No token: a challenge without an error code (RFC 6750 §3), naming the metadata.
  auto r = Roundtrip(s.port(), OAuthListenRequest("1", ""));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->Get("WWW-Authenticate").value_or(""),
            "Bearer realm=\"mcpfan\", resource_metadata=\"" + std::string(kPrm) + "\"");
}

TEST(OAuth, EachBadTokenIsRefusedWithItsOwnStatusChallengeAndCounter) {
  // The provider issues tokens for a second resource too: the wrong audience for mcpfan.
  OAuthSetup s({}, {}, {std::string(kResource), "https://other.example.test/mcp"});
  OAUTH_SETUP_OR_SKIP(s);
  // A valid token without mcp:listen: 403 insufficient_scope, naming the scope.
  EXPECT_TRUE(RefusedWith(s.port(), s.Token("svc-nolisten", "mcp:tools"), 403,
                          "error=\"insufficient_scope\", scope=\"mcp:listen\""));
  // org_id "bad/org" is not a tenant name: refused, never rewritten into another tenant.
  EXPECT_TRUE(RefusedWith(s.port(), s.Token("svc-badorg"), 401, "error=\"invalid_token\""));
  // Another resource's token.
  EXPECT_TRUE(RefusedWith(s.port(), s.Token("svc-acme", "mcp:listen", "https://other.example.test/mcp"), 401,
                          "error=\"invalid_token\""));
  // Another issuer's token (a second provider, its own keys).
  std::string err;
  auto other = OidcProvider::start({std::string(kResource)}, {}, 0, &err);
  ASSERT_TRUE(other) << err;
  std::string foreign = other->client_token("svc-acme", Secret("svc-acme"), std::string(kResource), "mcp:listen", &err);
  ASSERT_FALSE(foreign.empty()) << err;
  EXPECT_TRUE(RefusedWith(s.port(), foreign, 401, "error=\"invalid_token\""));
  EXPECT_TRUE(PollMetricEq(s.port(), OAuthFail("insufficient_scope"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), OAuthFail("bad_claims"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), OAuthFail("wrong_audience"), 1));
  EXPECT_TRUE(PollMetricEq(s.port(), OAuthFail("wrong_issuer"), 1));
}

TEST(OAuth, AnExpiredTokenIsRefusedOnceItsExpiryPasses) {
  std::string err;
  auto op = OidcProvider::start({std::string(kResource)}, {}, 0, &err, {}, /*token_ttl_s=*/1);
  if (!op) {
    if (err.find("not found in PATH") != std::string::npos) GTEST_SKIP() << err;
    FAIL() << err;
  }
  ServerProcess srv({"--oauth-issuer", op->issuer(), "--oauth-resource", std::string(kResource), "--oauth-tenant",
                     "acme", "--oauth-leeway-s", "0"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string token = op->client_token("svc-acme", Secret("svc-acme"), std::string(kResource), "mcp:listen", &err);
  ASSERT_FALSE(token.empty()) << err;
  // Bounded: the token lives 1 s; each try is one request.
  int status = 0;
  for (auto until = After(Ms(15000)); Clock::now() < until;) {
    SseStream l;  // a listen the token still opens does not end: only its head is read
    ASSERT_TRUE(l.Open(srv.port(), OAuthListenRequest("1", token)));
    status = l.head().status;
    if (status == 401) {
      EXPECT_NE(l.head().Get("WWW-Authenticate").value_or("").find("expired"), std::string::npos)
          << l.head().Get("WWW-Authenticate").value_or("");
      break;
    }
    std::this_thread::sleep_for(Ms(200));
  }
  EXPECT_EQ(status, 401);
}

TEST(OAuth, KeysRotateWhileAStreamIsOpenAndTheNewKeysTokensAreAcceptedAtOnce) {
  OAuthSetup s;
  OAUTH_SETUP_OR_SKIP(s);
  SseStream old_stream;
  ASSERT_TRUE(old_stream.Open(s.port(), OAuthListenRequest("1", s.Token("svc-acme"))));
  ASSERT_EQ(old_stream.head().status, 200);
  ASSERT_TRUE(old_stream.NextMessage());
  // A new key only (the old one no longer published): a restart of the provider on its port.
  std::string err;
  std::string next = s.dir.path() + "/rotated.json";
  ASSERT_TRUE(OidcProvider::make_keys(next, "rotated-1", "ES256", &err)) << err;
  ASSERT_TRUE(s.op->restart_with_keys(next)) << s.op->last_error();
  // Its first token names a kid mcpfan has not seen: the JWKS is fetched again while the request waits.
  SseStream fresh;
  ASSERT_TRUE(fresh.Open(s.port(), OAuthListenRequest("2", s.Token("svc-acme"))));
  ASSERT_EQ(fresh.head().status, 200) << fresh.head().body;
  ASSERT_TRUE(fresh.NextMessage());
  EXPECT_TRUE(PollMetric(s.port(), "mcpfan_oauth_unknown_kid_refetches_total", [](double v) { return v >= 1; }));
  // Both streams hear the next change: the old one was not cut by the rotation.
  std::vector<Header> pub{{"Content-Type", "application/json"}, {"Authorization", "Bearer " + std::string(kPubKey)}};
  auto r =
      Roundtrip(s.port(), BuildRequest("POST", "/v1/publish", pub, R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202);
  EXPECT_TRUE(old_stream.NextMessage());
  EXPECT_TRUE(fresh.NextMessage());
}

TEST(OAuth, AFloodOfUnknownKeyIdsFetchesTheJwksAtMostOncePerMinimumInterval) {
  OAuthSetup s({"--oauth-jwks-min-refresh-s", "600"});
  OAUTH_SETUP_OR_SKIP(s);
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_oauth_jwks_fetches_total", 1));
  std::string token = s.Token("svc-acme");
  std::string rest = token.substr(token.find('.'));
  // The first unknown kid fetches the JWKS again (it may be a new key); the next 39, within
  // --oauth-jwks-min-refresh-s of it, do not.
  for (int i = 0; i < 40; ++i) {
    std::string header = Base64Url(R"({"alg":"RS256","typ":"at+jwt","kid":"bogus-)" + std::to_string(i) + "\"}");
    auto r = Roundtrip(s.port(), OAuthListenRequest("1", header + rest));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 401) << r->body;
    EXPECT_NE(r->Get("WWW-Authenticate").value_or("").find("error=\"invalid_token\""), std::string::npos);
  }
  EXPECT_TRUE(PollMetricEq(s.port(), OAuthFail("unknown_key"), 40));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_oauth_unknown_kid_refetches_total", 1));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_oauth_unknown_kid_limited_total", 39));
  auto fetches = ReadMetric(s.port(), "mcpfan_oauth_jwks_fetches_total");
  ASSERT_TRUE(fetches);
  EXPECT_EQ(*fetches, 2) << "the flood made mcpfan fetch the JWKS more than once";
  // A real token still works.
  SseStream ok;
  ASSERT_TRUE(ok.Open(s.port(), OAuthListenRequest("2", s.Token("svc-acme"))));
  EXPECT_EQ(ok.head().status, 200);
}

TEST(OAuth, AnUnreachableAuthorizationServerFailsClosedWith503AndIsNotReady) {
  // A port nothing listens on: discovery fails, no keys are ever loaded.
  TempDir dir;
  int closed_port = UnusedPort();
  std::string issuer = "http://127.0.0.1:" + std::to_string(closed_port);
  ServerProcess srv({"--oauth-issuer", issuer, "--oauth-resource", std::string(kResource), "--oauth-tenant", "acme",
                     "--oauth-fetch-timeout-ms", "500", "--oauth-jwks-min-refresh-s", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  ASSERT_TRUE(PollMetric(srv.port(), "mcpfan_oauth_jwks_failures_total", [](double v) { return v >= 1; }));
  auto ready = Roundtrip(srv.port(), BuildRequest("GET", "/readyz", {}, ""));
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("oauth keys not loaded"), std::string::npos) << ready->body;
  auto health = Roundtrip(srv.port(), BuildRequest("GET", "/healthz", {}, ""));
  ASSERT_TRUE(health);
  Json h(health->body);
  EXPECT_TRUE(JsonMatches(h.Get({"oauth", "keys_loaded"}), "false"));
  EXPECT_NE(h.GetString({"oauth", "last_error"}).value_or("").find("discovery failed"), std::string::npos)
      << health->body;
  // A token of that issuer (its signature cannot matter: there are no keys to check it with).
  std::string header = Base64Url(R"({"alg":"RS256","typ":"at+jwt","kid":"k"})");
  std::string payload = Base64Url(R"({"iss":")" + issuer + R"(","aud":")" + std::string(kResource) + R"("})");
  auto r = Roundtrip(srv.port(), OAuthListenRequest("1", header + "." + payload + ".c2ln"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->Get("Retry-After").value_or(""), "1");
  EXPECT_NE(r->body.find("keys are not available"), std::string::npos) << r->body;
  EXPECT_TRUE(PollMetric(srv.port(), OAuthFail("unavailable"), [](double v) { return v >= 1; }));
}

TEST(OAuth, TheJwksIsFetchedAgainAsItsCacheControlSaysAndRfc8414DiscoveryComesFirst) {
  // The provider's public JWKS, served by a scripted authorization server with max-age=1 and
  // RFC 8414 metadata (which the provider itself does not serve).
  std::string err;
  auto op = OidcProvider::start({std::string(kResource)}, {}, 0, &err);
  if (!op) {
    if (err.find("not found in PATH") != std::string::npos) GTEST_SKIP() << err;
    FAIL() << err;
  }
  auto jwks = Roundtrip(op->port(), BuildRequest("GET", "/jwks", {}, ""));
  ASSERT_TRUE(jwks);
  ASSERT_EQ(jwks->status, 200);
  std::string keys = jwks->body;
  std::atomic<int> port{0};
  FakeUpstream as([&](int fd, const UpstreamRequest& r) {
    std::string issuer = "http://127.0.0.1:" + std::to_string(port.load());
    if (r.target == "/.well-known/oauth-authorization-server") {
      FakeUpstream::Write(
          fd, FakeUpstream::Answer(200, "Content-Type: application/json\r\n",
                                   R"({"issuer":")" + issuer + R"(","jwks_uri":")" + issuer + R"(/keys"})"));
    } else if (r.target == "/keys") {
      FakeUpstream::Write(
          fd, FakeUpstream::Answer(200, "Content-Type: application/json\r\nCache-Control: max-age=1\r\n", keys));
    } else {
      FakeUpstream::Write(fd, FakeUpstream::Answer(404, "", ""));
    }
    return FakeUpstream::Next::Read;
  });
  port = as.port();
  ServerProcess srv({"--oauth-issuer", "http://127.0.0.1:" + std::to_string(as.port()), "--oauth-resource",
                     std::string(kResource), "--oauth-tenant", "acme", "--oauth-jwks-min-refresh-s", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  // Refetched about every second (max-age=1, not the 300 s default refresh).
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_oauth_jwks_fetches_total", [](double v) { return v >= 3; }));
  auto asked = as.requests();
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked[0].target, "/.well-known/oauth-authorization-server");
  for (const auto& r : asked) EXPECT_EQ(r.target.find("openid-configuration"), std::string::npos) << r.target;
}

TEST(OAuth, OpaqueTokensAreIntrospectedAndTheVerdictIsCached) {
  TempDir dir;
  std::string err;
  std::string opaque_resource = "https://opaque.example.test/mcp";
  auto op = OidcProvider::start({}, {}, 0, &err, {opaque_resource});
  if (!op) {
    if (err.find("not found in PATH") != std::string::npos) GTEST_SKIP() << err;
    FAIL() << err;
  }
  std::ofstream(dir.path() + "/introspect") << "svc-acme:" << Secret("svc-acme") << "\n";
  ServerProcess srv({"--oauth-issuer", op->issuer(), "--oauth-resource", opaque_resource, "--oauth-tenant-claim",
                     "org_id", "--oauth-introspection-url", op->introspection_endpoint(),
                     "--oauth-introspection-credentials-file", dir.path() + "/introspect"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string token = op->client_token("svc-acme", Secret("svc-acme"), opaque_resource, "mcp:listen", &err);
  ASSERT_FALSE(token.empty()) << err;
  ASSERT_EQ(token.find('.'), std::string::npos) << "expected an opaque token: " << token;
  for (int i = 0; i < 3; ++i) {
    SseStream l;
    ASSERT_TRUE(l.Open(srv.port(), OAuthListenRequest(std::to_string(i + 1), token)));
    ASSERT_EQ(l.head().status, 200) << l.head().body;
    ASSERT_TRUE(l.NextMessage());
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_oauth_introspections_total", 1));
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_oauth_introspection_cache_hits_total", [](double v) { return v >= 2; }));
  // A token the provider never issued: inactive, refused.
  auto r = Roundtrip(srv.port(), OAuthListenRequest("9", "never-issued-0123456789abcdef"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 401) << r->body;
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_oauth_introspections_total", 2));
}

}  // namespace
}  // namespace itest

// The OAuth test fixture itself (oidc_provider.h): a real oidc-provider on loopback serves its
// discovery document and JWKS, issues client_credentials JWT access tokens for a resource (kid
// in the JWKS, aud = the resource, scope, org_id per client), refuses a scope a client may not
// ask for, rotates its key on a restart on the same port, and introspects opaque tokens.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "harness.h"
#include "oidc_provider.h"

namespace itest {
namespace {

constexpr std::string_view kOidcTestResource = "http://127.0.0.1:1/mcp";
constexpr std::string_view kOidcTestOpaque = "http://127.0.0.1:2/mcp";

// Base64url (no padding) to bytes; nullopt on a character outside the alphabet.
std::optional<std::string> OidcTestB64Url(std::string_view in) {
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  constexpr std::string_view kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (char c : in) {
    size_t v = kAlphabet.find(c);
    if (v == std::string_view::npos) return std::nullopt;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

struct OidcTestJwt {
  Json header;
  Json payload;
};

// The header and payload of a compact JWS; nullopt unless it has three parts that decode to JSON.
std::optional<OidcTestJwt> OidcTestDecode(const std::string& token) {
  size_t a = token.find('.');
  size_t b = a == std::string::npos ? a : token.find('.', a + 1);
  if (b == std::string::npos || token.find('.', b + 1) != std::string::npos) return std::nullopt;
  auto h = OidcTestB64Url(std::string_view(token).substr(0, a));
  auto p = OidcTestB64Url(std::string_view(token).substr(a + 1, b - a - 1));
  if (!h || !p) return std::nullopt;
  OidcTestJwt j{Json(*h), Json(*p)};
  if (!j.header.ok() || !j.payload.ok()) return std::nullopt;
  return j;
}

// GET `path` from the provider; the parsed JSON body of a 200.
std::optional<Json> OidcTestGet(const OidcProvider& op, const std::string& path) {
  auto r = Roundtrip(op.port(), BuildRequest("GET", path, {{"Accept", "application/json"}}));
  if (!r || r->status != 200) return std::nullopt;
  Json j(r->body);
  if (!j.ok()) return std::nullopt;
  return j;
}

// The kids of the provider's JWKS.
std::vector<std::string> OidcTestKids(const OidcProvider& op) {
  std::vector<std::string> kids;
  auto j = OidcTestGet(op, "/jwks");
  if (!j) return kids;
  auto keys = j->Get({"keys"});
  if (!keys) return kids;
  simdjson::dom::array arr;
  if (keys->get_array().get(arr)) return kids;
  for (auto k : arr) {
    std::string_view kid;
    if (!k["kid"].get_string().get(kid)) kids.emplace_back(kid);
    if (k["d"].error() != simdjson::NO_SUCH_FIELD) kids.emplace_back("<a private member in the JWKS>");
  }
  return kids;
}

bool OidcTestHas(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Skips when node is missing; any other start failure is a failure.
#define OIDC_TEST_START(var, ...)                                                            \
  std::string var##_err;                                                                     \
  auto var = OidcProvider::start(__VA_ARGS__, &var##_err);                                   \
  if (!var) {                                                                                \
    if (var##_err.find("not found in PATH") != std::string::npos) GTEST_SKIP() << var##_err; \
    FAIL() << var##_err;                                                                     \
  }

TEST(OidcProviderFixture, DiscoveryAndJwtClientCredentialsToken) {
  OIDC_TEST_START(op, {std::string(kOidcTestResource)}, std::string(), 0);
  EXPECT_EQ(op->issuer(), "http://127.0.0.1:" + std::to_string(op->port()));

  auto conf = OidcTestGet(*op, "/.well-known/openid-configuration");
  ASSERT_TRUE(conf) << "no discovery document";
  EXPECT_EQ(conf->GetString({"issuer"}).value_or(""), op->issuer());
  EXPECT_EQ(conf->GetString({"jwks_uri"}).value_or(""), op->jwks_uri());
  EXPECT_EQ(conf->GetString({"token_endpoint"}).value_or(""), op->token_endpoint());
  EXPECT_EQ(conf->GetString({"introspection_endpoint"}).value_or(""), op->introspection_endpoint());
  EXPECT_TRUE(conf->Has({"registration_endpoint"})) << conf->text();

  auto kids = OidcTestKids(*op);
  ASSERT_EQ(kids.size(), 1u) << ::testing::PrintToString(kids);

  std::string err;
  std::string tok =
      op->client_token("svc-acme", "svc-acme-secret-0123456789", std::string(kOidcTestResource), "mcp:listen", &err);
  ASSERT_FALSE(tok.empty()) << err;
  auto jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->header.GetString({"typ"}).value_or(""), "at+jwt") << jwt->header.text();
  EXPECT_EQ(jwt->header.GetString({"alg"}).value_or(""), "RS256") << jwt->header.text();
  EXPECT_TRUE(OidcTestHas(kids, jwt->header.GetString({"kid"}).value_or("?"))) << jwt->header.text();
  EXPECT_EQ(jwt->payload.GetString({"aud"}).value_or(""), kOidcTestResource) << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"iss"}).value_or(""), op->issuer()) << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"scope"}).value_or(""), "mcp:listen") << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"org_id"}).value_or(""), "acme") << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"client_id"}).value_or(""), "svc-acme") << jwt->payload.text();
  EXPECT_TRUE(jwt->payload.Has({"exp"})) << jwt->payload.text();

  // No resource named: the first --resource is the default.
  tok = op->client_token("svc-beta", "svc-beta-secret-0123456789", "", "mcp:listen mcp:tools", &err);
  ASSERT_FALSE(tok.empty()) << err;
  jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->payload.GetString({"aud"}).value_or(""), kOidcTestResource) << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"org_id"}).value_or(""), "beta") << jwt->payload.text();
  EXPECT_EQ(jwt->payload.GetString({"scope"}).value_or(""), "mcp:listen mcp:tools") << jwt->payload.text();

  tok = op->client_token("svc-badorg", "svc-badorg-secret-0123456789", std::string(kOidcTestResource), "mcp:listen",
                         &err);
  ASSERT_FALSE(tok.empty()) << err;
  jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->payload.GetString({"org_id"}).value_or(""), "bad/org") << jwt->payload.text();

  // A client that may not ask for mcp:listen, a resource the provider does not serve, a wrong secret.
  err.clear();
  EXPECT_EQ(op->client_token("svc-nolisten", "svc-nolisten-secret-0123456789", std::string(kOidcTestResource),
                             "mcp:listen", &err),
            "");
  EXPECT_NE(err.find("invalid_scope"), std::string::npos) << err;
  tok = op->client_token("svc-nolisten", "svc-nolisten-secret-0123456789", std::string(kOidcTestResource), "mcp:tools",
                         &err);
  ASSERT_FALSE(tok.empty()) << err;
  jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->payload.GetString({"scope"}).value_or(""), "mcp:tools") << jwt->payload.text();
  err.clear();
  EXPECT_EQ(op->client_token("svc-acme", "svc-acme-secret-0123456789", "http://127.0.0.1:3/other", "mcp:listen", &err),
            "");
  EXPECT_NE(err.find("invalid_target"), std::string::npos) << err;
  err.clear();
  EXPECT_EQ(op->client_token("svc-acme", "wrong", std::string(kOidcTestResource), "mcp:listen", &err), "");
  EXPECT_NE(err.find("invalid_client"), std::string::npos) << err;
}

TEST(OidcProviderFixture, KeyRotationByRestartOnTheSamePort) {
  OIDC_TEST_START(op, {std::string(kOidcTestResource)}, std::string(), 0);
  auto before = OidcTestKids(*op);
  ASSERT_EQ(before.size(), 1u) << ::testing::PrintToString(before);
  std::uint16_t port = op->port();
  std::string issuer = op->issuer();

  std::string err;
  std::string rotated = op->keys_file() + ".rotated.json";
  ASSERT_TRUE(OidcProvider::make_keys(rotated, "rotated-es256", "ES256", &err)) << err;
  ASSERT_TRUE(op->restart_with_keys(rotated)) << op->last_error();
  EXPECT_EQ(op->port(), port);
  EXPECT_EQ(op->issuer(), issuer);

  auto after = OidcTestKids(*op);
  EXPECT_EQ(after, std::vector<std::string>{"rotated-es256"});
  std::string tok =
      op->client_token("svc-acme", "svc-acme-secret-0123456789", std::string(kOidcTestResource), "mcp:listen", &err);
  ASSERT_FALSE(tok.empty()) << err;
  auto jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->header.GetString({"kid"}).value_or(""), "rotated-es256") << jwt->header.text();
  EXPECT_EQ(jwt->header.GetString({"alg"}).value_or(""), "ES256") << jwt->header.text();
  EXPECT_EQ(jwt->payload.GetString({"aud"}).value_or(""), kOidcTestResource) << jwt->payload.text();

  // With overlap: a new EdDSA key signs, the ES256 one is still published.
  std::string overlap = op->keys_file() + ".overlap.json";
  ASSERT_TRUE(OidcProvider::make_keys(overlap, "next-eddsa", "EdDSA", &err, rotated)) << err;
  ASSERT_TRUE(op->restart_with_keys(overlap)) << op->last_error();
  EXPECT_EQ(op->port(), port);
  after = OidcTestKids(*op);
  EXPECT_EQ(after, (std::vector<std::string>{"next-eddsa", "rotated-es256"}));
  tok = op->client_token("svc-acme", "svc-acme-secret-0123456789", std::string(kOidcTestResource), "mcp:listen", &err);
  ASSERT_FALSE(tok.empty()) << err;
  jwt = OidcTestDecode(tok);
  ASSERT_TRUE(jwt) << "not a JWT: " << tok;
  EXPECT_EQ(jwt->header.GetString({"kid"}).value_or(""), "next-eddsa") << jwt->header.text();
  EXPECT_EQ(jwt->header.GetString({"alg"}).value_or(""), "EdDSA") << jwt->header.text();
  std::remove(rotated.c_str());
  std::remove(overlap.c_str());
}

TEST(OidcProviderFixture, IntrospectionOfAnOpaqueToken) {
  std::string err;
  auto op = OidcProvider::start({std::string(kOidcTestResource)}, std::string(), 0, &err,
                                {std::string(kOidcTestOpaque)}, 120);
  if (!op) {
    if (err.find("not found in PATH") != std::string::npos) GTEST_SKIP() << err;
    FAIL() << err;
  }
  std::string tok =
      op->client_token("svc-beta", "svc-beta-secret-0123456789", std::string(kOidcTestOpaque), "mcp:listen", &err);
  ASSERT_FALSE(tok.empty()) << err;
  EXPECT_FALSE(OidcTestDecode(tok)) << "a JWT for an --opaque-resource: " << tok;

  std::string body = op->introspect(tok, "svc-acme", "svc-acme-secret-0123456789", &err);
  ASSERT_FALSE(body.empty()) << err;
  Json j(body);
  ASSERT_TRUE(j.ok()) << body;
  EXPECT_TRUE(JsonMatches(j.Get({"active"}), "true")) << body;
  EXPECT_EQ(j.GetString({"aud"}).value_or(""), kOidcTestOpaque) << body;
  EXPECT_EQ(j.GetString({"scope"}).value_or(""), "mcp:listen") << body;
  EXPECT_EQ(j.GetString({"org_id"}).value_or(""), "beta") << body;
  EXPECT_EQ(j.GetString({"client_id"}).value_or(""), "svc-beta") << body;
  auto iat = j.GetInt({"iat"}), exp = j.GetInt({"exp"});
  ASSERT_TRUE(iat && exp) << body;
  EXPECT_EQ(*exp - *iat, 120) << body;  // token_ttl_s

  body = op->introspect("not-a-token", "svc-acme", "svc-acme-secret-0123456789", &err);
  EXPECT_TRUE(JsonMatches(Json(body).Get({"active"}), "false")) << body << err;

  // oidc-provider does not introspect JWT access tokens (a resource server verifies them).
  std::string jwt =
      op->client_token("svc-acme", "svc-acme-secret-0123456789", std::string(kOidcTestResource), "mcp:listen", &err);
  ASSERT_FALSE(jwt.empty()) << err;
  err.clear();
  EXPECT_EQ(op->introspect(jwt, "svc-acme", "svc-acme-secret-0123456789", &err), "");
  EXPECT_NE(err.find("unsupported_token_type"), std::string::npos) << err;
}

#undef OIDC_TEST_START

}  // namespace
}  // namespace itest

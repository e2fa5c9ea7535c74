// verify_access_token and peek_token (transports/src/oauth/access_token.h): each algorithm, then
// every way a token is refused, in the order the verifier checks.
#include "oauth/access_token.h"

#include "oauth/base64url.h"

#include <openssl/evp.h>

#include "oauth_test_util.h"

namespace oauthtest {
namespace {

using oauth::TokenFailure;

oauth::TokenVerdict verify(const std::string& tok, const oauth::TokenPolicy& p = policy(),
                           const oauth::KeySet& keys = standard_keys(), std::int64_t now = kNow) {
  return oauth::verify_access_token(tok, keys, p, now);
}

std::string rs256(const Payload& p = Payload{}) {
  return token(JwsAlg::RS256, rsa_key(), "rsa1", p.json());
}

// The header and payload parts of a token, and its signature part.
struct Split {
  std::string head, body, sig;
};
Split split(const std::string& t) {
  auto d1 = t.find('.'), d2 = t.rfind('.');
  return {t.substr(0, d1), t.substr(d1 + 1, d2 - d1 - 1), t.substr(d2 + 1)};
}

TEST(OAuthVerify, EachAlgorithmVerifies) {
  struct Case {
    JwsAlg alg;
    const Pkey& key;
    const char* kid;
  } cases[] = {{JwsAlg::RS256, rsa_key(), "rsa1"},
               {JwsAlg::PS256, rsa_key(), "rsa1"},
               {JwsAlg::ES256, p256_key(), "ec1"},
               {JwsAlg::EdDSA, ed25519_key(), "ed1"}};
  for (const Case& c : cases) {
    auto v = verify(token(c.alg, c.key, c.kid, Payload{}.json()));
    const oauth::AccessClaims* claims = ok(v);
    ASSERT_NE(claims, nullptr) << oauth::jws_alg_name(c.alg) << " " << describe(v);
    EXPECT_EQ(claims->tenant, "acme");
    EXPECT_EQ(claims->subject, "user-1");
    EXPECT_EQ(claims->client_id, "client-9");
    EXPECT_EQ(claims->exp, kNow + 600);
    EXPECT_TRUE(claims->has_scope("mcp:read"));
    EXPECT_TRUE(claims->has_scope("mcp:write"));
    EXPECT_FALSE(claims->has_scope("mcp"));
    EXPECT_FALSE(claims->uris_restricted);
    EXPECT_TRUE(claims->uri_allowed("file:///x"));
  }
}

TEST(OAuthVerify, TokenWithoutKidTriesEveryKeyOfItsAlgorithm) {
  auto keys = oauth::KeySet::parse(jwks({jwk(rsa_key(1), "other"), jwk(rsa_key(), "")}));
  ASSERT_TRUE(keys) << keys.error().message;
  auto v = verify(token(JwsAlg::RS256, rsa_key(), "", Payload{}.json()), policy(), keys.value());
  EXPECT_NE(ok(v), nullptr) << describe(v);
}

TEST(OAuthVerify, TamperedPartsFailTheSignature) {
  Split s = split(rs256());
  Split other = split(rs256(Payload{}.set("org_id", "\"evil\"")));
  std::string forged_header = b64url(R"({"alg":"RS256","kid":"rsa1","typ":"JWT"})");
  EXPECT_EQ(kind(verify(s.head + "." + other.body + "." + s.sig)), TokenFailure::BadSignature);
  EXPECT_EQ(kind(verify(forged_header + "." + s.body + "." + s.sig)), TokenFailure::BadSignature);
  std::string sig = s.sig;
  sig[10] = sig[10] == 'A' ? 'B' : 'A';
  EXPECT_EQ(kind(verify(s.head + "." + s.body + "." + sig)), TokenFailure::BadSignature);
  EXPECT_EQ(kind(verify(s.head + "." + s.body + "." + b64url("short"))), TokenFailure::BadSignature);
  // An ES256 and an EdDSA signature with one bit flipped.
  for (auto [alg, key, kid] : {std::tuple{JwsAlg::ES256, p256_key(), "ec1"}, {JwsAlg::EdDSA, ed25519_key(), "ed1"}}) {
    Split e = split(token(alg, key, kid, Payload{}.json()));
    std::string raw;
    ASSERT_TRUE(oauth::base64url_decode(e.sig, raw));
    raw[5] = static_cast<char>(raw[5] ^ 1);
    EXPECT_EQ(kind(verify(e.head + "." + e.body + "." + b64url(raw))), TokenFailure::BadSignature);
  }
}

TEST(OAuthVerify, NoneAndHmacAreRefusedEvenWithAnOctKeyInTheJwks) {
  // The JWKS offers a symmetric key: it is skipped, never used as an HMAC secret.
  std::string secret = "0123456789abcdef0123456789abcdef";
  auto keys = oauth::KeySet::parse(
      jwks({R"({"kty":"oct","kid":"hs","k":")" + b64url(secret) + R"("})", jwk(rsa_key(), "rsa1")}));
  ASSERT_TRUE(keys) << keys.error().message;
  EXPECT_EQ(keys.value().skipped(), 1u);
  EXPECT_FALSE(keys.value().has_kid("hs"));
  std::string body = b64url(Payload{}.json());
  for (const char* alg : {"HS256", "none", "None", "rs256", "RS512", "ES384"}) {
    std::string head = b64url(std::string(R"({"alg":")") + alg + R"(","kid":"hs"})");
    std::string input = head + "." + body;
    unsigned char mac[32];
    std::size_t len = 0;
    EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
              reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, sizeof mac, &len);
    std::string tok = input + "." + b64url(std::string(reinterpret_cast<char*>(mac), len));
    EXPECT_EQ(kind(verify(tok, policy(), keys.value())), TokenFailure::WrongAlgorithm) << alg;
    EXPECT_EQ(kind(verify(input + ".", policy(), keys.value())), TokenFailure::WrongAlgorithm) << alg;
  }
}

TEST(OAuthVerify, AlgorithmMustFitTheKeyOfTheKid) {
  // An RS256 token naming an EC key's kid: refused before any signature check.
  EXPECT_EQ(kind(verify(token(JwsAlg::RS256, rsa_key(), "ec1", Payload{}.json()))), TokenFailure::WrongAlgorithm);
  EXPECT_EQ(kind(verify(token(JwsAlg::ES256, p256_key(), "rsa1", Payload{}.json()))), TokenFailure::WrongAlgorithm);
  // A key pinned to RS256 by its JWK's alg does not verify PS256.
  auto keys = oauth::KeySet::parse(jwks({jwk(rsa_key(), "pinned", "RS256")}));
  ASSERT_TRUE(keys);
  EXPECT_EQ(kind(verify(token(JwsAlg::PS256, rsa_key(), "pinned", Payload{}.json()), policy(), keys.value())),
            TokenFailure::WrongAlgorithm);
  EXPECT_NE(ok(verify(token(JwsAlg::RS256, rsa_key(), "pinned", Payload{}.json()), policy(), keys.value())), nullptr);
}

TEST(OAuthVerify, UnknownKidAndAnotherIssuersKey) {
  EXPECT_EQ(kind(verify(token(JwsAlg::RS256, rsa_key(), "rotated", Payload{}.json()))), TokenFailure::UnknownKey);
  // Signed by another key under a known kid.
  EXPECT_EQ(kind(verify(token(JwsAlg::RS256, rsa_key(1), "rsa1", Payload{}.json()))), TokenFailure::BadSignature);
  EXPECT_EQ(kind(verify(rs256(), policy(), oauth::KeySet{})), TokenFailure::UnknownKey);
}

TEST(OAuthVerify, MalformedShapes) {
  Split s = split(rs256());
  for (const std::string& t :
       {std::string(), std::string("abc"), s.head + "." + s.body, s.head + "." + s.body + "." + s.sig + ".x",
        s.head + "=." + s.body + "." + s.sig, "e30." + s.body + "." + s.sig, std::string(9000, 'a')}) {
    EXPECT_EQ(kind(verify(t)), TokenFailure::Malformed) << t.substr(0, 20);
  }
  auto with_header = [&](const std::string& h) { return sign(JwsAlg::RS256, rsa_key(), h, Payload{}.json()); };
  EXPECT_EQ(kind(verify(with_header(R"({"alg":"RS256","kid":"rsa1","kid":"ec1"})"))), TokenFailure::Malformed);
  EXPECT_EQ(kind(verify(with_header(R"({"alg":"RS256","kid":"rsa1","crit":["exp"]})"))), TokenFailure::Malformed);
  EXPECT_EQ(kind(verify(with_header(R"({"alg":"RS256","kid":"rsa1","typ":"dpop+jwt"})"))), TokenFailure::Malformed);
  EXPECT_EQ(kind(verify(with_header(R"({"alg":"RS256","kid":7})"))), TokenFailure::Malformed);
  EXPECT_EQ(kind(verify(with_header(R"({"kid":"rsa1"})"))), TokenFailure::Malformed);
  for (const char* typ : {"at+jwt", "AT+JWT", "application/at+jwt", "JWT", "jwt"}) {
    auto v = verify(with_header(std::string(R"({"alg":"RS256","kid":"rsa1","typ":")") + typ + "\"}"));
    EXPECT_NE(ok(v), nullptr) << typ << " " << describe(v);
  }
  // A signed payload that is not JSON: Malformed, found only after the signature.
  EXPECT_EQ(kind(verify(sign(JwsAlg::RS256, rsa_key(), R"({"alg":"RS256","kid":"rsa1"})", "not json"))),
            TokenFailure::Malformed);
}

TEST(OAuthVerify, Issuer) {
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("iss", "\"https://issuer.example/tenant-b\"")))),
            TokenFailure::WrongIssuer);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("iss", "\"https://issuer.example/tenant-a/\"")))),
            TokenFailure::WrongIssuer);
  EXPECT_EQ(kind(verify(rs256(Payload{}.erase("iss")))), TokenFailure::WrongIssuer);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("iss", "1")))), TokenFailure::BadClaims);
}

TEST(OAuthVerify, Audience) {
  EXPECT_NE(ok(verify(rs256(Payload{}.set("aud", "\"mcpfan\"")))), nullptr);
  EXPECT_NE(ok(verify(rs256(Payload{}.set("aud", R"(["https://other.example","mcpfan"])")))), nullptr);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("aud", R"(["https://other.example"])")))), TokenFailure::WrongAudience);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("aud", "[]")))), TokenFailure::WrongAudience);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("aud", "\"https://mcp.example/\"")))), TokenFailure::WrongAudience);
  EXPECT_EQ(kind(verify(rs256(Payload{}.erase("aud")))), TokenFailure::WrongAudience);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("aud", R"(["mcpfan",3])")))), TokenFailure::BadClaims);
  oauth::TokenPolicy none = policy();
  none.audiences.clear();  // a policy without audiences admits nothing
  EXPECT_EQ(kind(verify(rs256(), none)), TokenFailure::WrongAudience);
}

TEST(OAuthVerify, Times) {
  EXPECT_EQ(kind(verify(rs256(Payload{}.erase("exp")))), TokenFailure::BadClaims);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("exp", "\"tomorrow\"")))), TokenFailure::BadClaims);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("exp", std::to_string(kNow - 61))))), TokenFailure::Expired);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("exp", std::to_string(kNow - 60))))), TokenFailure::Expired);
  EXPECT_NE(ok(verify(rs256(Payload{}.set("exp", std::to_string(kNow - 59))))), nullptr);  // within the leeway
  oauth::TokenPolicy strict = policy();
  strict.leeway_s = 0;
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("exp", std::to_string(kNow))), strict)), TokenFailure::Expired);
  // A fraction is rounded towards the stricter side: exp down, nbf and iat up.
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("exp", std::to_string(kNow) + ".5")), strict)), TokenFailure::Expired);
  EXPECT_NE(ok(verify(rs256(Payload{}.set("exp", std::to_string(kNow + 1) + ".5")), strict)), nullptr);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("nbf", std::to_string(kNow + 61))))), TokenFailure::NotYetValid);
  EXPECT_NE(ok(verify(rs256(Payload{}.set("nbf", std::to_string(kNow + 60))))), nullptr);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("iat", std::to_string(kNow + 61))))), TokenFailure::IssuedInFuture);
  EXPECT_NE(ok(verify(rs256(Payload{}.set("iat", std::to_string(kNow + 30))))), nullptr);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("nbf", "1e300")))), TokenFailure::BadClaims);
}

TEST(OAuthVerify, TenantIsNeverRewritten) {
  EXPECT_EQ(kind(verify(rs256(Payload{}.erase("org_id")))), TokenFailure::MissingTenant);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("org_id", "\"\"")))), TokenFailure::MissingTenant);
  for (const std::string& bad : {std::string("a/b"), std::string("a b"), std::string(65, 'x'), std::string("é")}) {
    EXPECT_EQ(kind(verify(rs256(Payload{}.set("org_id", "\"" + bad + "\"")))), TokenFailure::BadTenant) << bad;
  }
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("org_id", "42")))), TokenFailure::BadTenant);
  auto v = verify(rs256(Payload{}.set("org_id", "\"" + std::string(64, 'x') + "\"")));
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->tenant, std::string(64, 'x'));

  oauth::TokenPolicy azp = policy();
  azp.tenant_claim = "azp";
  v = verify(rs256(Payload{}.set("azp", "\"client.A-1\"")), azp);
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->tenant, "client.A-1");
  oauth::TokenPolicy by_iss = policy();
  by_iss.tenant_claim = "iss";  // a URL is not a tenant name: refused, not mangled
  EXPECT_EQ(kind(verify(rs256(), by_iss)), TokenFailure::BadTenant);
}

TEST(OAuthVerify, FixedTenant) {
  oauth::TokenPolicy fixed = policy();
  fixed.tenant_claim.clear();
  fixed.fixed_tenant = "main";
  auto v = verify(rs256(Payload{}.erase("org_id")), fixed);
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->tenant, "main");
  fixed.fixed_tenant = "";  // a misconfiguration admits nobody
  EXPECT_EQ(kind(verify(rs256(), fixed)), TokenFailure::BadTenant);
}

TEST(OAuthVerify, UrisUnderACustomClaimName) {
  oauth::TokenPolicy p = policy();
  p.uris_claim = "mcp_resources";
  auto v = verify(rs256(Payload{}.set("mcp_resources", R"(["file:///a/","mem://x"])").set("uris", "7")), p);
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_TRUE(ok(v)->uris_restricted);
  EXPECT_EQ(ok(v)->uri_prefixes, (std::vector<std::string>{"file:///a/", "mem://x"}));
  EXPECT_TRUE(ok(v)->uri_allowed("file:///a/b"));
  EXPECT_FALSE(ok(v)->uri_allowed("file:///b"));
  v = verify(rs256(Payload{}.set("mcp_resources", "[]")), p);
  ASSERT_NE(ok(v), nullptr);
  EXPECT_TRUE(ok(v)->uris_restricted);
  EXPECT_FALSE(ok(v)->uri_allowed("file:///a"));
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("mcp_resources", R"("file:///a")")), p)), TokenFailure::BadClaims);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("mcp_resources", R"([""])")), p)), TokenFailure::BadClaims);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("uris", "7")))), TokenFailure::BadClaims);  // the default name
}

TEST(OAuthVerify, ScopeStringAndScpArray) {
  auto v = verify(rs256(Payload{}.set("scope", "\"a  b a\"").set("scp", R"(["c","b"])")));
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->scopes, (std::vector<std::string>{"a", "b", "c"}));
  v = verify(rs256(Payload{}.erase("scope").set("scp", "\"User.Read Mail.Send\"")));  // Entra ID's shape
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_TRUE(ok(v)->has_scope("Mail.Send"));
  v = verify(rs256(Payload{}.erase("scope")));
  ASSERT_NE(ok(v), nullptr);
  EXPECT_TRUE(ok(v)->scopes.empty());
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("scope", "5")))), TokenFailure::BadClaims);
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("scp", "[1]")))), TokenFailure::BadClaims);
}

TEST(OAuthVerify, SubjectAndClientId) {
  auto v = verify(rs256(Payload{}.erase("client_id").set("azp", "\"spa\"")));
  ASSERT_NE(ok(v), nullptr);
  EXPECT_EQ(ok(v)->client_id, "spa");
  EXPECT_EQ(kind(verify(rs256(Payload{}.set("sub", "{}")))), TokenFailure::BadClaims);
  oauth::TokenPolicy p = policy();
  p.subject_claim = "oid";
  v = verify(rs256(Payload{}.set("oid", "\"object-7\"")), p);
  ASSERT_NE(ok(v), nullptr);
  EXPECT_EQ(ok(v)->subject, "object-7");
}

TEST(OAuthVerify, MessagesNeverHoldTheToken) {
  std::string tok = rs256(Payload{}.set("org_id", "\"a/b\""));
  auto v = verify(tok);
  ASSERT_EQ(kind(v), TokenFailure::BadTenant);
  const std::string& msg = std::get<oauth::TokenError>(v).message;
  EXPECT_EQ(msg.find(split(tok).body.substr(0, 16)), std::string::npos);
  EXPECT_EQ(msg.find("a/b"), std::string::npos);
}

TEST(OAuthVerify, FailureNames) {
  EXPECT_EQ(oauth::token_failure_name(TokenFailure::BadSignature), "bad_signature");
  EXPECT_EQ(oauth::token_failure_name(TokenFailure::IssuedInFuture), "issued_in_future");
  EXPECT_EQ(oauth::token_failure_name(TokenFailure::Inactive), "inactive");
  for (std::size_t i = 0; i < oauth::kTokenFailureCount; ++i) {
    EXPECT_NE(oauth::token_failure_name(static_cast<TokenFailure>(i)), "unknown") << i;
  }
}

TEST(OAuthPeek, ReadsKidAlgIssWithoutVerifying) {
  auto p = oauth::peek_token(token(JwsAlg::ES256, p256_key(), "ec1", Payload{}.json()));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kid, "ec1");
  EXPECT_EQ(p->alg, "ES256");
  EXPECT_EQ(p->iss, kIssuer);
  // A forged signature still peeks: peeking decides nothing.
  Split s = split(rs256());
  p = oauth::peek_token(s.head + "." + s.body + "." + b64url("x"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kid, "rsa1");
  p = oauth::peek_token(sign(JwsAlg::RS256, rsa_key(), R"({"alg":"RS256"})", R"({"tenant":"t"})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kid, "");
  EXPECT_EQ(p->iss, "");
  EXPECT_FALSE(oauth::peek_token("a.b"));
  EXPECT_FALSE(oauth::peek_token("not-a-jwt"));
  EXPECT_FALSE(oauth::peek_token(s.head + "." + b64url("[1]") + "." + s.sig));
  EXPECT_FALSE(oauth::peek_token(std::string(9000, 'a')));
}

}  // namespace
}  // namespace oauthtest

// KeySet::parse (transports/src/oauth/jwks.h): which JWKs are used, which skipped, which documents refused.
#include "oauth/jwks.h"

#include "oauth_test_util.h"

namespace oauthtest {
namespace {

using oauth::KeySet;

std::uint8_t bit(JwsAlg a) {
  return oauth::jws_alg_bit(a);
}

TEST(OAuthJwks, AlgorithmNames) {
  for (auto a : {JwsAlg::RS256, JwsAlg::PS256, JwsAlg::ES256, JwsAlg::EdDSA}) {
    EXPECT_EQ(oauth::jws_alg_from_name(oauth::jws_alg_name(a)), a);
  }
  for (const char* n : {"none", "HS256", "HS512", "rs256", "RS384", "ES512", "Ed25519", ""}) {
    EXPECT_FALSE(oauth::jws_alg_from_name(n)) << n;
  }
}

TEST(OAuthJwks, EachKeyTypeAndItsAlgorithms) {
  auto r = KeySet::parse(jwks(
      {jwk(rsa_key(), "r"), jwk(rsa_key(1), "r-ps", "PS256"), jwk(p256_key(), "e", "", ""), jwk(ed25519_key(), "d")}));
  ASSERT_TRUE(r) << r.error().message;
  const KeySet& ks = r.value();
  ASSERT_EQ(ks.size(), 4u);
  EXPECT_EQ(ks.skipped(), 0u);
  EXPECT_EQ(ks.keys()[0].algs, bit(JwsAlg::RS256) | bit(JwsAlg::PS256));  // from kty
  EXPECT_EQ(ks.keys()[1].algs, bit(JwsAlg::PS256));                       // from alg
  EXPECT_EQ(ks.keys()[2].algs, bit(JwsAlg::ES256));
  EXPECT_EQ(ks.keys()[3].algs, bit(JwsAlg::EdDSA));
  EXPECT_TRUE(ks.has_kid("r"));
  EXPECT_FALSE(ks.has_kid("x"));
  EXPECT_FALSE(ks.has_kid(""));
  EXPECT_EQ(ks.candidates("r", JwsAlg::RS256).size(), 1u);
  EXPECT_EQ(ks.candidates("r", JwsAlg::ES256).size(), 0u);
  EXPECT_EQ(ks.candidates("", JwsAlg::PS256).size(), 2u);
  EXPECT_EQ(ks.candidates("", JwsAlg::EdDSA).size(), 1u);
}

TEST(OAuthJwks, UnusableKeysAreSkippedAndCounted) {
  std::string oct = R"({"kty":"oct","kid":"s","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0"})";
  std::string rsa_private = jwk(rsa_key(), "priv", "", "sig", R"(,"d":"AQAB")");
  auto r = KeySet::parse(jwks({
      jwk(rsa_key(), "good"),
      oct,
      jwk(rsa1024_key(), "small"),
      jwk(rsa_key(1), "enc", "", "enc"),
      jwk(rsa_key(1), "oaep", "RSA-OAEP"),
      jwk(rsa_key(1), "hs", "HS256"),
      jwk(rsa_key(1), "none", "none"),
      jwk(p256_key(), "mismatch", "RS256"),
      jwk(rsa_key(1), "ops", "", "", R"(,"key_ops":["encrypt"])"),
      R"({"kty":"EC","crv":"P-384","kid":"p384","x":"AA","y":"AA"})",
      R"({"kty":"OKP","crv":"X25519","kid":"x","x":"AA"})",
      R"({"kty":"RSA","kid":"bad-n","n":"!!","e":"AQAB"})",
      R"({"kty":"EC","crv":"P-256","kid":"short","x":"AAAA","y":"AAAA"})",
      R"({"kid":"no-kty"})",
      R"("not an object")",
      R"({"kty":"RSA","kid":5})",
      rsa_private,
  }));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().size(), 1u);
  EXPECT_EQ(r.value().skipped(), 16u);
  EXPECT_EQ(r.value().skip_reasons().size(), 16u);
  for (const char* gone : {"s", "small", "enc", "oaep", "hs", "none", "mismatch", "ops", "priv"}) {
    EXPECT_FALSE(r.value().has_kid(gone)) << gone;
  }
  EXPECT_NE(r.value().skip_reasons()[1].find("1024 bits"), std::string::npos) << r.value().skip_reasons()[1];
  // key_ops with verify is fine.
  auto ops = KeySet::parse(jwks({jwk(rsa_key(), "v", "", "", R"(,"key_ops":["verify"])")}));
  EXPECT_TRUE(ops) << ops.error().message;
}

TEST(OAuthJwks, APointOffTheCurveIsSkipped) {
  std::string x = b64url(std::string(32, '\x01')), y = b64url(std::string(32, '\x02'));
  auto r = KeySet::parse(jwks(
      {R"({"kty":"EC","crv":"P-256","kid":"off","x":")" + x + R"(","y":")" + y + R"("})", jwk(ed25519_key(), "d")}));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().skipped(), 1u);
  EXPECT_FALSE(r.value().has_kid("off"));
}

TEST(OAuthJwks, DocumentErrors) {
  auto err = [](std::string_view doc) {
    auto r = KeySet::parse(doc);
    return r ? std::string("(parsed)") : r.error().message;
  };
  EXPECT_NE(err("not json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(err("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(err(std::string_view{}).find("not a JSON object"), std::string::npos);  // null data(): found by fuzzing
  EXPECT_NE(err(R"({"keys":{}})").find("no \"keys\" array"), std::string::npos);
  EXPECT_NE(err(R"({"keys":[]})").find("no usable key"), std::string::npos);
  EXPECT_NE(err(jwks({jwk(rsa1024_key(), "small")})).find("1024"), std::string::npos);  // says why
  std::string big = jwks({jwk(rsa_key(), "a")});
  big.insert(big.size() - 1, ",\"pad\":\"" + std::string(KeySet::kMaxBytes, 'x') + "\"");
  EXPECT_NE(err(big).find("over the"), std::string::npos);
  std::vector<std::string> many(KeySet::kMaxKeys + 1, R"({"kty":"oct"})");
  many[0] = jwk(ed25519_key(), "a");
  EXPECT_NE(err(jwks(many)).find("65 keys"), std::string::npos);
  many.pop_back();
  EXPECT_EQ(err(jwks(many)), "(parsed)");
}

TEST(OAuthJwks, DuplicateKidForOneAlgorithmIsAnError) {
  auto r = KeySet::parse(jwks({jwk(rsa_key(), "same"), jwk(rsa_key(1), "same")}));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("same"), std::string::npos);
  // Same kid, disjoint algorithms: allowed (a kid names a key per algorithm at some issuers).
  EXPECT_TRUE(KeySet::parse(jwks({jwk(rsa_key(), "same", "RS256"), jwk(rsa_key(1), "same", "PS256")})));
  EXPECT_TRUE(KeySet::parse(jwks({jwk(rsa_key(), "same"), jwk(p256_key(), "same")})));
  // No kid twice: a token without a kid tries both.
  auto nokid = KeySet::parse(jwks({jwk(rsa_key(), ""), jwk(rsa_key(1), "")}));
  ASSERT_TRUE(nokid);
  EXPECT_EQ(nokid.value().candidates("", JwsAlg::RS256).size(), 2u);
}

}  // namespace
}  // namespace oauthtest

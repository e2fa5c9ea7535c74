// ClientAuth::verify_token()/verify_bearer(): valid tokens of each algorithm, time claims, the
// tenant and uris claims, and token structure. Attacks are in client_auth_security_test.cc.
#include <thread>
#include <vector>

#include "auth_util.h"

namespace authtest {
namespace {

class Verify : public ::testing::Test {
 protected:
  TempDir dir_;
  ClientAuth hs_ = load_auth(dir_, kSecret, "");
  std::int64_t now_ = now_s();

  AuthResult hs(const std::string& claims) const {
    return hs_.verify_token(mint(JWT_ALG_HS256, kSecret, claims), now_);
  }
};

TEST_F(Verify, ValidHs256) {
  auto exp = now_ + 60;
  auto r = hs_.verify_bearer("Bearer " + mint(JWT_ALG_HS256, kSecret,
                                              R"({"tenant":"acme","exp":)" + std::to_string(exp) + "}"),
                             now_);
  ASSERT_EQ(kind_of(r), "ok") << message_of(r);
  const auto& id = std::get<ClientIdentity>(r);
  EXPECT_EQ(id.tenant, "acme");
  EXPECT_EQ(id.exp, exp);
  EXPECT_FALSE(id.uris_restricted);
}

TEST_F(Verify, ValidRs256) {
  ClientAuth auth = load_auth(dir_, "", rsa_key().public_pem);
  auto r = auth.verify_token(mint(JWT_ALG_RS256, rsa_key().private_pem, R"({"tenant":"t.1_x-Y"})"), now_);
  ASSERT_EQ(kind_of(r), "ok") << message_of(r);
  EXPECT_EQ(std::get<ClientIdentity>(r).tenant, "t.1_x-Y");
  EXPECT_EQ(std::get<ClientIdentity>(r).exp, 0);
}

TEST_F(Verify, ValidEs256) {
  ClientAuth auth = load_auth(dir_, "", ec_key().public_pem);
  auto token = mint(JWT_ALG_ES256, ec_key().private_pem, R"({"tenant":"acme"})");
  // JOSE ES256 signatures are raw r||s (64 bytes = 86 base64url chars), not DER.
  EXPECT_EQ(token.size() - token.rfind('.') - 1, 86u);
  EXPECT_EQ(kind_of(auth.verify_token(token, now_)), "ok");
}

TEST_F(Verify, BothHsAndRsConfigured) {
  ClientAuth auth = load_auth(dir_, kSecret, rsa_key().public_pem);
  EXPECT_EQ(kind_of(auth.verify_token(mint(JWT_ALG_HS256, kSecret, R"({"tenant":"a"})"), now_)), "ok");
  EXPECT_EQ(kind_of(auth.verify_token(mint(JWT_ALG_RS256, rsa_key().private_pem, R"({"tenant":"a"})"), now_)), "ok");
}

TEST_F(Verify, Expired) {
  auto exp = std::to_string(now_ - 1);
  auto r = hs(R"({"tenant":"a","exp":)" + exp + "}");
  EXPECT_EQ(kind_of(r), "expired");
  EXPECT_EQ(message_of(r), "token expired at " + exp);
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a","exp":)" + std::to_string(now_) + "}")), "expired");  // exp is exclusive
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a","exp":)" + std::to_string(now_ + 1) + "}")), "ok");
}

TEST_F(Verify, LeewayWidensExpAndNbf) {
  ClientAuth lenient = load_auth(dir_, kSecret, "", 30);
  auto token = [&](const char* claim, std::int64_t t) {
    return mint(JWT_ALG_HS256, kSecret, std::string(R"({"tenant":"a",")") + claim + "\":" + std::to_string(t) + "}");
  };
  EXPECT_EQ(kind_of(lenient.verify_token(token("exp", now_ - 10), now_)), "ok");
  EXPECT_EQ(kind_of(lenient.verify_token(token("exp", now_ - 30), now_)), "expired");
  EXPECT_EQ(kind_of(lenient.verify_token(token("nbf", now_ + 30), now_)), "ok");
  EXPECT_EQ(kind_of(lenient.verify_token(token("nbf", now_ + 31), now_)), "not_yet_valid");
}

TEST_F(Verify, NotYetValid) {
  auto nbf = std::to_string(now_ + 100);
  auto r = hs(R"({"tenant":"a","nbf":)" + nbf + "}");
  EXPECT_EQ(kind_of(r), "not_yet_valid");
  EXPECT_EQ(message_of(r), "token not valid before " + nbf);
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a","nbf":)" + std::to_string(now_) + "}")), "ok");
}

TEST_F(Verify, NonIntegerTimesAreBadClaims) {
  // Hand-signed: libjwt's JSON library would not carry a number beyond int64 through.
  auto raw = [&](const std::string& claims) {
    return hs_.verify_token(mint_hs256_raw(R"({"alg":"HS256"})", claims, kSecret), now_);
  };
  for (const char* v : {R"("123")", "1.5", "1e12", "true", "null", "[1]", "18446744073709551615"}) {
    EXPECT_EQ(kind_of(raw(std::string(R"({"tenant":"a","exp":)") + v + "}")), "bad_claims") << v;
    EXPECT_EQ(kind_of(raw(std::string(R"({"tenant":"a","nbf":)") + v + "}")), "bad_claims") << v;
  }
}

TEST_F(Verify, Tenant) {
  EXPECT_EQ(kind_of(hs(R"({"sub":"x"})")), "missing_tenant");
  EXPECT_EQ(kind_of(hs(R"({"tenant":""})")), "missing_tenant");
  EXPECT_EQ(kind_of(hs(R"({"tenant":42})")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":["a"]})")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a b"})")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a/b"})")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":"caf\u00e9"})")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":")" + std::string(65, 'x') + "\"}")), "bad_claims");
  EXPECT_EQ(kind_of(hs(R"({"tenant":")" + std::string(64, 'x') + "\"}")), "ok");
}

TEST_F(Verify, Uris) {
  auto r = hs(R"({"tenant":"a","uris":["file:///p/","db://x"]})");
  ASSERT_EQ(kind_of(r), "ok") << message_of(r);
  const auto& id = std::get<ClientIdentity>(r);
  EXPECT_TRUE(id.uris_restricted);
  EXPECT_EQ(id.uri_prefixes, (std::vector<std::string>{"file:///p/", "db://x"}));
  EXPECT_TRUE(id.uri_allowed("file:///p/q"));
  EXPECT_FALSE(id.uri_allowed("file:///q"));

  auto empty = hs(R"({"tenant":"a","uris":[]})");
  ASSERT_EQ(kind_of(empty), "ok");
  EXPECT_TRUE(std::get<ClientIdentity>(empty).uris_restricted);
  EXPECT_FALSE(std::get<ClientIdentity>(empty).uri_allowed("file:///p/q"));
}

TEST_F(Verify, BadUris) {
  for (const char* v : {R"("file:///p/")", "{}", "[1]", R"([""])", R"(["a",null])", R"([["a"]])", "null"}) {
    auto r = hs(std::string(R"({"tenant":"a","uris":)") + v + "}");
    EXPECT_EQ(kind_of(r), "bad_claims") << v;
  }
  std::string many = "[";
  for (int i = 0; i < 65; ++i) many += (i ? ",\"u" : "\"u") + std::to_string(i) + "\"";
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a","uris":)" + many + "]}")), "bad_claims");
  many = many.substr(0, many.rfind(',')) + "]";  // 64 entries
  EXPECT_EQ(kind_of(hs(R"({"tenant":"a","uris":)" + many + "}")), "ok");
}

TEST_F(Verify, Structure) {
  auto good = mint(JWT_ALG_HS256, kSecret, R"({"tenant":"a"})");
  auto dot = good.find('.');
  EXPECT_EQ(kind_of(hs_.verify_token("", now_)), "missing");
  EXPECT_EQ(kind_of(hs_.verify_token(good.substr(0, good.rfind('.')), now_)), "malformed");  // two parts
  EXPECT_EQ(kind_of(hs_.verify_token(good + ".x", now_)), "malformed");                      // four parts
  EXPECT_EQ(kind_of(hs_.verify_token("!" + good.substr(1), now_)), "malformed");             // not base64url
  EXPECT_EQ(kind_of(hs_.verify_token(good.substr(0, dot) + "=" + good.substr(dot), now_)), "malformed");
  EXPECT_EQ(kind_of(hs_.verify_token(b64url("not json") + good.substr(dot), now_)), "malformed");
  // 32 signature bytes take 43 characters, so the last one's two low bits are unused and must be 0.
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string respelled = good;
  respelled.back() = alphabet[alphabet.find(good.back()) | 1];
  EXPECT_EQ(kind_of(hs_.verify_token(respelled, now_)), "malformed") << good.back() << " -> " << respelled.back();
  EXPECT_EQ(kind_of(hs_.verify_token(mint_hs256_raw(R"({"alg":"HS256"})", "[1,2]", kSecret), now_)), "malformed");
  EXPECT_EQ(kind_of(hs_.verify_token(mint_hs256_raw(R"({"typ":"JWT"})", R"({"tenant":"a"})", kSecret), now_)),
            "malformed");  // no alg
}

TEST_F(Verify, OversizedToken) {
  std::string filler(8192, 'x');
  auto big = mint(JWT_ALG_HS256, kSecret, R"({"tenant":"a","pad":")" + filler + "\"}");
  auto r = hs_.verify_token(big, now_);
  EXPECT_EQ(kind_of(r), "malformed");
  EXPECT_NE(message_of(r).find("8192"), std::string::npos);
}

// ClientAuth is immutable; four threads verify good and bad tokens of every algorithm at once
// (run under ASan/UBSan and, when built so, TSan).
TEST_F(Verify, ConcurrentFromFourThreads) {
  TempDir dir;
  ClientAuth both = load_auth(dir, kSecret, rsa_key().public_pem);
  ClientAuth ec = load_auth(dir, "", ec_key().public_pem);
  const std::string claims = R"({"tenant":"acme","uris":["file:///p/"]})";
  const auto hs_token = mint(JWT_ALG_HS256, kSecret, claims);
  const auto rs_token = mint(JWT_ALG_RS256, rsa_key().private_pem, claims);
  const auto es_token = mint(JWT_ALG_ES256, ec_key().private_pem, claims);
  const auto forged = mint(JWT_ALG_HS256, rsa_key().public_pem, claims);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto check = [&](const AuthResult& r, const char* want) { failures[t] += kind_of(r) != want; };
        check(both.verify_bearer("Bearer " + hs_token, now_), "ok");
        check(both.verify_token(rs_token, now_), "ok");
        check(ec.verify_token(es_token, now_), "ok");
        check(both.verify_token(forged, now_), "bad_signature");
        check(ec.verify_token(rs_token, now_), "wrong_algorithm");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace authtest

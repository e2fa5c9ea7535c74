// ClientAuth against forged tokens: algorithm confusion, "none", tampering. libjwt 1.10.2 alone
// would accept several of these (see the comments in transports/src/mcp/auth.cc).
#include "auth_util.h"

namespace authtest {
namespace {

const std::string kClaims = R"({"tenant":"acme"})";

class Security : public ::testing::Test {
 protected:
  TempDir dir_;
  std::int64_t now_ = now_s();
};

TEST_F(Security, AlgNoneIsRefused) {
  std::string none = mint(JWT_ALG_NONE, "", kClaims);  // "eyJhbGciOiJub25lIn0.<payload>."
  for (const auto& auth : {load_auth(dir_, kSecret, ""), load_auth(dir_, "", rsa_key().public_pem)}) {
    auto r = auth.verify_token(none, now_);
    EXPECT_EQ(kind_of(r), "wrong_algorithm");
    EXPECT_NE(message_of(r).find("token algorithm none is not accepted"), std::string::npos) << message_of(r);
  }
  // Spelled differently (libjwt matches alg names case-insensitively), with a signature attached.
  ClientAuth hs = load_auth(dir_, kSecret, "");
  EXPECT_EQ(kind_of(hs.verify_token(mint_hs256_raw(R"({"alg":"None"})", kClaims, kSecret), now_)), "wrong_algorithm");
  EXPECT_EQ(kind_of(hs.verify_token(mint_hs256_raw(R"({"alg":"hs256"})", kClaims, kSecret), now_)), "wrong_algorithm");
}

TEST_F(Security, Hs256WhenOnlyRs256IsConfigured) {
  ClientAuth rs = load_auth(dir_, "", rsa_key().public_pem);
  auto r = rs.verify_token(mint(JWT_ALG_HS256, kSecret, kClaims), now_);
  EXPECT_EQ(kind_of(r), "wrong_algorithm");
  EXPECT_EQ(message_of(r), "token algorithm HS256 is not accepted (configured: RS256)");
}

TEST_F(Security, Rs256WhenOnlyHs256IsConfigured) {
  ClientAuth hs = load_auth(dir_, kSecret, "");
  EXPECT_EQ(kind_of(hs.verify_token(mint(JWT_ALG_RS256, rsa_key().private_pem, kClaims), now_)), "wrong_algorithm");
}

// The classic RS256 → HS256 confusion: the attacker HMACs a token with the (public) PEM text.
// Plain libjwt 1.10.2 accepts it when handed the PEM as the key.
TEST_F(Security, RsToHsConfusionIsRefused) {
  const std::string& pem = rsa_key().public_pem;
  ClientAuth rs = load_auth(dir_, "", pem);
  for (const std::string& key : {pem, pem.substr(0, pem.size() - 1)}) {  // with and without the final newline
    EXPECT_EQ(kind_of(rs.verify_token(mint(JWT_ALG_HS256, key, kClaims), now_)), "wrong_algorithm");
  }
  // With a secret configured too, HS256 is accepted, but only with the secret, never the PEM.
  ClientAuth both = load_auth(dir_, kSecret, pem);
  EXPECT_EQ(kind_of(both.verify_token(mint(JWT_ALG_HS256, pem, kClaims), now_)), "bad_signature");
}

// A repeated "alg": JSON parsers disagree on which one counts (jansson, used by libjwt, takes the last).
TEST_F(Security, RepeatedAlgHeaderIsRefused) {
  const std::string& pem = rsa_key().public_pem;
  ClientAuth rs = load_auth(dir_, "", pem);
  auto r = rs.verify_token(mint_hs256_raw(R"({"alg":"RS256","alg":"HS256"})", kClaims, pem), now_);
  EXPECT_EQ(kind_of(r), "malformed");
  EXPECT_NE(message_of(r).find("repeats"), std::string::npos);
  ClientAuth hs = load_auth(dir_, kSecret, "");
  EXPECT_EQ(kind_of(hs.verify_token(mint_hs256_raw(R"({"alg":"HS256","alg":"HS256"})", kClaims, kSecret), now_)),
            "malformed");
  EXPECT_EQ(kind_of(hs.verify_token(mint_hs256_raw(R"({"alg":"HS256"})", R"({"tenant":"a","tenant":"b"})", kSecret),
                                    now_)),
            "malformed");
}

TEST_F(Security, CriticalHeaderIsRefused) {
  ClientAuth hs = load_auth(dir_, kSecret, "");
  auto token = mint_hs256_raw(R"({"alg":"HS256","crit":["exp"],"exp":1})", kClaims, kSecret);
  EXPECT_EQ(kind_of(hs.verify_token(token, now_)), "malformed");
  EXPECT_EQ(kind_of(hs.verify_token(mint_hs256_raw(R"({"alg":"HS256","typ":"JWT"})", kClaims, kSecret), now_)), "ok");
}

TEST_F(Security, Es256AgainstAnRsaKey) {
  ClientAuth rs = load_auth(dir_, "", rsa_key().public_pem);
  auto r = rs.verify_token(mint(JWT_ALG_ES256, ec_key().private_pem, kClaims), now_);
  EXPECT_EQ(kind_of(r), "wrong_algorithm");
  EXPECT_EQ(message_of(r), "token algorithm ES256 is not accepted (configured: RS256)");
}

TEST_F(Security, SignedByAnotherKey) {
  ClientAuth ec = load_auth(dir_, "", ec_key().public_pem);
  // Same curve, different key: the algorithm is right, the signature is not.
  EXPECT_EQ(kind_of(ec.verify_token(mint(JWT_ALG_ES256, ec_key("prime256v1").private_pem, kClaims), now_)),
            "bad_signature");
  ClientAuth hs = load_auth(dir_, kSecret, "");
  EXPECT_EQ(kind_of(hs.verify_token(mint(JWT_ALG_HS256, kSecret + "x", kClaims), now_)), "bad_signature");
}

TEST_F(Security, TamperedPayload) {
  ClientAuth rs = load_auth(dir_, "", rsa_key().public_pem);
  auto token = mint(JWT_ALG_RS256, rsa_key().private_pem, kClaims);
  auto d1 = token.find('.'), d2 = token.rfind('.');
  auto forged = token.substr(0, d1 + 1) + b64url(R"({"tenant":"evil"})") + token.substr(d2);
  auto r = rs.verify_token(forged, now_);
  EXPECT_EQ(kind_of(r), "bad_signature");
  EXPECT_EQ(message_of(r), "token signature does not verify");
  // Times are judged only once the signature holds, so a forged expired token is a forgery.
  forged = token.substr(0, d1 + 1) + b64url(R"({"tenant":"acme","exp":1})") + token.substr(d2);
  EXPECT_EQ(kind_of(rs.verify_token(forged, now_)), "bad_signature");
}

TEST_F(Security, TamperedHeader) {
  ClientAuth hs = load_auth(dir_, kSecret, "");
  auto token = mint(JWT_ALG_HS256, kSecret, kClaims);
  auto forged = b64url(R"({"alg":"HS256","kid":"x"})") + token.substr(token.find('.'));
  EXPECT_EQ(kind_of(hs.verify_token(forged, now_)), "bad_signature");
}

TEST_F(Security, TamperedSignature) {
  for (jwt_alg_t alg : {JWT_ALG_HS256, JWT_ALG_RS256, JWT_ALG_ES256}) {
    ClientAuth auth = load_auth(dir_, kSecret, alg == JWT_ALG_ES256 ? ec_key().public_pem : rsa_key().public_pem);
    std::string key = alg == JWT_ALG_HS256   ? kSecret
                      : alg == JWT_ALG_RS256 ? rsa_key().private_pem
                                             : ec_key().private_pem;
    auto token = mint(alg, key, kClaims);
    auto sig = token.rfind('.') + 1;
    std::string flipped = token;
    char& c = flipped[sig + (token.size() - sig) / 2];  // a middle character: every bit of it counts
    c = c == 'A' ? 'B' : 'A';
    EXPECT_EQ(kind_of(auth.verify_token(flipped, now_)), "bad_signature") << jwt_alg_str(alg);
    EXPECT_EQ(kind_of(auth.verify_token(token.substr(0, sig), now_)), "bad_signature") << "empty signature";
    EXPECT_EQ(kind_of(auth.verify_token(token, now_)), "ok") << jwt_alg_str(alg);
  }
}

TEST_F(Security, MessagesNeverEchoTheToken) {
  ClientAuth hs = load_auth(dir_, kSecret, "");
  auto token = mint(JWT_ALG_HS256, kSecret, R"({"tenant":"a","exp":1})");
  std::string sig = token.substr(token.rfind('.') + 1);
  std::string weird_alg = mint_hs256_raw(R"({"alg":"<script>HS256"})", kClaims, kSecret);
  for (const auto& t : {token, token.substr(0, token.size() - 2) + "AA", weird_alg}) {
    auto msg = message_of(hs.verify_bearer("Bearer " + t, now_));
    EXPECT_FALSE(msg.empty());
    EXPECT_EQ(msg.find(sig.substr(0, 10)), std::string::npos) << msg;
    EXPECT_EQ(msg.find(kSecret), std::string::npos) << msg;
    EXPECT_EQ(msg.find("<script>"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace authtest

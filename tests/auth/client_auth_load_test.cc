// ClientAuth::load(): secret and public key files, and the errors an operator sees.
#include "auth_util.h"

namespace authtest {
namespace {

std::string load_error(const std::string& secret_file, const std::string& key_file, std::int64_t leeway = 0) {
  auto r = ClientAuth::load(secret_file, key_file, leeway);
  return r ? std::string("loaded") : r.error().message;
}

TEST(ClientAuthLoad, NothingConfiguredIsDisabled) {
  auto r = ClientAuth::load("", "");
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value().enabled());
  EXPECT_EQ(r.value().accepted_algorithms(), "none");
  EXPECT_EQ(kind_of(r.value().verify_token(mint(JWT_ALG_HS256, kSecret, R"({"tenant":"a"})"), now_s())),
            "wrong_algorithm");
}

TEST(ClientAuthLoad, SecretTrailingWhitespaceIsTrimmed) {
  TempDir dir;
  std::string secret(32, 'k');
  ClientAuth auth = load_auth(dir, secret + " \r\n\n", "");
  EXPECT_TRUE(auth.enabled());
  EXPECT_EQ(auth.accepted_algorithms(), "HS256");
  // Signed with the trimmed secret: verifies, so the newline was not part of the key.
  EXPECT_EQ(kind_of(auth.verify_token(mint(JWT_ALG_HS256, secret, R"({"tenant":"a"})"), now_s())), "ok");
}

TEST(ClientAuthLoad, SecretTooShort) {
  TempDir dir;
  auto path = dir.write("short", std::string(31, 'k') + "\n\n");  // 33 bytes, 31 after trimming
  std::string msg = load_error(path, "");
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("31 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at least 32"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(std::string(31, 'k')), std::string::npos) << "the secret must not be echoed";
}

TEST(ClientAuthLoad, MissingFilesAreNamed) {
  TempDir dir;
  std::string msg = load_error(dir.path() + "/nope", "");
  EXPECT_NE(msg.find(dir.path() + "/nope"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
  msg = load_error("", dir.path() + "/nokey.pem");
  EXPECT_NE(msg.find("public key file " + dir.path() + "/nokey.pem"), std::string::npos) << msg;
}

TEST(ClientAuthLoad, BadPem) {
  TempDir dir;
  auto path = dir.write("bad.pem", "-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----\n");
  std::string msg = load_error("", path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a PEM public key"), std::string::npos) << msg;
  EXPECT_NE(load_error("", dir.write("empty.pem", "")).find("not a PEM public key"), std::string::npos);
}

TEST(ClientAuthLoad, PrivateKeyInThePublicKeyFileIsRefused) {
  TempDir dir;
  std::string msg = load_error("", dir.write("priv.pem", rsa_key().private_pem));
  EXPECT_NE(msg.find("private key"), std::string::npos) << msg;
}

TEST(ClientAuthLoad, UnsupportedKeys) {
  TempDir dir;
  std::string msg = load_error("", dir.write("p384.pem", ec_key("P-384").public_pem));
  EXPECT_NE(msg.find("secp384r1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("P-256"), std::string::npos) << msg;
  msg = load_error("", dir.write("ed.pem", ed25519_key().public_pem));
  EXPECT_NE(msg.find("ED25519 is not supported"), std::string::npos) << msg;
  msg = load_error("", dir.write("rsa1024.pem", rsa_key(1024).public_pem));
  EXPECT_NE(msg.find("1024 bits"), std::string::npos) << msg;
}

TEST(ClientAuthLoad, DetectsRsaAndEc) {
  TempDir dir;
  EXPECT_EQ(load_auth(dir, "", rsa_key().public_pem).accepted_algorithms(), "RS256");
  EXPECT_EQ(load_auth(dir, "", ec_key().public_pem).accepted_algorithms(), "ES256");
  EXPECT_EQ(load_auth(dir, kSecret, ec_key().public_pem).accepted_algorithms(), "HS256, ES256");
}

TEST(ClientAuthLoad, Pkcs1RsaPublicKeyVerifies) {
  TempDir dir;
  ASSERT_EQ(rsa_key().pkcs1_pem.rfind("-----BEGIN RSA PUBLIC KEY-----", 0), 0u);
  ClientAuth auth = load_auth(dir, "", rsa_key().pkcs1_pem);
  auto token = mint(JWT_ALG_RS256, rsa_key().private_pem, R"({"tenant":"acme"})");
  EXPECT_EQ(kind_of(auth.verify_token(token, now_s())), "ok");
}

TEST(ClientAuthLoad, LeewayRange) {
  EXPECT_NE(load_error("", "", -1).find("leeway"), std::string::npos);
  EXPECT_NE(load_error("", "", 3601).find("leeway"), std::string::npos);
  EXPECT_EQ(load_error("", "", 3600), "loaded");
}

}  // namespace
}  // namespace authtest

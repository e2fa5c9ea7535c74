#include "test_keys.h"

#include <openssl/bio.h>
#include <openssl/encoder.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

namespace authtest {

namespace {

using PkeyPtr = std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)>;
using BioPtr = std::unique_ptr<BIO, int (*)(BIO*)>;

std::string drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

KeyPair to_pems(EVP_PKEY* key, bool rsa) {
  if (!key) throw std::runtime_error("key generation failed");
  KeyPair kp;
  BioPtr priv(BIO_new(BIO_s_mem()), &BIO_free);
  BioPtr pub(BIO_new(BIO_s_mem()), &BIO_free);
  if (PEM_write_bio_PrivateKey(priv.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1 ||
      PEM_write_bio_PUBKEY(pub.get(), key) != 1) {
    throw std::runtime_error("PEM encoding failed");
  }
  kp.private_pem = drain(priv.get());
  kp.public_pem = drain(pub.get());
  if (rsa) {
    // "type-specific" is the PKCS#1 RSAPublicKey structure: "BEGIN RSA PUBLIC KEY".
    std::unique_ptr<OSSL_ENCODER_CTX, void (*)(OSSL_ENCODER_CTX*)> enc(
        OSSL_ENCODER_CTX_new_for_pkey(key, EVP_PKEY_PUBLIC_KEY, "PEM", "type-specific", nullptr),
        &OSSL_ENCODER_CTX_free);
    unsigned char* out = nullptr;
    std::size_t len = 0;
    if (!enc || OSSL_ENCODER_to_data(enc.get(), &out, &len) != 1) throw std::runtime_error("PKCS#1 encoding failed");
    kp.pkcs1_pem.assign(reinterpret_cast<char*>(out), len);
    OPENSSL_free(out);
  }
  return kp;
}

template <class Make>
const KeyPair& cached(const std::string& name, Make make) {
  static std::mutex mu;
  static std::map<std::string, KeyPair> keys;
  std::lock_guard lock(mu);
  auto it = keys.find(name);
  if (it == keys.end()) it = keys.emplace(name, make()).first;
  return it->second;
}

}  // namespace

const KeyPair& rsa_key(int bits) {
  return cached("rsa" + std::to_string(bits), [bits] {
    PkeyPtr key(EVP_RSA_gen(static_cast<unsigned>(bits)), &EVP_PKEY_free);
    return to_pems(key.get(), true);
  });
}

const KeyPair& ec_key(const char* curve) {
  return cached(std::string("ec") + curve, [curve] {
    PkeyPtr key(EVP_EC_gen(curve), &EVP_PKEY_free);
    return to_pems(key.get(), false);
  });
}

const KeyPair& ed25519_key() {
  return cached("ed25519", [] {
    PkeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), &EVP_PKEY_free);
    return to_pems(key.get(), false);
  });
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mcpfan-auth-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& name, std::string_view content) const {
  std::string p = path_ + "/" + name;
  std::ofstream out(p, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  if (!out) throw std::runtime_error("cannot write " + p);
  return p;
}

std::string mint(jwt_alg_t alg, std::string_view key, const std::string& claims_json) {
  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) throw std::runtime_error("jwt_new");
  std::unique_ptr<jwt_t, void (*)(jwt_t*)> jwt(raw, &jwt_free);
  if (jwt_add_grants_json(jwt.get(), claims_json.c_str()) != 0) throw std::runtime_error("bad claims json");
  const auto* k = key.empty() ? nullptr : reinterpret_cast<const unsigned char*>(key.data());
  if (jwt_set_alg(jwt.get(), alg, k, static_cast<int>(key.size())) != 0) throw std::runtime_error("jwt_set_alg");
  std::unique_ptr<char, void (*)(void*)> token(jwt_encode_str(jwt.get()), &std::free);
  if (!token) throw std::runtime_error("jwt_encode_str");
  return token.get();
}

std::string b64url(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

std::string mint_hs256_raw(const std::string& header_json, const std::string& payload_json,
                           std::string_view hmac_key) {
  std::string signing_input = b64url(header_json) + "." + b64url(payload_json);
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t len = 0;
  if (!EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, hmac_key.data(), hmac_key.size(),
                 reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac, sizeof mac,
                 &len)) {
    throw std::runtime_error("HMAC failed");
  }
  return signing_input + "." + b64url(std::string_view(reinterpret_cast<char*>(mac), len));
}

std::int64_t now_s() { return static_cast<std::int64_t>(std::time(nullptr)); }

}  // namespace authtest

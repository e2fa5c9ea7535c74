#include "oauth_keys.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

namespace oauthtest {

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "oauth test keys: %s failed\n", what);
  std::abort();
}

Pkey own(EVP_PKEY* raw, const char* what) {
  if (raw == nullptr) die(what);
  return Pkey(raw, &EVP_PKEY_free);
}

std::string bn_bytes(const Pkey& key, const char* param, int pad) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key.get(), param, &bn) != 1) die(param);
  std::string out(static_cast<std::size_t>(pad > 0 ? pad : BN_num_bytes(bn)), '\0');
  auto* p = reinterpret_cast<unsigned char*>(out.data());
  int n = pad > 0 ? BN_bn2binpad(bn, p, pad) : BN_bn2bin(bn, p);
  BN_free(bn);
  if (n < 0) die("BN_bn2bin");
  return out;
}

const Pkey& cached(const char* kind, int n, Pkey (*make)()) {
  static std::mutex mu;
  static std::map<std::pair<std::string, int>, Pkey> keys;
  std::lock_guard<std::mutex> lock(mu);
  Pkey& k = keys[{kind, n}];
  if (!k) k = make();
  return k;
}

}  // namespace

Pkey make_rsa(int bits) {
  return own(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<std::size_t>(bits)), "RSA keygen");
}
Pkey make_p256() {
  return own(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), "P-256 keygen");
}
Pkey make_ed25519() {
  return own(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"), "Ed25519 keygen");
}

const Pkey& rsa_key(int n) {
  return cached("rsa", n, [] { return make_rsa(2048); });
}
const Pkey& p256_key(int n) {
  return cached("p256", n, &make_p256);
}
const Pkey& ed25519_key(int n) {
  return cached("ed25519", n, &make_ed25519);
}
const Pkey& rsa1024_key() {
  return cached("rsa1024", 0, [] { return make_rsa(1024); });
}

std::string b64url(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

std::string jwk(const Pkey& key, std::string_view kid, std::string_view alg, std::string_view use,
                std::string_view extra) {
  std::string out;
  if (EVP_PKEY_is_a(key.get(), "RSA")) {
    out = "{\"kty\":\"RSA\",\"n\":\"" + b64url(bn_bytes(key, OSSL_PKEY_PARAM_RSA_N, 0)) + "\",\"e\":\"" +
          b64url(bn_bytes(key, OSSL_PKEY_PARAM_RSA_E, 0)) + "\"";
  } else if (EVP_PKEY_is_a(key.get(), "EC")) {
    out = "{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"" + b64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_X, 32)) +
          "\",\"y\":\"" + b64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_Y, 32)) + "\"";
  } else {
    unsigned char raw[32];
    std::size_t len = sizeof raw;
    if (EVP_PKEY_get_raw_public_key(key.get(), raw, &len) != 1) die("raw public key");
    out = "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" +
          b64url(std::string_view(reinterpret_cast<const char*>(raw), len)) + "\"";
  }
  if (!kid.empty()) out += ",\"kid\":\"" + std::string(kid) + "\"";
  if (!alg.empty()) out += ",\"alg\":\"" + std::string(alg) + "\"";
  if (!use.empty()) out += ",\"use\":\"" + std::string(use) + "\"";
  out += extra;
  out += "}";
  return out;
}

std::string jwks(const std::vector<std::string>& keys) {
  std::string out = "{\"keys\":[";
  for (std::size_t i = 0; i < keys.size(); ++i) out += (i ? "," : "") + keys[i];
  return out + "]}";
}

std::string sign_bytes(JwsAlg alg, const Pkey& key, std::string_view input) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_PKEY_CTX* pctx = nullptr;
  const EVP_MD* md = alg == JwsAlg::EdDSA ? nullptr : EVP_sha256();
  if (!ctx || EVP_DigestSignInit(ctx.get(), &pctx, md, nullptr, key.get()) != 1) die("EVP_DigestSignInit");
  if (alg == JwsAlg::PS256 &&
      (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
       EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1 || EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) != 1)) {
    die("PSS parameters");
  }
  const auto* in = reinterpret_cast<const unsigned char*>(input.data());
  std::size_t len = 0;
  if (EVP_DigestSign(ctx.get(), nullptr, &len, in, input.size()) != 1) die("EVP_DigestSign (size)");
  std::string sig(len, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len, in, input.size()) != 1) {
    die("EVP_DigestSign");
  }
  sig.resize(len);
  if (alg != JwsAlg::ES256) return sig;
  // DER → r||s, 32 bytes each (RFC 7518 §3.4).
  const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
  ECDSA_SIG* ecdsa = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
  if (ecdsa == nullptr) die("d2i_ECDSA_SIG");
  std::string rs(64, '\0');
  auto* out = reinterpret_cast<unsigned char*>(rs.data());
  bool ok =
      BN_bn2binpad(ECDSA_SIG_get0_r(ecdsa), out, 32) == 32 && BN_bn2binpad(ECDSA_SIG_get0_s(ecdsa), out + 32, 32) == 32;
  ECDSA_SIG_free(ecdsa);
  if (!ok) die("r||s");
  return rs;
}

std::string sign(JwsAlg alg, const Pkey& key, std::string_view header_json, std::string_view payload_json) {
  std::string input = b64url(header_json) + "." + b64url(payload_json);
  return input + "." + b64url(sign_bytes(alg, key, input));
}

std::string token(JwsAlg alg, const Pkey& key, std::string_view kid, std::string_view payload_json) {
  std::string header = "{\"alg\":\"" + std::string(mcpfan::detail::oauth::jws_alg_name(alg)) + "\",\"typ\":\"at+jwt\"";
  if (!kid.empty()) header += ",\"kid\":\"" + std::string(kid) + "\"";
  header += "}";
  return sign(alg, key, header, payload_json);
}

std::string public_pem(const Pkey& key) {
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (!bio || PEM_write_bio_PUBKEY(bio.get(), key.get()) != 1) die("PEM_write_bio_PUBKEY");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(len));
}

}  // namespace oauthtest

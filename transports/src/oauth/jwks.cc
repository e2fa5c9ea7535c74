#include "oauth/jwks.h"

#include "oauth/base64url.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <simdjson.h>

#include <algorithm>
#include <array>

namespace mcpfan::detail::oauth {

namespace {

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* c) const noexcept { EVP_PKEY_CTX_free(c); }
};
struct BldFree {
  void operator()(OSSL_PARAM_BLD* b) const noexcept { OSSL_PARAM_BLD_free(b); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* p) const noexcept { OSSL_PARAM_free(p); }
};
struct BnFree {
  void operator()(BIGNUM* b) const noexcept { BN_free(b); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using BnPtr = std::unique_ptr<BIGNUM, BnFree>;

Error jwks_error(std::string message) {
  return Error{rpc_code::kInvalidParams, "JWKS: " + std::move(message)};
}

// Text from the document in a message only when it is short printable ASCII.
std::string printable(std::string_view s) {
  bool plain = s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return plain ? "\"" + std::string(s) + "\"" : std::string("(unprintable)");
}

const unsigned char* bytes(const std::string& s) noexcept {
  return reinterpret_cast<const unsigned char*>(s.data());
}

// EVP_PKEY_fromdata with the parameters `push` adds to a builder. OpenSSL checks the values as it
// imports them (an EC point must lie on the curve); errors are cleared so they cannot surface in
// an unrelated later ERR_get_error (the TLS code reads the queue).
template <class Push>
PkeyPtr from_data(const char* type, Push push) {
  std::unique_ptr<OSSL_PARAM_BLD, BldFree> bld(OSSL_PARAM_BLD_new());
  if (!bld || !push(bld.get())) return nullptr;
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(bld.get()));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  EVP_PKEY* raw = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    ERR_clear_error();
    return nullptr;
  }
  return PkeyPtr(raw);
}

// A base64url member as bytes; false (with `why`) when absent, not a string or not base64url.
bool b64_member(simdjson::dom::object& jwk, const char* name, std::string& out, std::string& why) {
  std::string_view text;
  if (jwk[name].get_string().get(text)) {
    why = std::string("no ") + name + " string";
    return false;
  }
  if (!base64url_decode(text, out)) {
    why = std::string(name) + " is not unpadded base64url";
    return false;
  }
  return true;
}

PkeyPtr rsa_key(simdjson::dom::object& jwk, std::string& why) {
  std::string n, e;
  if (!b64_member(jwk, "n", n, why) || !b64_member(jwk, "e", e, why)) return nullptr;
  BnPtr bn_n(BN_bin2bn(bytes(n), static_cast<int>(n.size()), nullptr));
  BnPtr bn_e(BN_bin2bn(bytes(e), static_cast<int>(e.size()), nullptr));
  if (!bn_n || !bn_e) {
    why = "cannot read n or e";
    return nullptr;
  }
  // BN_num_bits ignores leading zero bytes, so a padded modulus is measured by its value.
  int bits = BN_num_bits(bn_n.get());
  if (bits < KeySet::kMinRsaBits || bits > KeySet::kMaxRsaBits) {
    why = "RSA key of " + std::to_string(bits) + " bits (" + std::to_string(KeySet::kMinRsaBits) + ".." +
          std::to_string(KeySet::kMaxRsaBits) + " accepted)";
    return nullptr;
  }
  // e = 65537 in practice; a huge or even exponent is not a real RSA public key.
  if (BN_num_bits(bn_e.get()) > 64 || !BN_is_odd(bn_e.get()) || BN_is_one(bn_e.get())) {
    why = "RSA exponent e is not an odd number between 3 and 2^64";
    return nullptr;
  }
  PkeyPtr key = from_data("RSA", [&](OSSL_PARAM_BLD* b) {
    return OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_N, bn_n.get()) == 1 &&
           OSSL_PARAM_BLD_push_BN(b, OSSL_PKEY_PARAM_RSA_E, bn_e.get()) == 1;
  });
  if (!key) why = "OpenSSL refused the RSA key";
  return key;
}

PkeyPtr ec_p256_key(simdjson::dom::object& jwk, std::string& why) {
  std::string x, y;
  if (!b64_member(jwk, "x", x, why) || !b64_member(jwk, "y", y, why)) return nullptr;
  // RFC 7518 §6.2.1.2: each coordinate is the full 32 bytes, leading zeros kept.
  if (x.size() != 32 || y.size() != 32) {
    why = "P-256 coordinates must be 32 bytes each";
    return nullptr;
  }
  std::array<unsigned char, 65> point{};
  point[0] = 0x04;  // uncompressed SEC1 point: 04 || x || y
  std::copy(x.begin(), x.end(), point.begin() + 1);
  std::copy(y.begin(), y.end(), point.begin() + 33);
  PkeyPtr key = from_data("EC", [&](OSSL_PARAM_BLD* b) {
    return OSSL_PARAM_BLD_push_utf8_string(b, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
           OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1;
  });
  if (!key) {
    why = "the point is not on P-256";
    return nullptr;
  }
  // Belt and braces: the import checks the point; the public check also refuses the point at infinity.
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr));
  if (!ctx || EVP_PKEY_public_check(ctx.get()) != 1) {
    ERR_clear_error();
    why = "the point is not a valid P-256 public key";
    return nullptr;
  }
  return key;
}

PkeyPtr ed25519_key(simdjson::dom::object& jwk, std::string& why) {
  std::string x;
  if (!b64_member(jwk, "x", x, why)) return nullptr;
  if (x.size() != 32) {
    why = "Ed25519 x must be 32 bytes";
    return nullptr;
  }
  PkeyPtr key = from_data("ED25519", [&](OSSL_PARAM_BLD* b) {
    return OSSL_PARAM_BLD_push_octet_string(b, OSSL_PKEY_PARAM_PUB_KEY, x.data(), x.size()) == 1;
  });
  if (!key) why = "OpenSSL refused the Ed25519 key";
  return key;
}

// Reads one JWK. Returns nullopt with `why` set when the key is to be skipped.
std::optional<VerifyKey> read_jwk(simdjson::dom::element item, std::string& kid_for_message, std::string& why) {
  simdjson::dom::object jwk;
  if (item.get_object().get(jwk)) {
    why = "not a JSON object";
    return std::nullopt;
  }
  VerifyKey out;
  simdjson::dom::element v;
  if (!jwk["kid"].get(v)) {
    std::string_view kid;
    if (v.get_string().get(kid)) {
      why = "kid is not a string";
      return std::nullopt;
    }
    kid_for_message = printable(kid);
    if (kid.size() > KeySet::kMaxKidBytes) {
      why = "kid longer than " + std::to_string(KeySet::kMaxKidBytes) + " bytes";
      return std::nullopt;
    }
    out.kid = std::string(kid);
  }
  std::string_view kty;
  if (jwk["kty"].get_string().get(kty)) {
    why = "no kty string";
    return std::nullopt;
  }
  if (kty == "oct") {
    why = "a symmetric (oct) key; a JWKS is public, so its keys are never HMAC secrets";
    return std::nullopt;
  }
  // A private key in a public document: the issuer is misconfigured; do not become its keeper.
  if (!jwk["d"].get(v)) {
    why = "carries private key material (d)";
    return std::nullopt;
  }
  if (!jwk["use"].get(v)) {
    std::string_view use;
    if (v.get_string().get(use) || use != "sig") {
      why = "use is not \"sig\"";
      return std::nullopt;
    }
  }
  if (!jwk["key_ops"].get(v)) {
    simdjson::dom::array ops;
    bool verify = false;
    if (!v.get_array().get(ops)) {
      for (auto op : ops) {
        std::string_view s;
        if (!op.get_string().get(s) && s == "verify") verify = true;
      }
    }
    if (!verify) {
      why = "key_ops does not include \"verify\"";
      return std::nullopt;
    }
  }

  std::uint8_t kty_algs = 0;
  PkeyPtr key;
  if (kty == "RSA") {
    kty_algs = jws_alg_bit(JwsAlg::RS256) | jws_alg_bit(JwsAlg::PS256);
    key = rsa_key(jwk, why);
  } else if (kty == "EC" || kty == "OKP") {
    std::string_view crv;
    if (jwk["crv"].get_string().get(crv)) {
      why = "no crv string";
      return std::nullopt;
    }
    if (kty == "EC" && crv == "P-256") {
      kty_algs = jws_alg_bit(JwsAlg::ES256);
      key = ec_p256_key(jwk, why);
    } else if (kty == "OKP" && crv == "Ed25519") {
      kty_algs = jws_alg_bit(JwsAlg::EdDSA);
      key = ed25519_key(jwk, why);
    } else {
      why = std::string(kty) + " curve " + printable(crv) + " is not supported (P-256, Ed25519)";
      return std::nullopt;
    }
  } else {
    why = "kty " + printable(kty) + " is not supported (RSA, EC, OKP)";
    return std::nullopt;
  }
  if (!key) return std::nullopt;

  out.algs = kty_algs;
  if (!jwk["alg"].get(v)) {
    std::string_view name;
    if (v.get_string().get(name)) {
      why = "alg is not a string";
      return std::nullopt;
    }
    auto alg = jws_alg_from_name(name);
    if (!alg) {
      why = "alg " + printable(name) + " is not supported (RS256, PS256, ES256, EdDSA)";
      return std::nullopt;
    }
    if ((kty_algs & jws_alg_bit(*alg)) == 0) {
      why = "alg " + std::string(name) + " does not fit a " + std::string(kty) + " key";
      return std::nullopt;
    }
    out.algs = jws_alg_bit(*alg);  // the issuer pinned one algorithm: RS256 keys do not verify PS256
  }
  out.key = std::shared_ptr<EVP_PKEY>(key.release(), PkeyFree{});
  return out;
}

}  // namespace

std::optional<JwsAlg> jws_alg_from_name(std::string_view name) noexcept {
  if (name == "RS256") return JwsAlg::RS256;
  if (name == "PS256") return JwsAlg::PS256;
  if (name == "ES256") return JwsAlg::ES256;
  if (name == "EdDSA") return JwsAlg::EdDSA;
  return std::nullopt;
}

std::string_view jws_alg_name(JwsAlg a) noexcept {
  switch (a) {
    case JwsAlg::RS256:
      return "RS256";
    case JwsAlg::PS256:
      return "PS256";
    case JwsAlg::ES256:
      return "ES256";
    case JwsAlg::EdDSA:
      return "EdDSA";
  }
  return "unknown";
}

Result<KeySet> KeySet::parse(std::string_view jwks_json) {
  if (jwks_json.size() > kMaxBytes) {
    return jwks_error("document of " + std::to_string(jwks_json.size()) + " bytes, over the " +
                      std::to_string(kMaxBytes) + " accepted");
  }
  // A JWKS arrives at start and on rotation, not per request: a parser of its own, freed after.
  simdjson::dom::parser parser;
  simdjson::dom::object doc;
  // An empty view may have a null data(), which simdjson would memcpy from.
  if (jwks_json.empty() || parser.parse(jwks_json.data(), jwks_json.size()).get(doc)) {
    return jwks_error("not a JSON object");
  }
  simdjson::dom::array list;
  if (doc["keys"].get_array().get(list)) return jwks_error("no \"keys\" array");
  if (list.size() > kMaxKeys) {
    return jwks_error(std::to_string(list.size()) + " keys, over the " + std::to_string(kMaxKeys) + " accepted");
  }
  KeySet set;
  std::size_t index = 0;
  for (auto item : list) {
    std::string kid_text, why;
    auto key = read_jwk(item, kid_text, why);
    if (key) {
      set.keys_.push_back(std::move(*key));
    } else {
      std::string where = "keys[" + std::to_string(index) + "]";
      if (!kid_text.empty()) where += " (kid " + kid_text + ")";
      set.skip_reasons_.push_back(where + ": " + why);
    }
    ++index;
  }
  if (set.keys_.empty()) {
    std::string msg = "no usable key";
    if (!set.skip_reasons_.empty()) msg += " (" + set.skip_reasons_.front() + ")";
    return jwks_error(msg);
  }
  // Two keys under one name for one algorithm: a token naming that kid would be checked against
  // either, which hides a rotation mistake at the issuer. Refused, so it is seen.
  for (std::size_t i = 0; i < set.keys_.size(); ++i) {
    for (std::size_t j = i + 1; j < set.keys_.size(); ++j) {
      const VerifyKey& a = set.keys_[i];
      const VerifyKey& b = set.keys_[j];
      if (!a.kid.empty() && a.kid == b.kid && (a.algs & b.algs) != 0) {
        return jwks_error("two keys with kid " + printable(a.kid) + " for the same algorithm");
      }
    }
  }
  return set;
}

std::vector<const VerifyKey*> KeySet::candidates(std::string_view kid, JwsAlg alg) const {
  std::vector<const VerifyKey*> out;
  const std::uint8_t bit = jws_alg_bit(alg);
  for (const VerifyKey& k : keys_) {
    if ((k.algs & bit) == 0) continue;
    if (!kid.empty() && k.kid != kid) continue;
    out.push_back(&k);
    if (out.size() == kMaxKeys) break;
  }
  return out;
}

bool KeySet::has_kid(std::string_view kid) const noexcept {
  if (kid.empty()) return false;
  return std::any_of(keys_.begin(), keys_.end(), [kid](const VerifyKey& k) { return k.kid == kid; });
}

}  // namespace mcpfan::detail::oauth

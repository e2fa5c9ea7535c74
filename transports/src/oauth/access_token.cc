#include "oauth/access_token.h"

#include "mcp/auth.h"
#include "oauth/base64url.h"
#include "oauth/claims.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

namespace mcpfan::detail::oauth {

namespace {

constexpr std::size_t kMaxUris = 64;     // as ClientAuth::kMaxUris: the same claim, the same bound
constexpr std::size_t kMaxScopes = 256;  // far above any real token; a bound on what a claim can make us keep

TokenError fail(TokenFailure kind, std::string message) {
  return TokenError{kind, std::move(message)};
}

// Names untrusted text in a message only when it is short and plainly printable.
std::string printable(std::string_view s) {
  bool plain = !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  return plain ? "\"" + std::string(s) + "\"" : std::string("(unprintable)");
}

// One decoded JWS part as a JSON object with unique member names: parsers disagree on repeated
// names (first or last wins), and a token that means one thing here and another elsewhere is refused.
bool parse_unique_object(simdjson::dom::parser& parser, const std::string& json, simdjson::dom::object& out) {
  if (parser.parse(json.data(), json.size()).get(out)) return false;
  std::vector<std::string_view> keys;
  for (auto field : out) keys.push_back(field.key);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
}

struct Parts {
  std::string_view signing_input;  // "header.payload", what the signature covers
  std::string header, payload, signature;
};

bool split_token(std::string_view token, Parts& out) {
  if (token.empty() || token.size() > kMaxTokenBytes) return false;
  auto dot1 = token.find('.');
  if (dot1 == std::string_view::npos) return false;
  auto dot2 = token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) return false;
  out.signing_input = token.substr(0, dot2);
  return base64url_decode(token.substr(0, dot1), out.header) &&
         base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), out.payload) &&
         base64url_decode(token.substr(dot2 + 1), out.signature);
}

// ---- signatures (RFC 7518 §3.3-3.5, RFC 8037 §3.1) -------------------------------------------

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const noexcept { EVP_MD_CTX_free(c); }
};

// SHA-256 fetched once: EVP_sha256() makes OpenSSL 3 look the implementation up again on every
// EVP_DigestVerifyInit. The fetched EVP_MD is kept for the life of the process (immutable, shared).
const EVP_MD* sha256() noexcept {
  static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return md != nullptr ? md : EVP_sha256();
}

// An ES256 signature is r and s as 32 big-endian bytes each (RFC 7518 §3.4); OpenSSL wants DER.
bool es256_to_der(std::string_view sig, std::string& der) {
  if (sig.size() != 64) return false;
  std::unique_ptr<ECDSA_SIG, void (*)(ECDSA_SIG*)> ecdsa(ECDSA_SIG_new(), &ECDSA_SIG_free);
  const auto* b = reinterpret_cast<const unsigned char*>(sig.data());
  BIGNUM* r = BN_bin2bn(b, 32, nullptr);
  BIGNUM* s = BN_bin2bn(b + 32, 32, nullptr);
  if (!ecdsa || !r || !s || ECDSA_SIG_set0(ecdsa.get(), r, s) != 1) {  // set0 owns r and s only on success
    BN_free(r);
    BN_free(s);
    return false;
  }
  int len = i2d_ECDSA_SIG(ecdsa.get(), nullptr);
  if (len <= 0) return false;
  der.resize(static_cast<std::size_t>(len));
  auto* p = reinterpret_cast<unsigned char*>(der.data());
  return i2d_ECDSA_SIG(ecdsa.get(), &p) == len;
}

bool verify_signature(const VerifyKey& k, JwsAlg alg, std::string_view input, std::string_view sig) {
  EVP_PKEY* key = k.key.get();
  if (key == nullptr) return false;
  std::string der;
  switch (alg) {
    case JwsAlg::RS256:
    case JwsAlg::PS256:
      // RFC 7518 §3.3: the signature is exactly as long as the modulus.
      if (sig.size() != static_cast<std::size_t>(EVP_PKEY_get_size(key))) return false;
      break;
    case JwsAlg::ES256:
      if (!es256_to_der(sig, der)) return false;
      sig = der;
      break;
    case JwsAlg::EdDSA:
      if (sig.size() != 64) return false;
      break;
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  if (!ctx) return false;
  EVP_PKEY_CTX* pctx = nullptr;  // owned by ctx
  // Ed25519 is one-shot over the whole message and takes no digest (RFC 8032 PureEdDSA).
  const EVP_MD* md = alg == JwsAlg::EdDSA ? nullptr : sha256();
  bool ok = EVP_DigestVerifyInit(ctx.get(), &pctx, md, nullptr, key) == 1;
  if (ok && alg == JwsAlg::PS256) {
    // RFC 7518 §3.5: MGF1 with SHA-256 and a salt as long as the hash (32 bytes), nothing else.
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, sha256()) == 1 && EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, 32) == 1;
  }
  ok = ok && EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                              reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  // A failed check leaves reasons on OpenSSL's per-thread queue; the TLS code of this thread
  // reads that queue, so nothing is left on it.
  if (!ok) ERR_clear_error();
  return ok;
}

// `typ` (RFC 9068 §2.1 "at+jwt"; plain "JWT" from issuers that do not follow it). Media types are
// case-insensitive and may carry the "application/" prefix (RFC 7515 §4.1.9).
bool access_token_type(std::string_view typ) {
  std::string t(typ);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string_view v = t;
  if (v.substr(0, 12) == "application/") v.remove_prefix(12);
  return v == "at+jwt" || v == "jwt";
}

// ---- claims ------------------------------------------------------------------------------------

// A NumericDate (RFC 7519 §2): an integer, or a finite number rounded towards the stricter side
// (`round_up` for nbf/iat, down for exp), so a fraction never buys a token a second.
std::optional<TokenError> time_claim(simdjson::dom::object& claims, const char* name, bool round_up,
                                     std::optional<std::int64_t>& out) {
  simdjson::dom::element v;
  if (claims[name].get(v)) return std::nullopt;  // absent
  constexpr double kMaxSeconds = 1e15;           // beyond any date; keeps the conversion defined
  std::int64_t i = 0;
  double d = 0;
  if (v.type() == simdjson::dom::element_type::INT64 && !v.get_int64().get(i)) {
    out = i;
  } else if (v.type() == simdjson::dom::element_type::DOUBLE && !v.get_double().get(d) && std::isfinite(d) &&
             std::fabs(d) < kMaxSeconds) {
    out = static_cast<std::int64_t>(round_up ? std::ceil(d) : std::floor(d));
  } else {
    return fail(TokenFailure::BadClaims, std::string("claim ") + name + " must be a number of seconds since the epoch");
  }
  return std::nullopt;
}

// A string claim that is optional: false (with an error) when present but not a string.
std::optional<TokenError> optional_string(simdjson::dom::object& claims, std::string_view name, std::string_view& out,
                                          bool& present) {
  present = false;
  simdjson::dom::element v;
  if (name.empty() || claims[name].get(v)) return std::nullopt;
  if (v.get_string().get(out)) return fail(TokenFailure::BadClaims, "claim " + printable(name) + " must be a string");
  present = true;
  return std::nullopt;
}

void add_scope(std::vector<std::string>& scopes, std::string_view s) {
  if (s.empty() || std::find(scopes.begin(), scopes.end(), s) != scopes.end()) return;
  scopes.emplace_back(s);
}

// `scope` is a space-separated string (RFC 9068 §2.2.3, RFC 8693 §4.2); `scp` is an array
// (Okta) or, in Entra ID tokens, a space-separated string. Both shapes are read from both names.
std::optional<TokenError> read_scopes(simdjson::dom::object& claims, const char* name, std::vector<std::string>& out) {
  simdjson::dom::element v;
  if (claims[name].get(v)) return std::nullopt;
  auto bad = [&] {
    return fail(TokenFailure::BadClaims, std::string("claim ") + name + " must be a string or an array of strings");
  };
  std::string_view text;
  simdjson::dom::array list;
  if (!v.get_string().get(text)) {
    while (!text.empty()) {
      auto sp = text.find(' ');
      add_scope(out, text.substr(0, sp));
      text = sp == std::string_view::npos ? std::string_view{} : text.substr(sp + 1);
    }
  } else if (!v.get_array().get(list)) {
    for (auto item : list) {
      std::string_view s;
      if (item.get_string().get(s)) return bad();
      add_scope(out, s);
    }
  } else {
    return bad();
  }
  if (out.size() > kMaxScopes) {
    return fail(TokenFailure::BadClaims, "more than " + std::to_string(kMaxScopes) + " scopes");
  }
  return std::nullopt;
}

std::optional<TokenError> check_audience(simdjson::dom::object& claims, const TokenPolicy& policy, bool required) {
  simdjson::dom::element v;
  if (claims["aud"].get(v)) {
    if (!required) return std::nullopt;
    return fail(TokenFailure::WrongAudience, "token has no aud claim");
  }
  auto ours = [&](std::string_view a) {
    return std::find(policy.audiences.begin(), policy.audiences.end(), a) != policy.audiences.end();
  };
  std::string_view one;
  simdjson::dom::array list;
  bool match = false;
  if (!v.get_string().get(one)) {
    match = ours(one);
  } else if (!v.get_array().get(list)) {
    for (auto item : list) {
      std::string_view a;
      if (item.get_string().get(a)) return fail(TokenFailure::BadClaims, "claim aud must hold strings only");
      match = match || ours(a);
    }
  } else {
    return fail(TokenFailure::BadClaims, "claim aud must be a string or an array of strings");
  }
  if (!match) return fail(TokenFailure::WrongAudience, "token aud names none of the configured audiences");
  return std::nullopt;
}

std::optional<TokenError> read_tenant(simdjson::dom::object& claims, const TokenPolicy& policy, std::string& out) {
  if (policy.tenant_claim.empty()) {
    if (!valid_tenant_name(policy.fixed_tenant)) {
      return fail(TokenFailure::BadTenant, "the configured fixed tenant is not 1-64 characters of [A-Za-z0-9._-]");
    }
    out = policy.fixed_tenant;
    return std::nullopt;
  }
  const std::string name = printable(policy.tenant_claim);
  simdjson::dom::element v;
  if (claims[policy.tenant_claim].get(v)) return fail(TokenFailure::MissingTenant, "token has no " + name + " claim");
  std::string_view t;
  if (v.get_string().get(t)) return fail(TokenFailure::BadTenant, "tenant claim " + name + " must be a string");
  if (t.empty()) return fail(TokenFailure::MissingTenant, "tenant claim " + name + " is empty");
  // Never rewritten into a valid name: two issuers' tenants must not collapse onto one.
  if (!valid_tenant_name(t)) {
    return fail(TokenFailure::BadTenant, "tenant claim " + name + " is not 1-64 characters of [A-Za-z0-9._-]");
  }
  out = std::string(t);
  return std::nullopt;
}

std::optional<TokenError> read_uris(simdjson::dom::object& claims, const std::string& claim, AccessClaims& out) {
  simdjson::dom::element v;
  if (claim.empty() || claims[claim].get(v)) return std::nullopt;  // unrestricted
  simdjson::dom::array list;
  const std::string name = printable(claim);
  if (v.get_array().get(list)) return fail(TokenFailure::BadClaims, "claim " + name + " must be an array of URIs");
  if (list.size() > kMaxUris) {
    return fail(TokenFailure::BadClaims, "claim " + name + " has more than " + std::to_string(kMaxUris) + " entries");
  }
  out.uris_restricted = true;
  for (auto item : list) {
    std::string_view u;
    if (item.get_string().get(u) || u.empty()) {
      return fail(TokenFailure::BadClaims, "claim " + name + " must hold non-empty strings");
    }
    out.uri_prefixes.emplace_back(u);
  }
  return std::nullopt;
}

}  // namespace

std::optional<TokenError> read_access_claims(simdjson::dom::object claims, const TokenPolicy& policy, std::int64_t now,
                                             ClaimRequirements required, AccessClaims& out) {
  // 1. Whose token: the issuer, then the audience (RFC 9068 §4).
  std::string_view iss;
  bool has_iss = false;
  if (auto e = optional_string(claims, "iss", iss, has_iss)) return e;
  if (has_iss ? iss != policy.issuer : required.iss) {
    return fail(TokenFailure::WrongIssuer, has_iss ? "token iss is not the configured issuer" : "token has no iss");
  }
  if (auto e = check_audience(claims, policy, required.aud)) return e;

  // 2. When. RFC 7519 §4.1.4: expired from the `exp` second on.
  std::optional<std::int64_t> exp, nbf, iat;
  if (auto e = time_claim(claims, "exp", false, exp)) return e;
  if (auto e = time_claim(claims, "nbf", true, nbf)) return e;
  if (auto e = time_claim(claims, "iat", true, iat)) return e;
  const std::int64_t leeway = std::clamp<std::int64_t>(policy.leeway_s, 0, 3600);
  if (!exp && required.exp) return fail(TokenFailure::BadClaims, "token has no exp claim");
  if (exp && now - leeway >= *exp) return fail(TokenFailure::Expired, "token expired at " + std::to_string(*exp));
  if (nbf && now + leeway < *nbf) {
    return fail(TokenFailure::NotYetValid, "token not valid before " + std::to_string(*nbf));
  }
  if (iat && now + leeway < *iat) {
    return fail(TokenFailure::IssuedInFuture, "token issued in the future (" + std::to_string(*iat) + ")");
  }
  out.exp = exp.value_or(0);

  // 3. Who and what.
  if (auto e = read_tenant(claims, policy, out.tenant)) return e;
  if (auto e = read_uris(claims, policy.uris_claim, out)) return e;
  std::string_view s;
  bool present = false;
  if (auto e = optional_string(claims, policy.subject_claim, s, present)) return e;
  if (present) out.subject = std::string(s);
  if (auto e = optional_string(claims, "client_id", s, present)) return e;
  if (!present) {
    if (auto e = optional_string(claims, "azp", s, present)) return e;
  }
  if (present) out.client_id = std::string(s);
  if (auto e = read_scopes(claims, "scope", out.scopes)) return e;
  if (auto e = read_scopes(claims, "scp", out.scopes)) return e;
  return std::nullopt;
}

std::string_view token_failure_name(TokenFailure f) noexcept {
  switch (f) {
    case TokenFailure::Malformed:
      return "malformed";
    case TokenFailure::UnknownKey:
      return "unknown_key";
    case TokenFailure::WrongAlgorithm:
      return "wrong_algorithm";
    case TokenFailure::BadSignature:
      return "bad_signature";
    case TokenFailure::WrongIssuer:
      return "wrong_issuer";
    case TokenFailure::WrongAudience:
      return "wrong_audience";
    case TokenFailure::Expired:
      return "expired";
    case TokenFailure::NotYetValid:
      return "not_yet_valid";
    case TokenFailure::IssuedInFuture:
      return "issued_in_future";
    case TokenFailure::MissingTenant:
      return "missing_tenant";
    case TokenFailure::BadTenant:
      return "bad_tenant";
    case TokenFailure::BadClaims:
      return "bad_claims";
    case TokenFailure::Inactive:
      return "inactive";
  }
  return "unknown";
}

bool AccessClaims::has_scope(std::string_view s) const noexcept {
  return std::find(scopes.begin(), scopes.end(), s) != scopes.end();
}

bool AccessClaims::uri_allowed(std::string_view uri) const noexcept {
  if (!uris_restricted) return true;
  return std::any_of(uri_prefixes.begin(), uri_prefixes.end(),
                     [uri](const std::string& p) { return uri.substr(0, p.size()) == p; });
}

std::optional<TokenPeek> peek_token(std::string_view token) {
  Parts parts;
  if (!split_token(token, parts)) return std::nullopt;
  thread_local simdjson::dom::parser parser;
  TokenPeek out;
  simdjson::dom::object obj;
  if (!parse_unique_object(parser, parts.header, obj)) return std::nullopt;
  std::string_view s;
  if (!obj["kid"].get_string().get(s)) out.kid = std::string(s);
  if (!obj["alg"].get_string().get(s)) out.alg = std::string(s);
  if (!parse_unique_object(parser, parts.payload, obj)) return std::nullopt;
  if (!obj["iss"].get_string().get(s)) out.iss = std::string(s);
  return out;
}

TokenVerdict verify_access_token(std::string_view token, const KeySet& keys, const TokenPolicy& policy,
                                 std::int64_t now_unix_s) {
  if (token.size() > kMaxTokenBytes) {
    return fail(TokenFailure::Malformed, "token longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  Parts parts;
  if (!split_token(token, parts)) return fail(TokenFailure::Malformed, "token is not three base64url parts");

  // One parser per thread, reused: a fresh one allocates its buffers for every token, on a worker
  // loop. The header is read completely before the payload reuses it.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object header;
  if (!parse_unique_object(parser, parts.header, header)) {
    return fail(TokenFailure::Malformed, "token header is not a JSON object with unique members");
  }
  simdjson::dom::element v;
  if (!header["crit"].get(v)) {  // RFC 7515 §4.1.11: extensions we do not implement must be refused
    return fail(TokenFailure::Malformed, "token header names critical extensions (crit), none are supported");
  }
  if (!header["typ"].get(v)) {
    std::string_view typ;
    if (v.get_string().get(typ) || !access_token_type(typ)) {
      return fail(TokenFailure::Malformed, "token typ is not at+jwt or JWT");
    }
  }
  std::string_view alg_name;
  if (header["alg"].get_string().get(alg_name)) return fail(TokenFailure::Malformed, "token header has no alg string");
  // 1. The algorithm is one of ours before any key is looked at: "none" and HS* never verify,
  //    whatever the JWKS held (it holds no symmetric key: jwks.h).
  auto alg = jws_alg_from_name(alg_name);
  if (!alg) {
    return fail(TokenFailure::WrongAlgorithm,
                "token algorithm " + printable(alg_name) + " is not accepted (RS256, PS256, ES256, EdDSA)");
  }
  // 2. The key: by kid when the token names one. Header members that carry or point at a key
  //    (jwk, jku, x5u, x5c) are ignored: the issuer's JWKS is the only source of keys.
  std::string_view kid;
  if (!header["kid"].get(v) && v.get_string().get(kid))
    return fail(TokenFailure::Malformed, "token kid is not a string");
  if (!kid.empty() && !keys.has_kid(kid)) return fail(TokenFailure::UnknownKey, "token kid is not in the JWKS");
  auto candidates = keys.candidates(kid, *alg);
  if (candidates.empty()) {
    if (keys.size() == 0) return fail(TokenFailure::UnknownKey, "no keys loaded");
    return fail(TokenFailure::WrongAlgorithm, "no key " + std::string(kid.empty() ? "" : "of that kid ") + "allows " +
                                                  std::string(jws_alg_name(*alg)));
  }
  // 3. The signature, before anything in the payload is read.
  bool good = std::any_of(candidates.begin(), candidates.end(), [&](const VerifyKey* k) {
    return verify_signature(*k, *alg, parts.signing_input, parts.signature);
  });
  if (!good) return fail(TokenFailure::BadSignature, "token signature does not verify");

  // 4. The claims.
  simdjson::dom::object payload;
  if (!parse_unique_object(parser, parts.payload, payload)) {
    return fail(TokenFailure::Malformed, "token payload is not a JSON object with unique members");
  }
  AccessClaims claims;
  if (auto e = read_access_claims(payload, policy, now_unix_s, ClaimRequirements{}, claims)) return std::move(*e);
  return claims;
}

}  // namespace mcpfan::detail::oauth

#include "mcp/auth.h"

#include "oauth/base64url.h"
#include "server/log.h"

#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/decoder.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace mcpfan::detail {

namespace {

constexpr std::size_t kMaxKeyFileBytes = 1 << 20;  // a key file is small; this stops a mistaken /dev/zero
constexpr std::size_t kMaxTenantChars = 64;
constexpr std::int64_t kMaxLeewaySeconds = 3600;

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Tenants become metrics label values and log fields, hence the narrow alphabet.
bool valid_tenant(std::string_view t) noexcept {
  if (t.empty() || t.size() > kMaxTenantChars) return false;
  return std::all_of(t.begin(), t.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

Error config_error(std::string message) { return Error{rpc_code::kInvalidParams, std::move(message)}; }

Result<std::string> read_small_file(const std::string& path, std::string_view what) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return config_error(std::string(what) + " " + path + ": " + std::strerror(errno));
  std::string data;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) {
    data.append(buf, n);
    if (data.size() > kMaxKeyFileBytes) return config_error(std::string(what) + " " + path + ": larger than 1 MiB");
  }
  if (std::ferror(f.get())) return config_error(std::string(what) + " " + path + ": read error");
  return data;
}

// ---- public key: PEM → (algorithm, parsed key) -----------------------------------------------

struct PkeyFree {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct DecoderFree {
  void operator()(OSSL_DECODER_CTX* c) const noexcept { OSSL_DECODER_CTX_free(c); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

struct PublicKey {
  bool es256 = false;  // else RS256
  PkeyPtr key;
};

Result<PublicKey> parse_public_key(const std::string& pem, const std::string& path) {
  auto fail = [&](std::string why) { return config_error("public key file " + path + ": " + why); };
  // A private key here would still verify, but it means the signing key sits on the server.
  auto begin = pem.find("-----BEGIN ");
  if (begin != std::string::npos &&
      pem.substr(begin, pem.find('\n', begin) - begin).find("PRIVATE") != std::string::npos) {
    return fail("holds a private key; give the public key (openssl pkey -in KEY -pubout)");
  }
  // OSSL_DECODER reads both "PUBLIC KEY" (SubjectPublicKeyInfo) and "RSA PUBLIC KEY" (PKCS#1).
  EVP_PKEY* raw = nullptr;
  std::unique_ptr<OSSL_DECODER_CTX, DecoderFree> dctx(
      OSSL_DECODER_CTX_new_for_pkey(&raw, "PEM", nullptr, nullptr, EVP_PKEY_PUBLIC_KEY, nullptr, nullptr));
  if (!dctx) return fail("cannot set up a PEM decoder");
  const auto* data = reinterpret_cast<const unsigned char*>(pem.data());
  std::size_t len = pem.size();
  if (OSSL_DECODER_from_data(dctx.get(), &data, &len) != 1 || raw == nullptr) {
    ERR_clear_error();
    return fail("not a PEM public key (expected \"BEGIN PUBLIC KEY\" or \"BEGIN RSA PUBLIC KEY\")");
  }
  PkeyPtr key(raw);

  PublicKey out;
  if (EVP_PKEY_is_a(key.get(), "RSA")) {
    int bits = EVP_PKEY_get_bits(key.get());
    if (bits < 2048) return fail("RSA key of " + std::to_string(bits) + " bits; RS256 needs at least 2048");
  } else if (EVP_PKEY_is_a(key.get(), "EC")) {
    char group[64] = {};
    std::size_t glen = 0;
    if (EVP_PKEY_get_group_name(key.get(), group, sizeof group, &glen) != 1)
      return fail("EC key without a named curve");
    if (std::string_view(group, glen) != "prime256v1") {
      return fail("EC key on curve " + std::string(group, glen) + "; ES256 needs P-256 (prime256v1)");
    }
    out.es256 = true;
  } else {
    const char* type = EVP_PKEY_get0_type_name(key.get());
    return fail(std::string("key type ") + (type ? type : "unknown") +
                " is not supported (RSA for RS256, EC P-256 for ES256)");
  }
  out.key = std::move(key);
  return out;
}

// ---- compact JWS parsing ---------------------------------------------------------------------

// Strict unpadded base64url (RFC 7515 §2), the one decoder static and OAuth tokens share.
using oauth::base64url_decode;

// ---- signatures (RFC 7518 §3), with OpenSSL directly ------------------------------------------
// Not libjwt's jwt_decode: in 1.10.2 it re-parses the PEM key on every call (about 0.6 ms with
// OpenSSL 3.0, 30 times the RSA verification itself), it verifies with whichever `alg` the token
// names, and it reads the token with a second JSON parser that can disagree with ours.

bool verify_hs256(std::string_view input, std::string_view sig, const std::string& secret) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t len = 0;
  if (!EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret.data(), secret.size(),
                 reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, sizeof mac, &len)) {
    return false;
  }
  return sig.size() == len && CRYPTO_memcmp(mac, sig.data(), len) == 0;
}

// An ES256 signature is r and s as 32 big-endian bytes each (RFC 7518 §3.4); OpenSSL wants DER.
bool es256_to_der(std::string_view sig, std::string& der) {
  if (sig.size() != 64) return false;
  std::unique_ptr<ECDSA_SIG, void (*)(ECDSA_SIG*)> ecdsa(ECDSA_SIG_new(), &ECDSA_SIG_free);
  const auto* bytes = reinterpret_cast<const unsigned char*>(sig.data());
  BIGNUM* r = BN_bin2bn(bytes, 32, nullptr);
  BIGNUM* s = BN_bin2bn(bytes + 32, 32, nullptr);
  if (!ecdsa || !r || !s || ECDSA_SIG_set0(ecdsa.get(), r, s) != 1) {  // set0 owns r and s only on success
    BN_free(r);
    BN_free(s);
    return false;
  }
  unsigned char* out = nullptr;
  int n = i2d_ECDSA_SIG(ecdsa.get(), &out);
  if (n <= 0) return false;
  der.assign(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
  OPENSSL_free(out);
  return true;
}

// RS256 (RSASSA-PKCS1-v1_5, OpenSSL's default RSA padding) or ES256 over SHA-256. The EVP_PKEY is
// only read, which OpenSSL allows from several threads at once.
bool verify_pkey(EVP_PKEY* key, bool es256, std::string_view input, std::string_view sig) {
  std::string der;
  if (es256) {
    if (!es256_to_der(sig, der)) return false;
    sig = der;
  }
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  bool ok = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) == 1 &&
            EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                             reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
  if (!ok) ERR_clear_error();  // a refused token is not an error for whoever uses OpenSSL next on this thread
  return ok;
}

AuthError fail(AuthFailure kind, std::string message) { return AuthError{kind, std::move(message)}; }

// Parses one decoded JWS part as a JSON object with unique member names. Duplicates are refused
// because parsers disagree on them (simdjson answers the first "alg", jansson, which libjwt uses,
// the last): a token that means one thing here and another to some other verifier is refused.
std::optional<AuthError> parse_object(simdjson::dom::parser& parser, const std::string& json, std::string_view part,
                                      simdjson::dom::object& out) {
  if (parser.parse(json.data(), json.size()).get(out)) {
    return fail(AuthFailure::Malformed, "token " + std::string(part) + " is not a JSON object");
  }
  std::vector<std::string_view> keys;
  for (auto field : out) keys.push_back(field.key);
  std::sort(keys.begin(), keys.end());
  if (std::adjacent_find(keys.begin(), keys.end()) != keys.end()) {
    return fail(AuthFailure::Malformed, "token " + std::string(part) + " repeats a member name");
  }
  return std::nullopt;
}

// Names an untrusted `alg` in a message only when it looks like an algorithm name.
std::string printable_alg(std::string_view alg) {
  bool plain = !alg.empty() && alg.size() <= 16 &&
               std::all_of(alg.begin(), alg.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  return plain ? std::string(alg) : std::string("(unrecognised)");
}

// exp/nbf: RFC 7519 allows fractional NumericDates; we accept integers only, so a float or a
// string is an error rather than a silently truncated time.
std::optional<AuthError> int_claim(simdjson::dom::object& claims, const char* name, std::optional<std::int64_t>& out) {
  simdjson::dom::element v;
  if (claims[name].get(v)) return std::nullopt;  // absent
  std::int64_t n;
  if (v.type() != simdjson::dom::element_type::INT64 || v.get_int64().get(n)) {
    return fail(AuthFailure::BadClaims, std::string("claim ") + name + " must be an integer (seconds since the epoch)");
  }
  out = n;
  return std::nullopt;
}

struct Claims {
  ClientIdentity id;
  std::optional<std::int64_t> exp, nbf;
};

// The shape of every claim we use; the times are judged by check_times().
std::optional<AuthError> read_claims(simdjson::dom::object& claims, Claims& out) {
  if (auto e = int_claim(claims, "exp", out.exp)) return e;
  if (auto e = int_claim(claims, "nbf", out.nbf)) return e;
  ClientIdentity& id = out.id;
  id.exp = out.exp.value_or(0);

  simdjson::dom::element tenant;
  if (claims["tenant"].get(tenant)) return fail(AuthFailure::MissingTenant, "token has no tenant claim");
  std::string_view t;
  if (tenant.get_string().get(t)) return fail(AuthFailure::BadClaims, "claim tenant must be a string");
  if (t.empty()) return fail(AuthFailure::MissingTenant, "token tenant claim is empty");
  if (!valid_tenant(t))
    return fail(AuthFailure::BadClaims, "claim tenant must be at most 64 characters of [A-Za-z0-9._-]");
  id.tenant = std::string(t);

  simdjson::dom::element sub;
  if (!claims["sub"].get(sub)) {
    std::string_view subject;
    if (sub.get_string().get(subject)) return fail(AuthFailure::BadClaims, "claim sub must be a string");
    id.subject = std::string(subject);
  }

  simdjson::dom::element uris;
  if (claims["uris"].get(uris)) return std::nullopt;  // unrestricted
  simdjson::dom::array list;
  if (uris.get_array().get(list)) return fail(AuthFailure::BadClaims, "claim uris must be an array of URI prefixes");
  if (list.size() > ClientAuth::kMaxUris) {
    return fail(AuthFailure::BadClaims,
                "claim uris has more than " + std::to_string(ClientAuth::kMaxUris) + " entries");
  }
  id.uris_restricted = true;
  for (auto item : list) {
    std::string_view u;
    if (item.get_string().get(u) || u.empty()) {
      return fail(AuthFailure::BadClaims, "claim uris[" + std::to_string(id.uri_prefixes.size()) +
                                              "] must be a non-empty string");
    }
    id.uri_prefixes.emplace_back(u);
  }
  return std::nullopt;
}

std::optional<AuthError> check_times(const Claims& c, std::int64_t now, std::int64_t leeway) {
  // RFC 7519 §4.1.4: the token is expired from the `exp` second on.
  if (c.exp && now - leeway >= *c.exp) return fail(AuthFailure::Expired, "token expired at " + std::to_string(*c.exp));
  if (c.nbf && now + leeway < *c.nbf) {
    return fail(AuthFailure::NotYetValid, "token not valid before " + std::to_string(*c.nbf));
  }
  return std::nullopt;
}

}  // namespace

bool valid_tenant_name(std::string_view tenant) noexcept { return valid_tenant(tenant); }

void log_auth_failure(std::string_view scope, std::string_view reason, std::string detail) noexcept {
  // A client that has not been given a token yet (or an OAuth client's first try) is routine.
  const LogLevel level = reason == "missing" ? LogLevel::Info : LogLevel::Warn;
  if (!log::enabled(level)) return;
  try {
    log::line(level, "auth_failed", std::string(scope) + " authentication failed: " + std::move(detail),
              {{"scope", std::string(scope)}, {"reason", std::string(reason)}});
  } catch (...) {  // out of memory: the line is lost, the refusal is not
    log::count_dropped();
  }
}

std::string_view auth_failure_name(AuthFailure kind) noexcept {
  switch (kind) {
    case AuthFailure::Missing: return "missing";
    case AuthFailure::Malformed: return "malformed";
    case AuthFailure::BadSignature: return "bad_signature";
    case AuthFailure::WrongAlgorithm: return "wrong_algorithm";
    case AuthFailure::Expired: return "expired";
    case AuthFailure::NotYetValid: return "not_yet_valid";
    case AuthFailure::MissingTenant: return "missing_tenant";
    case AuthFailure::BadClaims: return "bad_claims";
    case AuthFailure::Rejected: return "rejected";
    case AuthFailure::HostError: return "host_error";
    case AuthFailure::UnknownKey: return "unknown_key";
    case AuthFailure::WrongIssuer: return "wrong_issuer";
    case AuthFailure::WrongAudience: return "wrong_audience";
    case AuthFailure::InsufficientScope: return "insufficient_scope";
    case AuthFailure::Unavailable: return "unavailable";
  }
  return "unknown";
}

bool ClientIdentity::uri_allowed(std::string_view uri) const noexcept {
  if (!uris_restricted) return true;
  return std::any_of(uri_prefixes.begin(), uri_prefixes.end(),
                     [uri](const std::string& p) { return uri.substr(0, p.size()) == p; });
}

std::variant<std::string_view, AuthError> parse_bearer(std::string_view header_value) {
  std::string_view v = trim(header_value);
  if (v.empty()) return fail(AuthFailure::Missing, "no Authorization header");
  constexpr std::string_view kScheme = "bearer ";
  bool scheme_ok = v.size() > kScheme.size() &&
                   std::equal(kScheme.begin(), kScheme.end(), v.begin(), [](char want, char got) {
                     return want == std::tolower(static_cast<unsigned char>(got));
                   });
  if (!scheme_ok) return fail(AuthFailure::Malformed, "Authorization is not \"Bearer <token>\"");
  std::string_view token = v.substr(kScheme.size());
  if (std::any_of(token.begin(), token.end(), is_space)) {
    return fail(AuthFailure::Malformed, "Authorization is not \"Bearer <token>\" (whitespace in the token)");
  }
  return token;
}

Result<ClientAuth> ClientAuth::load(const std::string& secret_file, const std::string& public_key_file,
                                    std::int64_t leeway_s) {
  ClientAuth auth;
  if (leeway_s < 0 || leeway_s > kMaxLeewaySeconds) {
    return config_error("JWT leeway must be 0.." + std::to_string(kMaxLeewaySeconds) + " seconds");
  }
  auth.leeway_s_ = leeway_s;
  if (!secret_file.empty()) {
    auto raw = read_small_file(secret_file, "secret file");
    if (!raw) return raw.error();
    std::string_view s = raw.value();
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);  // editors add a newline; keys never end in one
    if (s.size() < kMinSecretBytes) {
      return config_error("secret file " + secret_file + ": " + std::to_string(s.size()) + " bytes after trimming; " +
                          "HS256 needs at least " + std::to_string(kMinSecretBytes) +
                          " (a short HMAC secret can be brute-forced from one token)");
    }
    auth.secret_ = std::string(s);
  }
  if (!public_key_file.empty()) {
    auto pem = read_small_file(public_key_file, "public key file");
    if (!pem) return pem.error();
    auto key = parse_public_key(pem.value(), public_key_file);
    if (!key) return key.error();
    auth.public_alg_ = key.value().es256 ? PublicAlg::ES256 : PublicAlg::RS256;
    auth.public_key_ = std::shared_ptr<EVP_PKEY>(key.value().key.release(), PkeyFree{});
  }
  return auth;
}

std::string ClientAuth::accepted_algorithms() const {
  std::string out;
  if (!secret_.empty()) out = "HS256";
  if (public_alg_ != PublicAlg::None) {
    if (!out.empty()) out += ", ";
    out += public_alg_ == PublicAlg::RS256 ? "RS256" : "ES256";
  }
  return out.empty() ? "none" : out;
}

AuthResult ClientAuth::verify_bearer(std::string_view authorization_header_value, std::int64_t now_unix_s) const {
  auto token = parse_bearer(authorization_header_value);
  if (auto* e = std::get_if<AuthError>(&token)) return std::move(*e);
  return verify_token(std::get<std::string_view>(token), now_unix_s);
}

AuthResult ClientAuth::verify_token(std::string_view token, std::int64_t now_unix_s) const {
  if (token.empty()) return fail(AuthFailure::Missing, "no token");
  if (token.size() > kMaxTokenBytes) {
    return fail(AuthFailure::Malformed, "token longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  auto dot1 = token.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
    return fail(AuthFailure::Malformed, "token is not three dot-separated parts");
  }
  std::string header_json, payload_json, signature;
  if (!base64url_decode(token.substr(0, dot1), header_json) ||
      !base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), payload_json) ||
      !base64url_decode(token.substr(dot2 + 1), signature)) {
    return fail(AuthFailure::Malformed, "token part is not base64url");
  }

  // 1. The algorithm, from the header, decides the key: HS256 only with the secret, RS256/ES256
  //    only with the public key of that type. A key is never used for another algorithm (an
  //    HS256 token "verified" with an RSA key's PEM text as the HMAC secret is the classic forgery).
  // One parser per thread, reused: a fresh one allocates its buffers on every token check,
  // on a worker loop. (The header is read completely before the payload reuses the parser.)
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object header;
  if (auto e = parse_object(parser, header_json, "header", header)) return std::move(*e);
  std::string_view alg;
  if (header["alg"].get_string().get(alg)) return fail(AuthFailure::Malformed, "token header has no alg string");
  simdjson::dom::element crit;
  if (!header["crit"].get(crit)) {  // RFC 7515 §4.1.11: extensions we do not implement must be refused
    return fail(AuthFailure::Malformed, "token header names critical extensions (crit), none are supported");
  }
  bool hs256 = alg == "HS256" && !secret_.empty();
  bool rs256 = alg == "RS256" && public_alg_ == PublicAlg::RS256;
  bool es256 = alg == "ES256" && public_alg_ == PublicAlg::ES256;
  if (!hs256 && !rs256 && !es256) {  // also "none", and case variants such as "hs256"
    return fail(AuthFailure::WrongAlgorithm, "token algorithm " + printable_alg(alg) +
                                                 " is not accepted (configured: " + accepted_algorithms() + ")");
  }

  // 2. The signature over "header.payload", before anything in the payload is read.
  std::string_view signing_input = token.substr(0, dot2);
  bool good = hs256 ? verify_hs256(signing_input, signature, secret_)
                    : verify_pkey(public_key_.get(), es256, signing_input, signature);
  if (!good) return fail(AuthFailure::BadSignature, "token signature does not verify");

  // 3. The claims.
  simdjson::dom::object payload;
  if (auto e = parse_object(parser, payload_json, "payload", payload)) return std::move(*e);
  Claims claims;
  if (auto e = read_claims(payload, claims)) return std::move(*e);
  if (auto e = check_times(claims, now_unix_s, leeway_s_)) return std::move(*e);
  return std::move(claims.id);
}

Result<PublisherKeys> PublisherKeys::load(const std::string& path) {
  auto text = read_small_file(path, "publisher keys file");
  if (!text) return text.error();
  PublisherKeys keys;
  std::vector<std::size_t> lines;  // line of each entry, for duplicate messages
  std::string_view rest = text.value();
  for (std::size_t line_no = 1; !rest.empty(); ++line_no) {
    auto nl = rest.find('\n');
    std::string_view line = trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    if (line.empty() || line.front() == '#') continue;

    auto where = [&] { return path + ":" + std::to_string(line_no) + ": "; };
    auto sep = std::find_if(line.begin(), line.end(), is_space) - line.begin();
    std::string_view key = line.substr(0, static_cast<std::size_t>(sep));
    std::string_view tenant = trim(line.substr(static_cast<std::size_t>(sep)));
    if (tenant.empty() || std::any_of(tenant.begin(), tenant.end(), is_space)) {
      return config_error(where() + "expected \"KEY TENANT\" (TENANT \"*\" = any tenant)");
    }
    if (key.substr(0, kCertPrefix.size()) == kCertPrefix) {  // a client certificate's common name
      std::string_view name = key.substr(kCertPrefix.size());
      if (name.empty()) return config_error(where() + "\"cert:\" needs the certificate's common name after it");
      if (tenant != "*" && !valid_tenant(tenant)) {
        return config_error(where() + "tenant must be \"*\" or 1-64 characters of [A-Za-z0-9._-]");
      }
      for (std::size_t i = 0; i < keys.entries_.size(); ++i) {
        if (keys.entries_[i].certificate == name) {
          return config_error(where() + "duplicate certificate name (also on line " + std::to_string(lines[i]) + ")");
        }
      }
      keys.entries_.push_back(Entry{Digest{}, std::string(tenant), std::string(name)});
      lines.push_back(line_no);
      continue;
    }
    if (key.size() < kMinKeyBytes) {
      return config_error(where() + "key is " + std::to_string(key.size()) + " bytes; need at least " +
                          std::to_string(kMinKeyBytes));
    }
    if (tenant != "*" && !valid_tenant(tenant)) {
      return config_error(where() + "tenant must be \"*\" or 1-64 characters of [A-Za-z0-9._-]");
    }
    Entry e{Digest{}, std::string(tenant), {}};
    if (EVP_Digest(key.data(), key.size(), e.digest.data(), nullptr, EVP_sha256(), nullptr) != 1) {
      return config_error(where() + "cannot hash the key");
    }
    for (std::size_t i = 0; i < keys.entries_.size(); ++i) {
      if (keys.entries_[i].digest == e.digest) {
        return config_error(where() + "duplicate key (also on line " + std::to_string(lines[i]) + ")");
      }
    }
    keys.entries_.push_back(std::move(e));
    lines.push_back(line_no);
  }
  if (keys.entries_.empty()) return config_error("publisher keys file " + path + ": no keys");
  return keys;
}

std::optional<PublisherGrant> PublisherKeys::lookup_bearer(std::string_view authorization_header_value) const {
  auto token = parse_bearer(authorization_header_value);
  auto* presented = std::get_if<std::string_view>(&token);
  if (!presented) return std::nullopt;
  Digest d;
  if (EVP_Digest(presented->data(), presented->size(), d.data(), nullptr, EVP_sha256(), nullptr) != 1) {
    return std::nullopt;
  }
  // Compare against every stored digest with CRYPTO_memcmp and no early exit: the time taken
  // depends only on the number of keys, never on how many leading bytes of a key matched. Hashing
  // first also makes the comparison length-independent. A hash map keyed by digest would be O(1),
  // but publisher keys are few (a scan of tens of 32-byte digests costs well under a microsecond)
  // and the scan needs no argument about what a bucket probe leaks.
  std::optional<std::size_t> hit;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].certificate.empty() && CRYPTO_memcmp(entries_[i].digest.data(), d.data(), d.size()) == 0) hit = i;
  }
  if (!hit) return std::nullopt;
  const Entry& e = entries_[*hit];
  bool any = e.tenant == "*";
  return PublisherGrant{any, any ? std::string() : e.tenant, *hit};
}

std::optional<PublisherGrant> PublisherKeys::lookup_certificate(std::string_view common_name) const {
  if (common_name.empty()) return std::nullopt;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (e.certificate != common_name) continue;
    bool any = e.tenant == "*";
    return PublisherGrant{any, any ? std::string() : e.tenant, i};
  }
  return std::nullopt;
}

}  // namespace mcpfan::detail

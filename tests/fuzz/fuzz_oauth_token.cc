// libFuzzer target: the OAuth resource server's pure code (transports/src/oauth): KeySet::parse,
// verify_access_token, peek_token, read_introspection, the metadata helpers.
//
// The first byte picks a mode and a policy:
//  - bit 0 clear: "JWKS@@TOKEN@@token": an arbitrary JWKS document and an arbitrary token (most
//    tokens stop at the signature; the JWKS parser and the shape checks get everything);
//  - bit 0 set: the rest is a payload (or "header@@TOKEN@@payload"), signed at run time with a
//    fixed key of a fixed JWKS made at start, so the claim code runs behind a valid signature.
//    Bits 1-2 pick the algorithm (RS256, PS256, ES256, EdDSA).
//  Bits 3-4 pick the tenant claim ("org_id", a fixed tenant, "azp", "iss"), bit 5 the uris claim name.
//
// Checked on every input:
//  - nothing crashes or leaks (ASan, UBSan, LeakSanitizer);
//  - a verified token or an active introspection answer has a valid tenant name
//    (mcp/auth.h valid_tenant_name), scopes without spaces, non-empty URI prefixes only when
//    restricted, an exp not past, the configured issuer (peek_token agrees);
//  - a failure's message never holds the token;
//  - a parsed KeySet is not empty, holds at most kMaxKeys keys, each with a known algorithm bit;
//  - with the default header in the signed mode, the signature always verifies: the failure,
//    if any, is about the claims or the payload's shape, never the key, the algorithm or the signature;
//  - protected_resource_metadata is valid JSON whose resource reads back (when it was UTF-8).
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "fuzz_check.h"
#include "mcp/auth.h"
#include "oauth/access_token.h"
#include "oauth/metadata.h"
#include "oauth_keys.h"

namespace {

namespace oauth = mcpfan::detail::oauth;
using mcpfan::fuzz::printable;
using oauthtest::JwsAlg;

constexpr std::int64_t kNow = 1'800'000'000;
constexpr std::string_view kSplit = "@@TOKEN@@";

struct Fixed {
  oauth::KeySet keys;
};

const Fixed& fixed() {
  static const Fixed* f = [] {
    auto r = oauth::KeySet::parse(
        oauthtest::jwks({oauthtest::jwk(oauthtest::rsa_key(), "rsa"), oauthtest::jwk(oauthtest::p256_key(), "ec"),
                         oauthtest::jwk(oauthtest::ed25519_key(), "ed")}));
    FUZZ_CHECK(r.ok(), "the fixed JWKS does not parse: %s", r.ok() ? "" : r.error().message.c_str());
    return new Fixed{std::move(r).value()};  // never destroyed: reachable, not a leak
  }();
  return *f;
}

oauth::TokenPolicy policy_for(std::uint8_t flags) {
  oauth::TokenPolicy p;
  p.issuer = "https://issuer.example";
  p.audiences = {"mcpfan", "https://mcp.example/mcp"};
  switch ((flags >> 3) & 3) {
    case 0:
      p.tenant_claim = "org_id";
      break;
    case 1:
      p.fixed_tenant = "fixed";
      break;
    case 2:
      p.tenant_claim = "azp";
      break;
    default:
      p.tenant_claim = "iss";
      break;
  }
  if (flags & 0x20) p.uris_claim = "mcp_uris";
  return p;
}

void check_claims(const oauth::AccessClaims& c, const oauth::TokenPolicy& p, bool from_jwt, std::string_view input) {
  FUZZ_CHECK(mcpfan::detail::valid_tenant_name(c.tenant), "accepted tenant %s, input %s", printable(c.tenant).c_str(),
             printable(input).c_str());
  for (const auto& s : c.scopes) {
    FUZZ_CHECK(!s.empty() && s.find(' ') == std::string::npos, "scope %s", printable(s).c_str());
  }
  FUZZ_CHECK(c.uris_restricted || c.uri_prefixes.empty(), "URI prefixes without a restriction");
  for (const auto& u : c.uri_prefixes) FUZZ_CHECK(!u.empty(), "an empty URI prefix");
  if (from_jwt || c.exp != 0)
    FUZZ_CHECK(c.exp > kNow - p.leeway_s, "an expired token accepted (exp %lld)", (long long)c.exp);
}

void check_verdict(const oauth::TokenVerdict& v, std::string_view token, const oauth::TokenPolicy& p) {
  if (auto* c = std::get_if<oauth::AccessClaims>(&v)) {
    check_claims(*c, p, true, token);
    auto peek = oauth::peek_token(token);
    FUZZ_CHECK(peek.has_value(), "a verified token does not peek");
    FUZZ_CHECK(peek->iss == p.issuer, "a verified token of issuer %s", printable(peek->iss).c_str());
    return;
  }
  const auto& e = std::get<oauth::TokenError>(v);
  FUZZ_CHECK(!e.message.empty(), "a failure without a message");
  if (token.size() >= 12) {
    FUZZ_CHECK(e.message.find(token) == std::string::npos, "a message holds the token: %s", e.message.c_str());
  }
}

void check_keyset(const oauth::KeySet& ks) {
  FUZZ_CHECK(ks.size() > 0 && ks.size() <= oauth::KeySet::kMaxKeys, "a KeySet of %zu keys", ks.size());
  for (const auto& k : ks.keys()) {
    FUZZ_CHECK(k.algs != 0 && (k.algs & ~0x0f) == 0 && k.key != nullptr, "a key with algs %u", unsigned{k.algs});
  }
  for (auto a : {JwsAlg::RS256, JwsAlg::PS256, JwsAlg::ES256, JwsAlg::EdDSA}) {
    FUZZ_CHECK(ks.candidates("", a).size() <= oauth::KeySet::kMaxKeys, "too many candidates");
  }
}

void check_helpers(std::string_view text) {
  (void)oauth::cache_max_age(text);
  for (const auto& url : oauth::discovery_urls(text)) {
    FUZZ_CHECK(url.find("/.well-known/") != std::string::npos, "discovery URL %s", printable(url).c_str());
  }
  (void)oauth::parse_server_metadata(text, "https://issuer.example");
  std::string prm = oauth::protected_resource_metadata(text, {std::string(text)}, {"s", std::string(text)});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  FUZZ_CHECK(!mcpfan::fuzz::parse_json(parser, prm, doc), "protected resource metadata is not JSON: %s",
             printable(prm).c_str());
  std::string_view resource;
  FUZZ_CHECK(!doc["resource"].get_string().get(resource), "no resource");
  if (simdjson::validate_utf8(text.data(), text.size())) {
    FUZZ_CHECK(resource == text, "resource %s read back as %s", printable(text).c_str(), printable(resource).c_str());
  }
}

void arbitrary(std::string_view rest, const oauth::TokenPolicy& p) {
  auto at = rest.find(kSplit);
  std::string_view jwks = rest.substr(0, at);
  std::string_view token = at == std::string_view::npos ? std::string_view{} : rest.substr(at + kSplit.size());
  auto ks = oauth::KeySet::parse(jwks);
  if (ks.ok()) {
    check_keyset(ks.value());
    check_verdict(oauth::verify_access_token(token, ks.value(), p, kNow), token, p);
  }
  check_verdict(oauth::verify_access_token(token, fixed().keys, p, kNow), token, p);
  (void)oauth::peek_token(token);
  auto intro = oauth::read_introspection(jwks, p, kNow);
  if (auto* c = std::get_if<oauth::AccessClaims>(&intro)) check_claims(*c, p, false, jwks);
  check_helpers(token.substr(0, 512));
}

void signed_payload(std::uint8_t flags, std::string_view rest, const oauth::TokenPolicy& p) {
  static constexpr JwsAlg kAlgs[] = {JwsAlg::RS256, JwsAlg::PS256, JwsAlg::ES256, JwsAlg::EdDSA};
  JwsAlg alg = kAlgs[(flags >> 1) & 3];
  const oauthtest::Pkey& key = alg == JwsAlg::ES256   ? oauthtest::p256_key()
                               : alg == JwsAlg::EdDSA ? oauthtest::ed25519_key()
                                                      : oauthtest::rsa_key();
  const char* kid = alg == JwsAlg::ES256 ? "ec" : alg == JwsAlg::EdDSA ? "ed" : "rsa";
  auto at = rest.find(kSplit);
  bool default_header = at == std::string_view::npos;
  std::string header = default_header ? "{\"alg\":\"" + std::string(oauth::jws_alg_name(alg)) +
                                            "\",\"typ\":\"at+jwt\",\"kid\":\"" + kid + "\"}"
                                      : std::string(rest.substr(0, at));
  std::string_view payload = default_header ? rest : rest.substr(at + kSplit.size());
  std::string token = oauthtest::sign(alg, key, header, payload);
  auto v = oauth::verify_access_token(token, fixed().keys, p, kNow);
  check_verdict(v, token, p);
  if (default_header && token.size() <= oauth::kMaxTokenBytes) {
    if (auto* e = std::get_if<oauth::TokenError>(&v)) {
      FUZZ_CHECK(e->kind != oauth::TokenFailure::BadSignature && e->kind != oauth::TokenFailure::UnknownKey &&
                     e->kind != oauth::TokenFailure::WrongAlgorithm,
                 "a token signed with the right key refused: %s (%s)",
                 std::string(oauth::token_failure_name(e->kind)).c_str(), e->message.c_str());
    }
  }
  // The same claims as an introspection answer: the same rules, no signature.
  auto intro = oauth::read_introspection(payload, p, kNow);
  if (auto* c = std::get_if<oauth::AccessClaims>(&intro)) check_claims(*c, p, false, payload);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fixed();  // keys are generated once, before the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::uint8_t flags = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  oauth::TokenPolicy p = policy_for(flags);
  if (flags & 1) {
    signed_payload(flags, rest, p);
  } else {
    arbitrary(rest, p);
  }
  return 0;
}

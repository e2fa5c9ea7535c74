#pragma once
// What the oauth unit tests share: a fixed clock, a policy, a JWKS of one key per algorithm and a
// payload builder whose members can be replaced or removed one at a time.
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "oauth/access_token.h"
#include "oauth_keys.h"

namespace oauthtest {

namespace oauth = mcpfan::detail::oauth;

inline constexpr std::int64_t kNow = 1'800'000'000;
inline const std::string kIssuer = "https://issuer.example/tenant-a";
inline const std::string kAudience = "https://mcp.example/mcp";

inline oauth::TokenPolicy policy() {
  oauth::TokenPolicy p;
  p.issuer = kIssuer;
  p.audiences = {kAudience, "mcpfan"};
  p.tenant_claim = "org_id";
  return p;
}

/** A JWKS with "rsa1" (RSA, no alg), "ec1" (P-256), "ed1" (Ed25519). */
inline const oauth::KeySet& standard_keys() {
  static const oauth::KeySet keys = [] {
    auto r = oauth::KeySet::parse(
        jwks({jwk(rsa_key(), "rsa1"), jwk(p256_key(), "ec1"), jwk(ed25519_key(), "ed1", "EdDSA")}));
    if (!r) ADD_FAILURE() << r.error().message;
    return std::move(r).value();
  }();
  return keys;
}

/** Payload members as raw JSON values, defaults for a valid token. */
struct Payload {
  std::map<std::string, std::string> members{{"iss", "\"" + kIssuer + "\""},
                                             {"aud", "\"" + kAudience + "\""},
                                             {"exp", std::to_string(kNow + 600)},
                                             {"iat", std::to_string(kNow - 10)},
                                             {"org_id", "\"acme\""},
                                             {"sub", "\"user-1\""},
                                             {"client_id", "\"client-9\""},
                                             {"scope", "\"mcp:read mcp:write\""}};
  Payload& set(const std::string& k, std::string raw) {
    members[k] = std::move(raw);
    return *this;
  }
  Payload& erase(const std::string& k) {
    members.erase(k);
    return *this;
  }
  std::string json() const {
    std::string out = "{";
    for (const auto& [k, v] : members) out += (out.size() > 1 ? ",\"" : "\"") + k + "\":" + v;
    return out + "}";
  }
};

inline const oauth::AccessClaims* ok(const oauth::TokenVerdict& v) {
  return std::get_if<oauth::AccessClaims>(&v);
}

/** The failure kind, or a sentinel past the last kind when it verified. */
inline oauth::TokenFailure kind(const oauth::TokenVerdict& v) {
  if (auto* e = std::get_if<oauth::TokenError>(&v)) return e->kind;
  return static_cast<oauth::TokenFailure>(255);
}

inline std::string describe(const oauth::TokenVerdict& v) {
  if (auto* e = std::get_if<oauth::TokenError>(&v)) {
    return std::string(oauth::token_failure_name(e->kind)) + ": " + e->message;
  }
  return "verified";
}

}  // namespace oauthtest

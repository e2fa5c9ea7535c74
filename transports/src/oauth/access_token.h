#pragma once
// OAuth 2.1 access tokens as JWTs (RFC 9068 profile of RFC 7519/7515): the signature against a
// KeySet (oauth/jwks.h), then the claims against a TokenPolicy, giving the tenant, subject, URI
// prefixes and scopes a request is made with. Pure code: no I/O, no loop, no clock (the caller
// passes `now`).
//
// Thread-safety: free functions over immutable inputs; they may run concurrently from any number
// of threads (verify_access_token keeps one JSON parser per thread). Results own their strings.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oauth/jwks.h"

namespace mcpfan::detail::oauth {

/** How a token's claims map to mcpfan's identity. Set once from the configuration. */
struct TokenPolicy {
  std::string issuer{};                  // `iss` must equal it exactly
  std::vector<std::string> audiences{};  // `aud` (a string or an array) must contain one; empty: every token fails
  std::int64_t leeway_s = 60;            // for exp, nbf, iat
  std::string tenant_claim{};            // a top-level string claim naming the tenant; empty: fixed_tenant
  std::string fixed_tenant{};            // used when tenant_claim is empty
  std::string uris_claim = "uris";       // optional array of URI prefixes; empty: never read
  std::string subject_claim = "sub";     // empty: never read
};

enum class TokenFailure : std::uint8_t {
  Malformed,       // not a compact JWS, not base64url/JSON, repeated member, crit, wrong typ, over 8 KiB
  UnknownKey,      // the header's kid is not in the KeySet (the caller may refetch the JWKS)
  WrongAlgorithm,  // alg none/HS*/unknown, or no key of that kid allows it
  BadSignature,    // the signature does not verify
  WrongIssuer,     // iss missing or not the configured issuer
  WrongAudience,   // aud missing or naming none of the configured audiences
  Expired,         // exp has passed (beyond the leeway)
  NotYetValid,     // nbf is in the future (beyond the leeway)
  IssuedInFuture,  // iat is in the future (beyond the leeway)
  MissingTenant,   // the tenant claim is absent or empty
  BadTenant,       // the tenant claim is not 1..64 of [A-Za-z0-9._-] (never rewritten), or not a string
  BadClaims,       // a claim has the wrong type or shape (exp missing, uris not an array, ...)
  Inactive,        // introspection answered active:false
};
inline constexpr std::size_t kTokenFailureCount = static_cast<std::size_t>(TokenFailure::Inactive) + 1;

/** snake_case name, for a metric label ("bad_signature"). */
[[nodiscard]] std::string_view token_failure_name(TokenFailure f) noexcept;

/** `message` names the problem for logs; it never contains the token. */
struct TokenError {
  TokenFailure kind = TokenFailure::Malformed;
  std::string message{};
};

/** Who a verified token speaks for. */
struct AccessClaims {
  std::string tenant{};  // valid_tenant_name (mcp/auth.h); a claim outside it is BadTenant, never rewritten
  std::string subject{};
  std::vector<std::string> uri_prefixes{};
  bool uris_restricted = false;       // the uris claim was present (even as an empty array)
  std::int64_t exp = 0;               // 0 only from an introspection answer without exp
  std::vector<std::string> scopes{};  // `scope` (space-separated) and `scp` (array or string), de-duplicated
  std::string client_id{};            // `client_id`, else `azp`

  [[nodiscard]] bool has_scope(std::string_view s) const noexcept;
  /** True when the token does not restrict URIs, or `uri` starts with one of its prefixes. */
  [[nodiscard]] bool uri_allowed(std::string_view uri) const noexcept;
};

using TokenVerdict = std::variant<AccessClaims, TokenError>;

inline constexpr std::size_t kMaxTokenBytes = 8192;

/** What a token says about itself, unverified: for routing only, never for a decision to admit. */
struct TokenPeek {
  std::string kid{};
  std::string alg{};
  std::string iss{};
};

/**
 * The header's `kid` and `alg` and the payload's `iss` ("" when absent or not strings), without
 * checking the signature: lets the caller tell an OAuth token of its issuer from a static-key
 * token, and an unknown kid (refetch the JWKS). nullopt when not a compact JWS with a JSON object
 * header and payload, or over kMaxTokenBytes.
 */
[[nodiscard]] std::optional<TokenPeek> peek_token(std::string_view token);

/**
 * Verifies a compact JWS access token against `keys` and `policy` at `now_unix_s`.
 * Order: shape (≤ kMaxTokenBytes, three base64url parts, JSON objects with unique members, no
 * `crit`, `typ` absent or at+jwt/JWT), then the header's `alg` (one of JwsAlg) and `kid`
 * (UnknownKey when no key has it; WrongAlgorithm when no key of it allows alg), then the
 * signature (each candidate key), and only then the claims: iss, aud, exp (required), nbf, iat,
 * tenant, uris, sub, scopes, client_id.
 */
[[nodiscard]] TokenVerdict verify_access_token(std::string_view token, const KeySet& keys, const TokenPolicy& policy,
                                               std::int64_t now_unix_s);

}  // namespace mcpfan::detail::oauth

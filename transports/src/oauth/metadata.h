#pragma once
// The JSON documents around an OAuth 2.1 resource server: the authorization server's metadata
// (RFC 8414 / OpenID Connect Discovery) and where to find it, the Cache-Control lifetime of what
// is fetched, our own protected resource metadata (RFC 9728), and token introspection answers
// (RFC 7662). Pure code: the caller does the HTTP.
//
// Thread-safety: free functions, no shared state; results own their strings.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/result.h"
#include "oauth/access_token.h"

namespace mcpfan::detail::oauth {

/** What mcpfan uses of an authorization server's metadata. */
struct ServerMetadata {
  std::string issuer{};
  std::string jwks_uri{};
  std::string introspection_endpoint{};  // "" when not advertised
  std::vector<std::string> scopes_supported{};
};

inline constexpr std::size_t kMaxMetadataBytes = 256 * 1024;
inline constexpr std::size_t kMaxIntrospectionBytes = 64 * 1024;

/**
 * An RFC 8414 / OIDC discovery document. Its `issuer` must equal `expected_issuer` exactly
 * (RFC 8414 §3.3: else a server could speak for another issuer); `jwks_uri` is required, and it
 * and `introspection_endpoint` must be absolute http(s) URLs. Errors name the problem.
 * At most kMaxMetadataBytes.
 */
[[nodiscard]] Result<ServerMetadata> parse_server_metadata(std::string_view json, std::string_view expected_issuer);

/**
 * The URLs to fetch an issuer's metadata from, in order: RFC 8414 §3.1
 * (https://h/.well-known/oauth-authorization-server/path, the path after the well-known part),
 * then OIDC Discovery §4 (https://h/path/.well-known/openid-configuration). A terminating "/" of
 * the path is dropped first. Empty when `issuer` is not an http(s) URL without query or fragment.
 */
[[nodiscard]] std::vector<std::string> discovery_urls(std::string_view issuer);

/**
 * Seconds a response may be kept, from a Cache-Control value: max-age=N (saturating), 0 for
 * no-store or no-cache (whatever else is there); nullopt when neither appears. Directive names
 * are case-insensitive (RFC 9111 §5.2).
 */
[[nodiscard]] std::optional<std::uint64_t> cache_max_age(std::string_view cache_control) noexcept;

/**
 * RFC 9728 protected resource metadata: {"resource":..., "authorization_servers":[...],
 * "scopes_supported":[...], "bearer_methods_supported":["header"]}, every string JSON-escaped.
 * `scopes_supported` is left out when `scopes` is empty.
 */
[[nodiscard]] std::string protected_resource_metadata(std::string_view resource,
                                                      const std::vector<std::string>& authorization_servers,
                                                      const std::vector<std::string>& scopes);

/**
 * An RFC 7662 introspection answer as the same AccessClaims a JWT gives. `active` must be true
 * (false: Inactive; absent or not a boolean: Malformed). `iss` and `aud` are checked when present,
 * `exp`/`nbf`/`iat` likewise (an answer without exp gives exp 0: bound the cache yourself);
 * tenant, uris, sub, scope/scp and client_id are read as in a JWT. At most kMaxIntrospectionBytes.
 */
[[nodiscard]] TokenVerdict read_introspection(std::string_view json, const TokenPolicy& policy,
                                              std::int64_t now_unix_s);

}  // namespace mcpfan::detail::oauth

#pragma once
// Authentication building blocks (docs/security.md; design §6 --jwt-secret-file, --jwt-public-key-file,
// --publish-keys-file): client JWTs (HS256 with a shared secret, RS256/ES256 with a public key)
// and static publisher keys.
//
// Thread-safety: ClientAuth and PublisherKeys are immutable once loaded; every const method may
// run concurrently from any number of threads. Nothing here touches a libuv loop.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "mcpfan/result.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace mcpfan::detail {

/** Who a verified client token speaks for, and which resource URIs it may subscribe to. */
struct ClientIdentity {
  std::string tenant;                     // claim `tenant`: 1..64 chars of [A-Za-z0-9._-]
  std::vector<std::string> uri_prefixes;  // claim `uris`, when present
  bool uris_restricted = false;           // true when the token carries `uris` (even an empty array)
  std::int64_t exp = 0;                   // claim `exp`, 0 when the token has none
  // claim `sub` (or the host's ClientGrant::subject): the principal a task belongs to
  // (poll-to-push, mcp/task_owners.h); empty when the token has none
  std::string subject{};
  // An OAuth access token's scopes (`scope` or `scp`); `scoped`: a listen needs --oauth-listen-scope among them
  std::vector<std::string> scopes{};
  bool scoped = false;
  std::string client_id{};  // an OAuth token's `client_id` (or `azp`): told to --authorize-url

  /** True when the token does not restrict URIs, or `uri` starts with one of its prefixes. */
  [[nodiscard]] bool uri_allowed(std::string_view uri) const noexcept;
};

enum class AuthFailure : std::uint8_t {
  Missing,         // no Authorization header / empty value
  Malformed,       // not "Bearer <jwt>", not three base64url parts, bad JSON, over 8 KiB
  BadSignature,    // signature does not verify (tampered header, payload or signature)
  WrongAlgorithm,  // header `alg` is not one the configuration accepts (incl. "none")
  Expired,         // `exp` has passed
  NotYetValid,     // `nbf` is in the future
  MissingTenant,   // no `tenant` claim, or an empty one
  BadClaims,       // a claim has the wrong type or shape
  // The host's own authenticator (ServerConfig::auth.authenticate_client) in place of tokens:
  Rejected,        // it denied the credentials (ClientDenial)
  HostError,       // it threw, or granted an invalid tenant name: the host's bug, answered 500
  // OAuth access tokens (oauth/access_token.h):
  UnknownKey,         // its `kid` is not in the issuer's JWKS, even after fetching it again
  WrongIssuer,        // `iss` is not --oauth-issuer (and nothing else takes the token)
  WrongAudience,      // `aud` names no audience of this server (RFC 8707)
  InsufficientScope,  // valid, but without --oauth-listen-scope for a listen or subscription: 403
  Unavailable,        // the authorization server could not be asked (no keys yet, introspection down): 503
};
inline constexpr std::size_t kAuthFailureCount = static_cast<std::size_t>(AuthFailure::Unavailable) + 1;

/** snake_case name of a failure, for a Prometheus label value ("bad_signature"). */
[[nodiscard]] std::string_view auth_failure_name(AuthFailure kind) noexcept;

/**
 * Logs refused credentials (kind "auth_failed": warn, info for "missing"), on the calling
 * thread's log (server/log.h). `scope`: "client" or "publisher"; `reason`: the metric's label
 * (mcpfan_auth_failures_total); `detail` never holds the credential.
 */
void log_auth_failure(std::string_view scope, std::string_view reason, std::string detail) noexcept;

/** The rule of the `tenant` claim (and of a host's grant): 1..64 characters of [A-Za-z0-9._-]. */
[[nodiscard]] bool valid_tenant_name(std::string_view tenant) noexcept;

/** `message` names the problem for logs and the client; it never contains the token or a key. */
struct AuthError {
  AuthFailure kind;
  std::string message;
};

using AuthResult = std::variant<ClientIdentity, AuthError>;

/**
 * The token of an `Authorization` header value "Bearer <token>": scheme case-insensitive,
 * exactly one space before the token, whitespace around the whole value tolerated.
 * Missing for an empty (or all-whitespace) value, Malformed otherwise.
 * The returned view points into `header_value`.
 */
[[nodiscard]] std::variant<std::string_view, AuthError> parse_bearer(std::string_view header_value);

/**
 * Verifies client JWTs (compact JWS). The header's `alg` is checked against what is configured
 * before any signature check: HS256 only with a secret, RS256 only with an RSA public key, ES256
 * only with a P-256 public key; "none" never. Signatures are checked with OpenSSL against the key
 * parsed once at load. Claims, read only from a verified token: `exp`/`nbf` optional integers
 * (seconds), `tenant` required, `uris` optional array of URI prefixes.
 */
class ClientAuth {
 public:
  static constexpr std::size_t kMaxTokenBytes = 8192;
  static constexpr std::size_t kMinSecretBytes = 32;
  static constexpr std::size_t kMaxUris = 64;

  /** Disabled: no key configured; every verify fails with WrongAlgorithm. */
  ClientAuth() = default;

  /**
   * Reads the HS256 secret file (raw bytes, trailing whitespace trimmed, at least 32 bytes) and/or
   * the PEM public key file ("PUBLIC KEY" or "RSA PUBLIC KEY"; RSA of at least 2048 bits → RS256,
   * EC P-256 → ES256). Either path may be empty. `leeway_s` widens the exp/nbf checks.
   * Errors name the file and the problem.
   */
  [[nodiscard]] static Result<ClientAuth> load(const std::string& secret_file, const std::string& public_key_file,
                                               std::int64_t leeway_s = 0);

  /** True when a secret or a public key is configured. */
  [[nodiscard]] bool enabled() const noexcept { return !secret_.empty() || public_alg_ != PublicAlg::None; }

  /** The accepted algorithms, e.g. "HS256, RS256" ("none" when disabled). */
  [[nodiscard]] std::string accepted_algorithms() const;

  /** parse_bearer() then verify_token(). `now_unix_s` is the current time in seconds. */
  [[nodiscard]] AuthResult verify_bearer(std::string_view authorization_header_value, std::int64_t now_unix_s) const;

  /** Verifies a compact JWS "header.payload.signature" and extracts the identity. */
  [[nodiscard]] AuthResult verify_token(std::string_view token, std::int64_t now_unix_s) const;

 private:
  enum class PublicAlg : std::uint8_t { None, RS256, ES256 };

  std::string secret_;                     // HS256 key, empty when not configured
  std::shared_ptr<evp_pkey_st> public_key_;  // OpenSSL EVP_PKEY, only read (shared by copies)
  PublicAlg public_alg_ = PublicAlg::None;
  std::int64_t leeway_s_ = 0;
};

/** What a publisher key grants: one tenant, or any tenant ("*"). */
struct PublisherGrant {
  bool any_tenant = false;
  std::string tenant;          // empty when any_tenant
  std::size_t key_index = 0;   // 0-based position of the key in the file: stable, for per-key limits
};

/**
 * Static publisher keys from a file of lines "KEY TENANT" ("*" = any tenant); blank lines and
 * lines starting with '#' are ignored. Keys are at least 16 bytes, unique, and kept only as
 * SHA-256 digests. A line "cert:NAME TENANT" grants the same to a publisher whose TLS client
 * certificate (verified against --tls-client-ca) has the common name NAME.
 */
class PublisherKeys {
 public:
  static constexpr std::size_t kMinKeyBytes = 16;

  /** Disabled: no keys. */
  PublisherKeys() = default;

  /** Errors name the file and line; a file with no keys is an error (it would disable auth). */
  [[nodiscard]] static Result<PublisherKeys> load(const std::string& path);

  [[nodiscard]] bool enabled() const noexcept { return !entries_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /** The grant for the key in "Bearer <key>", or nullopt (missing, malformed or unknown). */
  [[nodiscard]] std::optional<PublisherGrant> lookup_bearer(std::string_view authorization_header_value) const;
  /** The grant of a "cert:NAME" line for a verified client certificate's common name, or nullopt. */
  [[nodiscard]] std::optional<PublisherGrant> lookup_certificate(std::string_view common_name) const;

  static constexpr std::string_view kCertPrefix = "cert:";

 private:
  using Digest = std::array<unsigned char, 32>;
  struct Entry {
    Digest digest;
    std::string tenant;       // "*" = any
    std::string certificate;  // a "cert:NAME" line: NAME (its digest unused); empty for a key
  };
  std::vector<Entry> entries_;
};

}  // namespace mcpfan::detail

#pragma once
// Verification keys of an OAuth 2.1 authorization server, read from its JWKS document
// (RFC 7517; the algorithms of RFC 7518 §3 and RFC 8037): RSA (RS256, PS256), EC P-256 (ES256)
// and OKP Ed25519 (EdDSA). Pure code: no I/O, no loop; fetching the document is the caller's job.
//
// Symmetric keys (`kty: oct`) are never taken from a JWKS: a public document holding an HMAC
// secret would let anyone who reads it mint tokens.
//
// Thread-safety: a KeySet is immutable once parsed; every const method may run concurrently from
// any number of threads. Copies share the OpenSSL keys (only ever read). A `const VerifyKey*`
// from candidates() is valid as long as the KeySet it came from (not a copy of it) lives.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/result.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace mcpfan::detail::oauth {

/** The JWS algorithms accepted for access tokens. Never "none", never HS* (see above). */
enum class JwsAlg : std::uint8_t { RS256, PS256, ES256, EdDSA };

/** The bit of `a` in VerifyKey::algs. */
[[nodiscard]] constexpr std::uint8_t jws_alg_bit(JwsAlg a) noexcept {
  return static_cast<std::uint8_t>(1u << static_cast<unsigned>(a));
}

/** "RS256", "PS256", "ES256", "EdDSA" (case-sensitive, RFC 7518 names) → the algorithm; nullopt otherwise. */
[[nodiscard]] std::optional<JwsAlg> jws_alg_from_name(std::string_view name) noexcept;
[[nodiscard]] std::string_view jws_alg_name(JwsAlg a) noexcept;

/** One usable public key of a JWKS. */
struct VerifyKey {
  std::string kid{};                   // "" when the JWK has none
  std::uint8_t algs = 0;               // jws_alg_bit()s this key may verify: from `alg`, else from kty/crv
  std::shared_ptr<evp_pkey_st> key{};  // OpenSSL EVP_PKEY, public only, only read
};

class KeySet {
 public:
  static constexpr std::size_t kMaxKeys = 64;
  static constexpr std::size_t kMaxBytes = 256 * 1024;
  static constexpr std::size_t kMaxKidBytes = 256;
  static constexpr int kMinRsaBits = 2048;
  static constexpr int kMaxRsaBits = 8192;  // a larger modulus makes every verification a CPU sink

  /** Empty: candidates() finds nothing. parse() never returns an empty set. */
  KeySet() = default;

  /**
   * Parses a JWKS document {"keys":[...]}. Skips (and counts in skipped(), with a reason in
   * skip_reasons()) keys it cannot use: `use` other than "sig", `key_ops` without "verify",
   * unknown kty/crv, an `alg` it does not support (HS*, none, RSA-OAEP...) or that does not fit
   * the key type, `kty: oct`, a JWK carrying private members (`d`), RSA under 2048 or over 8192
   * bits, malformed members. Error (naming the problem) when the document is not JSON, has no
   * `keys` array, is over kMaxBytes, has more than kMaxKeys keys (usable or not), has no usable
   * key, or has two usable keys with the same non-empty kid that allow a common algorithm.
   * Keys without a kid may repeat: a token without a kid is tried against each of them.
   */
  [[nodiscard]] static Result<KeySet> parse(std::string_view jwks_json);

  /**
   * Keys that may verify `alg` with this `kid`, in document order. A "" kid (a token that names
   * no key) gets every key allowing `alg`, at most kMaxKeys. The pointers live as long as *this.
   */
  [[nodiscard]] std::vector<const VerifyKey*> candidates(std::string_view kid, JwsAlg alg) const;
  /** True when a usable key has this non-empty kid. */
  [[nodiscard]] bool has_kid(std::string_view kid) const noexcept;
  [[nodiscard]] std::size_t size() const noexcept { return keys_.size(); }
  [[nodiscard]] std::size_t skipped() const noexcept { return skip_reasons_.size(); }
  /** Why each skipped key was skipped ("keys[2] (kid \"x\"): use is \"enc\""), for a log line. */
  [[nodiscard]] const std::vector<std::string>& skip_reasons() const noexcept { return skip_reasons_; }
  [[nodiscard]] const std::vector<VerifyKey>& keys() const noexcept { return keys_; }

 private:
  std::vector<VerifyKey> keys_;
  std::vector<std::string> skip_reasons_;
};

}  // namespace mcpfan::detail::oauth

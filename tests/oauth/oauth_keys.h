#pragma once
// Test-side issuer for the oauth tests, the oauth fuzz target and the oauth benchmark: key pairs
// generated in the process with OpenSSL (nothing committed), their JWKs, and compact JWS tokens
// signed with them (RS256, PS256, ES256 as r||s, EdDSA). Signing lives only here: the server side
// (transports/src/oauth) verifies and never signs.
//
// Thread-safety: the cached keys are made on first use (function-local statics); the rest is pure.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oauth/jwks.h"

namespace oauthtest {

using mcpfan::detail::oauth::JwsAlg;
using Pkey = std::shared_ptr<evp_pkey_st>;

/** Fresh key pairs. */
Pkey make_rsa(int bits);
Pkey make_p256();
Pkey make_ed25519();

/** Process-wide cached keys, so a test binary generates each at most once. `n` picks another key. */
const Pkey& rsa_key(int n = 0);
const Pkey& p256_key(int n = 0);
const Pkey& ed25519_key(int n = 0);
const Pkey& rsa1024_key();

std::string b64url(std::string_view bytes);

/**
 * The public JWK of `key` as a JSON object: kty and its members, then "kid" (when not empty),
 * "alg" (when not empty), "use":"sig" (when `use` is not empty), and `extra` members verbatim
 * (",\"key_ops\":[...]" style, starting with a comma).
 */
std::string jwk(const Pkey& key, std::string_view kid, std::string_view alg = "", std::string_view use = "sig",
                std::string_view extra = "");
/** {"keys":[...]} from JWK objects. */
std::string jwks(const std::vector<std::string>& keys);

/** The raw JWS signature of `input` with `key` for `alg` (ES256 as 64 bytes r||s). */
std::string sign_bytes(JwsAlg alg, const Pkey& key, std::string_view input);
/** A compact JWS: base64url(header_json).base64url(payload_json).signature. */
std::string sign(JwsAlg alg, const Pkey& key, std::string_view header_json, std::string_view payload_json);
/** The usual header {"alg":..,"typ":"at+jwt","kid":..} ("kid" left out when empty), signed. */
std::string token(JwsAlg alg, const Pkey& key, std::string_view kid, std::string_view payload_json);

/** A SubjectPublicKeyInfo PEM of `key` (for ClientAuth, which reads PEM files). */
std::string public_pem(const Pkey& key);

}  // namespace oauthtest

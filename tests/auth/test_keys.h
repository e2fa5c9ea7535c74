#pragma once
// Helpers for the auth tests: key pairs generated in-process with OpenSSL's EVP API (no committed
// keys), files in a per-test temporary directory, and tokens minted with libjwt or by hand.
#include <jwt.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace authtest {

/** A freshly generated key pair as PEM text. */
struct KeyPair {
  std::string private_pem;  // PKCS#8 "PRIVATE KEY"
  std::string public_pem;   // SubjectPublicKeyInfo "PUBLIC KEY"
  std::string pkcs1_pem;    // "RSA PUBLIC KEY" for RSA keys, empty otherwise
};

/** RSA of `bits` and EC keys on `curve` ("P-256", "P-384"); generated once per process and kind. */
const KeyPair& rsa_key(int bits = 2048);
const KeyPair& ec_key(const char* curve = "P-256");
const KeyPair& ed25519_key();

inline const std::string kSecret = "an-hs256-secret-of-more-than-32-bytes!";

/** A directory under $TMPDIR (or /tmp) removed with everything in it on destruction. */
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /** Writes `content` to `name` in the directory; returns its path. */
  std::string write(const std::string& name, std::string_view content) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/** A token from libjwt: `claims_json` is the payload object, signed with `alg` and `key`. */
std::string mint(jwt_alg_t alg, std::string_view key, const std::string& claims_json);

/** A token with a hand-written header, HMAC-SHA256-signed with `hmac_key` (for headers libjwt
 *  would not produce, such as a repeated "alg"). */
std::string mint_hs256_raw(const std::string& header_json, const std::string& payload_json, std::string_view hmac_key);

std::string b64url(std::string_view bytes);

/** The current Unix time in seconds. */
std::int64_t now_s();

}  // namespace authtest

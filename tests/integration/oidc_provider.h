#pragma once
// A real OpenID provider for the OAuth tests: tests/interop/oauth/provider.mjs (oidc-provider,
// pinned there; its `npm ci` runs on first use, under a flock, see ensure_deps.sh) on a loopback
// port, issuer http://127.0.0.1:PORT. Stopped by PID (destructor). See that folder's README.md
// for what it serves: JWT access tokens (aud = the resource, scope, client_id, org_id), static
// clients svc-acme / svc-beta / svc-badorg / svc-nolisten (secret "<id>-secret-0123456789").
//
//   std::string err;
//   auto op = itest::OidcProvider::start({"http://127.0.0.1:1/mcp"}, {}, 0, &err);
//   if (!op) GTEST_SKIP() << err;              // or FAIL(): node/npm missing or broken
//   std::string tok = op->client_token("svc-acme", "svc-acme-secret-0123456789",
//                                      "http://127.0.0.1:1/mcp", "mcp:listen", &err);
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace itest {

class ChildProcess;

class OidcProvider {
 public:
  // Starts the provider. `resources`: the resources (RFC 8707) it issues JWT access tokens for,
  // the first being the default when a token request names none; empty = any loopback http URL
  // (no default). `keys_file`: a private JWKS (make_keys); empty = one RS256 key made in a
  // temporary folder. `port` 0 = a free port below the ephemeral range (so that a restart finds
  // it free), else that port. `opaque_resources`: resources whose access tokens are opaque, for
  // introspection (oidc-provider does not introspect JWTs). `token_ttl_s`: access token
  // lifetime (0: the provider's default, 600 s). nullopt with *error set when node is missing
  // ("... not found in PATH": skip), the packages cannot be installed or the provider does not
  // start in time.
  static std::optional<OidcProvider> start(std::vector<std::string> resources, std::string keys_file = {},
                                           std::uint16_t port = 0, std::string* error = nullptr,
                                           std::vector<std::string> opaque_resources = {}, int token_ttl_s = 0);
  ~OidcProvider();  // stop()
  OidcProvider(OidcProvider&&) noexcept;
  OidcProvider& operator=(OidcProvider&&) noexcept;
  OidcProvider(const OidcProvider&) = delete;
  OidcProvider& operator=(const OidcProvider&) = delete;

  const std::string& issuer() const;  // http://127.0.0.1:PORT
  std::uint16_t port() const;
  const std::string& keys_file() const;        // the private JWKS in use
  std::string introspection_endpoint() const;  // issuer + "/token/introspection"
  std::string token_endpoint() const;          // issuer + "/token"
  std::string jwks_uri() const;                // issuer + "/jwks"

  // A client_credentials access token (POST /token, client_secret_post, with `resource` and
  // `scope` when non-empty); "" with *error (status and body) on failure.
  std::string client_token(std::string client_id, std::string secret, std::string resource, std::string scope,
                           std::string* error = nullptr);
  // POST /token/introspection of `token` authenticated as the client; the JSON body, or "" with
  // *error.
  std::string introspect(const std::string& token, const std::string& client_id, const std::string& secret,
                         std::string* error = nullptr);
  // Stops the provider and starts it again on the same port with `keys_file` (key rotation;
  // tokens issued before are forgotten: its store is in memory). False (last_error()) on failure.
  bool restart_with_keys(std::string keys_file);
  // Writes a private JWKS with one new key: `alg` RS256, PS256, ES256 or EdDSA. With `keep_file`,
  // the keys of that file follow the new one: still published, no longer signing (a rotation
  // with overlap).
  static bool make_keys(const std::string& path, const std::string& kid, const std::string& alg,
                        std::string* error = nullptr, const std::string& keep_file = {});
  const std::string& last_error() const;
  // The provider's log so far (stderr); printed by the destructor when the test failed.
  std::string log() const;
  // SIGTERM, then SIGKILL after 5 s, by PID. Idempotent.
  void stop();

  struct State;

 private:
  explicit OidcProvider(std::unique_ptr<State> s);
  std::unique_ptr<State> s_;
};

}  // namespace itest

#pragma once
// Shared by the auth tests: load a ClientAuth from in-memory keys, and describe results so a
// failed expectation prints the failure kind and message.
#include <gtest/gtest.h>

#include <string>

#include "mcp/auth.h"
#include "test_keys.h"

namespace authtest {

using mcpfan::detail::AuthError;
using mcpfan::detail::AuthResult;
using mcpfan::detail::ClientAuth;
using mcpfan::detail::ClientIdentity;

/** "ok", or the failure's snake_case name. */
inline std::string kind_of(const AuthResult& r) {
  if (const auto* e = std::get_if<AuthError>(&r)) return std::string(mcpfan::detail::auth_failure_name(e->kind));
  return "ok";
}

inline std::string message_of(const AuthResult& r) {
  const auto* e = std::get_if<AuthError>(&r);
  return e ? e->message : std::string();
}

/** Writes the non-empty keys into `dir` and loads them; a load error fails the test. */
inline ClientAuth load_auth(const TempDir& dir, const std::string& secret, const std::string& public_pem,
                            std::int64_t leeway_s = 0) {
  auto r = ClientAuth::load(secret.empty() ? "" : dir.write("secret", secret),
                            public_pem.empty() ? "" : dir.write("key.pem", public_pem), leeway_s);
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return ClientAuth{};
  }
  return std::move(r).value();
}

}  // namespace authtest

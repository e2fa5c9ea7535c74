#pragma once
// The claim rules shared by JWT access tokens (access_token.cc) and introspection answers
// (metadata.cc, RFC 7662), so both give the same AccessClaims for the same facts.
// Private to the oauth room: it exposes simdjson.
//
// Thread-safety: pure functions; `claims` is only read.
#include <optional>

#include <simdjson.h>

#include "oauth/access_token.h"

namespace mcpfan::detail::oauth {

/** What a source of claims must carry. A JWT must carry all three; an introspection answer may omit them. */
struct ClaimRequirements {
  bool iss = true;
  bool aud = true;
  bool exp = true;
};

/** Reads and checks every claim of `claims` (a verified payload) under `policy` into `out`. */
[[nodiscard]] std::optional<TokenError> read_access_claims(simdjson::dom::object claims, const TokenPolicy& policy,
                                                           std::int64_t now_unix_s, ClaimRequirements required,
                                                           AccessClaims& out);

}  // namespace mcpfan::detail::oauth

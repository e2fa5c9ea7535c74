#pragma once
// The second, authenticated fuzz server (docs/security.md): its configuration (client tokens, publisher
// keys, publish rate, per-tenant ceilings, a Unix socket for stdio-framed clients that must
// authenticate), and what the checks need to know about its credentials.
//
// The secret and the keys are fixed so that make_corpus.py can mint tokens for the seeds and
// the dictionary ahead of time: keep both files in step. They protect nothing.
#include <string>
#include <string_view>

#include "mcpfan/transport/server.h"

namespace mcpfan::fuzz::auth {

inline constexpr std::string_view kSecret = "mcpfan-fuzz-hs256-secret-not-a-real-one-0001";  // >= 32 bytes
inline constexpr std::string_view kPublisherKeyT1 = "fuzz-publisher-key-t1-0000";    // bound to tenant t1
inline constexpr std::string_view kPublisherKeyAny = "fuzz-publisher-key-any-000";   // "*": any tenant

/**
 * Adds to `c` (the plain server's limits): HS256 client auth and the two publisher keys (files
 * written into a fresh temporary directory), a Unix socket there, a low publish rate and burst,
 * low per-tenant ceilings and a small tenant table. README.md lists the values.
 */
void configure(ServerConfig& c);
/**
 * Removes the secret and keys files once the server has started (start() read them), so an
 * aborted run leaves only the directory and its socket behind.
 */
void remove_key_files();
/** Removes the temporary directory; after the server stopped (it unlinks its socket itself). */
void remove_files();

/**
 * Whether `input` may hand the server a token signed with kSecret: some run of base64url
 * characters and dots "H.P.S" whose S is the HMAC of "H.P" (expired or not; claims unread).
 * An over-approximation, so a check built on "no" never fires wrongly: folded header lines
 * are joined first, and with `json_escapes` (a stdio line, a JSON string that may spell
 * bytes as \uXXXX) any backslash counts as a possible token.
 */
bool may_carry_signed_token(std::string_view input, bool json_escapes);
/** Whether `input` contains a publisher key (folded header lines joined first). */
bool may_carry_publisher_key(std::string_view input);

}  // namespace mcpfan::fuzz::auth

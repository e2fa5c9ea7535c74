#pragma once
// Strict unpadded base64url (RFC 4648 §5, as JWS and JWK use it: RFC 7515 §2): the one decoder
// of JWK members and token parts, OAuth's (jwks.cc, access_token.cc) and static tokens'
// (mcp/auth.cc) alike.
//
// Thread-safety: pure functions.
#include <string>
#include <string_view>

namespace mcpfan::detail::oauth {

/**
 * Decodes `in` into `out` (replacing its contents). False for any character outside
 * [A-Za-z0-9_-] (padding '=' included), a length no whole number of bytes encodes, or unused low
 * bits that are not zero: each byte string has exactly one accepted spelling.
 */
[[nodiscard]] bool base64url_decode(std::string_view in, std::string& out);

}  // namespace mcpfan::detail::oauth

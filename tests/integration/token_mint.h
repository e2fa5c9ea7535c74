// HS256 JSON Web Tokens minted in the test itself (OpenSSL HMAC), so the integration
// tests check the server against an implementation independent of its own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace itest {

std::string Base64Url(std::string_view bytes);
// header.payload.signature with `header_json` and `payload_json` as given (any alg text).
std::string SignHs256(std::string_view header_json, std::string_view payload_json, std::string_view secret);
// A token for `tenant` expiring `exp_in_s` from now; `extra_claims` is appended verbatim
// (",\"uris\":[...]").
std::string Hs256Token(std::string_view secret, std::string_view tenant, int64_t exp_in_s = 3600,
                       std::string_view extra_claims = {});

}  // namespace itest

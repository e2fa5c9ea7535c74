#include "token_mint.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <ctime>

namespace itest {

std::string Base64Url(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += kAlphabet[(acc >> bits) & 63];
    }
  }
  if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 63];
  return out;
}

std::string SignHs256(std::string_view header_json, std::string_view payload_json, std::string_view secret) {
  std::string signing_input = Base64Url(header_json) + "." + Base64Url(payload_json);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac, &len);
  return signing_input + "." + Base64Url(std::string_view(reinterpret_cast<const char*>(mac), len));
}

std::string Hs256Token(std::string_view secret, std::string_view tenant, int64_t exp_in_s,
                       std::string_view extra_claims) {
  std::string payload = R"({"tenant":")" + std::string(tenant) + R"(","exp":)" +
                        std::to_string(static_cast<int64_t>(std::time(nullptr)) + exp_in_s) +
                        std::string(extra_claims) + "}";
  return SignHs256(R"({"alg":"HS256","typ":"JWT"})", payload, secret);
}

}  // namespace itest

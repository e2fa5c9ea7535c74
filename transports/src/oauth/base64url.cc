#include "oauth/base64url.h"

#include <cstdint>

namespace mcpfan::detail::oauth {

namespace {

int value_of(char c) noexcept {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

bool base64url_decode(std::string_view in, std::string& out) {
  out.clear();
  if (in.size() % 4 == 1) return false;  // 6 bits cannot end a byte
  out.reserve(in.size() * 3 / 4);
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = value_of(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<std::uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // The 2 or 4 bits left over must be zero, or two spellings would decode to the same bytes.
  return (acc & ((1u << bits) - 1)) == 0;
}

}  // namespace mcpfan::detail::oauth

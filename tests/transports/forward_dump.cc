// mcpfan_forward_dump FILE...: for each file of raw client bytes (a fuzz_http corpus entry:
// its "@@AUTH@@"-style prefix and "@@SPLIT@@" markers are removed), one JSON line with what
// mcpfan's RequestParser accepted and what the front proxy would forward for it, for
// tests/transports/forward_diff.mjs to read back with Node's strict llhttp. It also checks,
// itself, that parsing at once and byte by byte agree, and that read_strict() reads each
// forwarded request as parsed ("split" and "strict": null when they hold). Exit 0 unless a
// file cannot be read.
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>

#include "support/forward_check.h"

namespace {

std::string base64(std::string_view in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += k[(v >> s) & 63];
  }
  if (i < in.size()) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    out += k[(v >> 18) & 63];
    out += k[(v >> 12) & 63];
    out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string quoted(std::string_view s) {  // a JSON string of printable ASCII (names and messages)
  std::string out = "\"";
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') out += '\\', out += ch;
    else if (u < 0x20 || u >= 0x7f) out += '?';
    else out += ch;
  }
  return out + "\"";
}

std::string strip_markers(std::string s) {
  for (std::string_view prefix : {"@@AUTH-TRUSTED@@", "@@AUTH@@"}) {
    if (s.compare(0, prefix.size(), prefix) == 0) {
      s.erase(0, prefix.size());
      break;
    }
  }
  constexpr std::string_view kSplit = "@@SPLIT@@";
  for (std::size_t at; (at = s.find(kSplit)) != std::string::npos;) s.erase(at, kSplit.size());
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  using mcpfan::testing::ForwardedCase;
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream f(argv[i], std::ios::binary);
    if (!f) {
      std::cerr << "mcpfan_forward_dump: cannot read " << argv[i] << "\n";
      rc = 2;
      continue;
    }
    std::string bytes = strip_markers(std::string(std::istreambuf_iterator<char>(f), {}));
    ForwardedCase whole = mcpfan::testing::parse_and_forward(bytes);
    ForwardedCase bytewise = mcpfan::testing::parse_and_forward(bytes, 1);
    auto split = mcpfan::testing::compare_cases(whole, bytewise);
    std::string out = "{\"file\":" + quoted(argv[i]) + ",\"split\":" + (split ? quoted(*split) : "null") +
                      ",\"rejected\":" + (whole.rejection ? std::to_string(whole.rejection->status) : "null") +
                      ",\"failed\":" + (whole.failed ? "true" : "false") + ",\"requests\":[";
    for (std::size_t r = 0; r < whole.requests.size(); ++r) {
      const ForwardedCase::One& one = whole.requests[r];
      auto strict = mcpfan::testing::strict_mismatch(one);
      if (r) out += ',';
      out += "{\"method\":" + quoted(one.method) + ",\"target\":\"" + base64(one.target) + "\",\"fields\":[";
      for (std::size_t k = 0; k < one.fields.size(); ++k) {
        if (k) out += ',';
        out += "[\"" + base64(one.fields[k].name) + "\",\"" + base64(one.fields[k].value) + "\"]";
      }
      out += "],\"body\":\"" + base64(one.parsed.body) + "\",\"forwarded\":\"" + base64(one.forwarded.bytes) +
             "\",\"strict\":" + (strict ? quoted(*strict) : "null") + "}";
    }
    std::cout << out << "]}\n";
  }
  return rc;
}

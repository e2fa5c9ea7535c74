#include "http/mcp_name_check.h"

#include <simdjson.h>

#include <array>
#include <cstdint>

namespace mcpfan::detail {

namespace {

constexpr std::string_view kSentinelPrefix = "=?base64?";
constexpr std::string_view kSentinelSuffix = "?=";
constexpr std::size_t kQuotedMax = 200;  // bytes of a value an error message repeats

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9110 §5.5 without obs-text: SP, HTAB and visible ASCII; SEP-2243 "Character Restrictions".
bool header_safe(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c != '\t' && (c < 0x20 || c > 0x7e)) return false;
  }
  return true;
}

int base64_digit(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

// Canonical padded Base64 (RFC 4648 §4): whole quanta, '=' only at the end, unused bits zero.
std::optional<std::string> base64_decode(std::string_view b64) {
  if (b64.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  while (pad < 2 && pad < b64.size() && b64[b64.size() - 1 - pad] == '=') ++pad;
  std::string out;
  out.reserve(b64.size() / 4 * 3);
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < b64.size() - pad; ++i) {
    int d = base64_digit(b64[i]);
    if (d < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<std::uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;  // non-zero unused bits: not canonical
  return out;
}

// `v` in single quotes for an error message, cut at a UTF-8 boundary when long.
std::string in_quotes(std::string_view v) {
  if (v.size() <= kQuotedMax) return "'" + std::string(v) + "'";
  std::size_t n = kQuotedMax;
  while (n > 0 && (static_cast<unsigned char>(v[n]) & 0xc0) == 0x80) --n;
  return "'" + std::string(v.substr(0, n)) + "...'";
}

// Without a backslash no member name is escaped, so a second "method" member shows as a
// second `"method"` in the text; with one, only a parse can tell.
bool may_repeat_method(std::string_view body) {
  if (body.find('\\') != std::string_view::npos) return true;
  auto first = body.find("\"method\"");
  return first != std::string_view::npos && body.find("\"method\"", first + 1) != std::string_view::npos;
}

// What the body holds of the members the headers mirror, counted (names compared unescaped).
struct Members {
  bool parsed = false;
  int methods = 0, params = 0, sources = 0;
  std::optional<std::string> value;  // the mirrored member, when it is a string
};

Members read_members(std::string_view body, std::string_view source) {
  // One parser per thread, reused, as mcp/auth.cc's.
  thread_local simdjson::dom::parser parser;
  Members m;
  simdjson::dom::object root;
  if (parser.parse(body.data(), body.size()).get_object().get(root) != simdjson::SUCCESS) return m;
  m.parsed = true;
  simdjson::dom::element params;
  for (auto [key, value] : root) {
    if (key == "method") ++m.methods;
    if (key == "params" && ++m.params == 1) params = value;
  }
  simdjson::dom::object p;
  if (source.empty() || m.params != 1 || params.get_object().get(p) != simdjson::SUCCESS) return m;
  for (auto [key, value] : p) {
    if (key != source || ++m.sources != 1) continue;
    std::string_view s;
    if (value.get_string().get(s) == simdjson::SUCCESS) m.value.emplace(s);
  }
  return m;
}

}  // namespace

std::string_view mcp_name_source(std::string_view method) noexcept {
  struct Row {
    std::string_view method, member;
  };
  static constexpr std::array<Row, 6> kRows{{{"tools/call", "name"},
                                             {"prompts/get", "name"},
                                             {"resources/read", "uri"},
                                             {"tasks/get", "taskId"},
                                             {"tasks/update", "taskId"},
                                             {"tasks/cancel", "taskId"}}};
  for (const Row& row : kRows) {
    if (row.method == method) return row.member;
  }
  return {};
}

std::optional<std::string> decode_mcp_name(std::string_view header) {
  std::string_view v = trim_ows(header);
  if (!header_safe(v)) return std::nullopt;
  if (v.size() >= kSentinelPrefix.size() + kSentinelSuffix.size() && v.starts_with(kSentinelPrefix) &&
      v.ends_with(kSentinelSuffix)) {
    return base64_decode(v.substr(kSentinelPrefix.size(), v.size() - kSentinelPrefix.size() - kSentinelSuffix.size()));
  }
  return std::string(v);
}

std::optional<std::string> routing_header_mismatch(std::string_view mcp_method, std::string_view mcp_name,
                                                   const RpcRequest& r, std::string_view body, bool required) {
  std::string_view head_method = trim_ows(mcp_method);
  if (head_method.empty()) {
    // Notifications: the 2026-07-28 table requires Mcp-Method on requests only.
    if (required && r.has_id) return "missing Mcp-Method header (must be " + r.method + ")";
  } else if (head_method != r.method) {
    return "Mcp-Method header " + std::string(head_method) + " does not match method " + r.method;
  }
  std::string_view source = r.has_id ? mcp_name_source(r.method) : std::string_view();
  if (source.empty() && !may_repeat_method(body)) return std::nullopt;

  Members m = read_members(body, source);
  if (!m.parsed) return std::nullopt;  // RpcDecoder read it; nothing here to compare
  if (m.methods > 1) return std::string("the body has more than one \"method\" member: Mcp-Method cannot vouch for it");
  if (source.empty()) return std::nullopt;
  std::string field = "params." + std::string(source);
  if (m.params > 1) return std::string("the body has more than one \"params\" member: Mcp-Name cannot vouch for it");
  if (m.sources > 1) return "the body has more than one " + field + ": Mcp-Name cannot vouch for it";

  std::string_view head_name = trim_ows(mcp_name);
  if (head_name.empty()) {
    if (required && m.value) return "missing Mcp-Name header (must mirror " + field + " " + in_quotes(*m.value) + ")";
    return std::nullopt;
  }
  std::optional<std::string> name = decode_mcp_name(head_name);
  if (!name) {
    return std::string(header_safe(head_name)
                           ? "Mcp-Name header value " + in_quotes(head_name) + " is not a valid =?base64?...?= value"
                           : "Mcp-Name header value holds a byte outside visible ASCII, SP and HTAB");
  }
  // The header is quoted as sent (ASCII); a decoded sentinel may be any bytes.
  if (!m.value)
    return "Mcp-Name header value " + in_quotes(head_name) + " has no string " + field + " to match in the body";
  if (*name != *m.value) {
    return "Mcp-Name header value " + in_quotes(head_name) + " does not match " + field + " " + in_quotes(*m.value);
  }
  return std::nullopt;
}

}  // namespace mcpfan::detail

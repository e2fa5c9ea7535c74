#pragma once
// The syntax of HTTP fields (RFC 9110 §5), shared by the request parser, the forwarded request
// and the relayed answer: one definition of a token and of a clean value. Pure functions.
#include <strings.h>

#include <string_view>

namespace mcpfan::detail {

/** Case-insensitive ASCII equality (field names). */
[[nodiscard]] inline bool ieq(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

/** Whether `s` starts with `prefix`, ASCII case ignored. */
[[nodiscard]] inline bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && ieq(s.substr(0, prefix.size()), prefix);
}

/** Whether `s` contains `needle`, ASCII case ignored. */
[[nodiscard]] inline bool icontains(std::string_view s, std::string_view needle) noexcept {
  for (std::size_t i = 0; i + needle.size() <= s.size(); ++i) {
    if (istarts_with(s.substr(i), needle)) return true;
  }
  return false;
}

/** tchar (RFC 9110 §5.6.2). */
[[nodiscard]] inline bool is_tchar(char ch) noexcept {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string_view::npos;
}

/** A token: one or more tchar. Field names and methods are tokens. */
[[nodiscard]] inline bool is_token(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char ch : s) {
    if (!is_tchar(ch)) return false;
  }
  return true;
}

/** A field value mcpfan passes on: no control byte but HTAB (so no CR, LF or NUL), no DEL. obs-text is allowed. */
[[nodiscard]] inline bool is_clean_field_value(std::string_view v) noexcept {
  for (char ch : v) {
    auto u = static_cast<unsigned char>(ch);
    if ((u < 0x20 && ch != '\t') || u == 0x7f) return false;
  }
  return true;
}

}  // namespace mcpfan::detail

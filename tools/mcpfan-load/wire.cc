#include "wire.h"

#include <strings.h>

#include <charconv>

namespace mcpload {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IEq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

bool IContains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (strncasecmp(hay.data() + i, needle.data(), needle.size()) == 0) return true;
  }
  return false;
}

}  // namespace

bool ParseHead(std::string_view head, HttpHead* out) {
  *out = HttpHead{};
  size_t eol = head.find("\r\n");
  if (eol == std::string_view::npos) return false;
  std::string_view status_line = head.substr(0, eol);
  // "HTTP/1.1 200 OK"
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') return false;
  int status = 0;
  auto [ptr, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, status);
  if (ec != std::errc() || ptr != status_line.data() + 12 || status < 100 || status > 599) return false;
  out->status = status;
  bool http10 = status_line[7] == '0';
  out->close = http10;
  size_t pos = eol + 2;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    if (e == std::string_view::npos) return false;
    std::string_view line = head.substr(pos, e - pos);
    pos = e + 2;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return false;
    std::string_view name = line.substr(0, colon);
    std::string_view value = Trim(line.substr(colon + 1));
    if (IEq(name, "content-length")) {
      int64_t n = -1;
      auto [p2, ec2] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec2 != std::errc() || p2 != value.data() + value.size() || n < 0) return false;
      out->content_length = n;
    } else if (IEq(name, "transfer-encoding")) {
      out->chunked = IContains(value, "chunked");
    } else if (IEq(name, "connection")) {
      if (IContains(value, "close")) out->close = true;
      if (http10 && IContains(value, "keep-alive")) out->close = false;
    } else if (IEq(name, "content-type")) {
      std::string_view media = Trim(value.substr(0, value.find(';')));
      out->content_type.assign(media);
      for (char& c : out->content_type) c = char(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (IEq(name, "mcp-session-id")) {
      out->session_id.assign(value);
    }
  }
  return true;
}

}  // namespace mcpload

// A log record as one line of text or JSON (transport/log.h format_log_record); the tests are
// tests/transports/server/log_sink_test.cc and tests/integration/log_format_test.cc.
#include <time.h>

#include <cstdio>

#include "mcpfan/transport/log.h"

namespace mcpfan {

namespace {

void append_time(std::string& out, std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(ms / 1000);
  long frac = static_cast<long>(ms % 1000);
  if (frac < 0) {  // before 1970: floor, not truncate
    frac += 1000;
    --secs;
  }
  tm parts{};
  gmtime_r(&secs, &parts);
  char buf[40];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", parts.tm_year + 1900, parts.tm_mon + 1,
                        parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec, frac);
  if (n > 0) out.append(buf, static_cast<std::size_t>(n));
}

void append_hex_escape(std::string& out, const char* prefix, unsigned value, int digits) {
  char buf[12];
  int n = std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  if (n > 0) out.append(buf, static_cast<std::size_t>(n));
}

// Text: one record is one line whatever the message holds, so control bytes are escaped.
void append_text(std::string& out, std::string_view s) {
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) append_hex_escape(out, "\\x", c, 2);
    else out += static_cast<char>(c);
  }
}

void append_text_value(std::string& out, std::string_view v) {
  bool quote = v.empty();
  for (unsigned char c : v) quote = quote || c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f;
  if (!quote) return append_text(out, v);
  out += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else {
      append_text(out, std::string_view(&c, 1));
    }
  }
  out += '"';
}

// The length of the valid UTF-8 sequence at s[i], or 0 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = at(i);
  std::size_t len = c < 0x80                 ? 1
                    : c >= 0xc2 && c <= 0xdf ? 2
                    : c >= 0xe0 && c <= 0xef ? 3
                    : c >= 0xf0 && c <= 0xf4 ? 4
                                             : 0;
  if (len <= 1 || i + len > s.size()) return len == 1 ? 1 : 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((at(i + k) & 0xc0) != 0x80) return 0;
  }
  unsigned char c1 = at(i + 1);
  if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) || (c == 0xf4 && c1 > 0x8f))
    return 0;
  return len;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      append_hex_escape(out, "\\u", c, 4);
    } else if (c >= 0x80) {
      std::size_t len = utf8_length(s, i);
      if (len == 0) {
        out += "\\ufffd";  // a byte that starts no valid sequence: the line stays valid JSON
        ++i;
        continue;
      }
      out.append(s.substr(i, len));
      i += len;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

// A JSON number as call sites make them (decimal integers or fractions); anything else is quoted.
bool json_number(std::string_view v) {
  if (v.empty() || v.size() > 32) return false;
  std::size_t i = v[0] == '-' ? 1 : 0;
  bool digits = false, dot = false;
  for (; i < v.size(); ++i) {
    if (v[i] >= '0' && v[i] <= '9') digits = true;
    else if (v[i] == '.' && !dot && digits) dot = true;
    else return false;
  }
  return digits && v.back() != '.';
}

constexpr std::string_view kTextLevel[] = {"DEBUG", "INFO", "WARN", "ERROR"};

}  // namespace

std::string_view log_level_name(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::Debug: return "debug";
    case LogLevel::Info: return "info";
    case LogLevel::Warn: return "warn";
    case LogLevel::Error: return "error";
  }
  return "info";
}

std::optional<LogLevel> parse_log_level(std::string_view name) noexcept {
  for (LogLevel l : {LogLevel::Debug, LogLevel::Info, LogLevel::Warn, LogLevel::Error}) {
    if (name == log_level_name(l)) return l;
  }
  if (name == "warning") return LogLevel::Warn;
  return std::nullopt;
}

std::string format_log_record(const LogRecord& r, LogFormat format) {
  std::string out;
  out.reserve(64 + r.message.size() + r.fields.size() * 24);
  const auto level = static_cast<std::size_t>(r.level) < 4 ? static_cast<std::size_t>(r.level) : 1;
  if (format == LogFormat::Text) {
    // The body after "mcpfan: " is what the program wrote before levels existed, so that
    // readers matching "mcpfan: listening on HOST:PORT" keep working (tests/integration/log_format_test.cc).
    append_time(out, r.time);
    out += ' ';
    out += kTextLevel[level];
    out += " mcpfan: ";
    append_text(out, r.message);
    for (const LogField& f : r.fields) {
      out += ' ';
      append_text(out, f.key);
      out += '=';
      append_text_value(out, f.value);
    }
    if (r.suppressed > 0) out += " (" + std::to_string(r.suppressed) + " similar lines suppressed)";
  } else {
    out += "{\"ts\":\"";
    append_time(out, r.time);
    out += "\",\"level\":";
    append_json_string(out, log_level_name(static_cast<LogLevel>(level)));
    out += ",\"kind\":";
    append_json_string(out, r.kind);
    out += ",\"msg\":";
    append_json_string(out, r.message);
    if (r.suppressed > 0) out += ",\"suppressed\":" + std::to_string(r.suppressed);
    for (const LogField& f : r.fields) {
      out += ',';
      append_json_string(out, f.key);
      out += ':';
      if (f.number && json_number(f.value)) out += f.value;
      else append_json_string(out, f.value);
    }
    out += '}';
  }
  out += '\n';
  return out;
}

}  // namespace mcpfan

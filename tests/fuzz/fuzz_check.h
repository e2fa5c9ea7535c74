#pragma once
// Invariant checks for the fuzz targets: a failed check prints what broke and aborts, and
// libFuzzer saves the input that did it (crash-<sha1> in -artifact_prefix).
#include <simdjson.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace mcpfan::fuzz {

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond, const char* fmt, ...) {
  std::fprintf(stderr, "\n==mcpfan-fuzz== invariant broken at %s:%d: %s\n==mcpfan-fuzz== ", file, line, cond);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  std::abort();
}

/** Up to `max` bytes of `s` for a message, with non-printable bytes as \xNN. */
inline std::string printable(std::string_view s, std::size_t max = 400) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < max; ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      out.push_back(static_cast<char>(u));
    } else {
      out += "\\x";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    }
  }
  if (s.size() > max) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

/**
 * A known, reported bug that a long fuzzing session may step over so it can look for others:
 * MCPFAN_FUZZ_TOLERATE is a comma-separated list of names (README.md lists them). Unset, as in
 * tools/run-fuzz.sh by default, every check is strict.
 */
inline bool tolerated(std::string_view name) {
  // Never destroyed: atexit handlers (the fuzz server's stop) may ask after static destructors ran.
  static const std::string* const list = [] {
    const char* e = std::getenv("MCPFAN_FUZZ_TOLERATE");
    return new std::string(std::string(",") + (e ? e : "") + ",");
  }();
  return list->find(std::string(",") + std::string(name) + ",") != std::string::npos;
}

/** Parses `json` (copied into the parser's padded buffer); the error code, SUCCESS if valid. */
inline simdjson::error_code parse_json(simdjson::dom::parser& parser, std::string_view json,
                                       simdjson::dom::element& out) {
  return parser.parse(json.data(), json.size(), true).get(out);
}

}  // namespace mcpfan::fuzz

#define FUZZ_CHECK(cond, ...)                                                        \
  do {                                                                               \
    if (!(cond)) ::mcpfan::fuzz::check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)

#include "server/config_check.h"

#include "net/send_ring.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

namespace mcpfan::detail {

static_assert(settings::kMaxIoUringEntries == SendRing::kMaxEntries, "--io-uring-entries allows what the ring takes");

namespace {

std::string number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<long long>(v));
  return std::to_string(v);
}

std::string where(const SettingInfo& s) {
  return " (" + (s.flag.empty() ? std::string("no flag") : std::string(s.flag)) + ")";
}

// "is neither "a" nor "b"" for two words (every list today), "is none of "a", "b", "c"" for more.
std::string not_one_of(const SettingInfo& s) {
  std::string out = s.words.size() == 2 ? "is neither " : "is none of ";
  for (std::size_t i = 0; i < s.words.size(); ++i) {
    if (i > 0) out += s.words.size() == 2 ? " nor " : ", ";
    out += "\"" + std::string(s.words[i]) + "\"";
  }
  return out;
}

}  // namespace

Status check_config(const ServerConfig& c) {
  Status out;
  for_each_setting(c, [&out](const SettingInfo& s, const auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    if (!out) return;  // the first problem only
    const std::string field = "ServerConfig::" + std::string(s.path);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const double v = static_cast<double>(value);  // every bound is exact in a double
      // !(a <= b) also catches NaN.
      if (s.ranged && !(v >= s.min && v <= s.max)) {
        out = Error{rpc_code::kInvalidParams,
                    field + " = " + number(v) + " is outside " + number(s.min) + ".." + number(s.max) + where(s)};
      }
    } else if constexpr (std::is_same_v<T, std::string>) {
      if (s.words.empty()) return;
      for (std::string_view w : s.words) {
        if (value == w) return;
      }
      out = Error{rpc_code::kInvalidParams, field + " = \"" + value + "\" " + not_one_of(s) + where(s)};
    }
  });
  return out;
}

}  // namespace mcpfan::detail

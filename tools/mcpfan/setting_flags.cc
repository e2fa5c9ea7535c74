#include "setting_flags.h"

#include <type_traits>
#include <vector>

#include "mcpfan/transport/settings.h"

namespace mcpfan::tool {

namespace {

// The checks the parser makes itself; Server::check() judges every range after the parse.
template <class T>
void add_checks(CLI::Option* o, const SettingInfo& s) {
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    if (s.cli == CliCheck::Range) o->check(CLI::Range(static_cast<T>(s.min), static_cast<T>(s.max)));
    if (s.cli == CliCheck::NonNegative) o->check(CLI::NonNegativeNumber);
  }
  if (s.file) o->check(CLI::ExistingFile);
  if (!s.words.empty()) o->check(CLI::IsMember(std::vector<std::string>(s.words.begin(), s.words.end())));
}

}  // namespace

void add_setting_flags(CLI::App& app, ServerConfig& cfg, const std::function<void(std::string_view flag)>& after) {
  for_each_setting(cfg, [&app, &after](const SettingInfo& s, auto& field) {
    using T = std::remove_cvref_t<decltype(field)>;
    if (s.flag.empty()) return;  // an embedder's setting
    const std::string flag(s.flag), help(s.help);
    if constexpr (std::is_same_v<T, bool>) {
      app.add_flag(flag, field, help);
    } else {
      CLI::Option* o = app.add_option(flag, field, help);
      // An empty default (a file, a URL, a list) says nothing in --help.
      if constexpr (std::is_arithmetic_v<T>) o->capture_default_str();
      if constexpr (std::is_same_v<T, std::string>) {
        if (!field.empty()) o->capture_default_str();
      }
      add_checks<T>(o, s);
    }
    if (after) after(s.flag);
  });
}

bool reloadable_key(const std::string& key) {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    const ServerConfig defaults;
    for_each_setting(defaults, [&out](const SettingInfo& s, const auto&) {
      if (s.reloadable && s.flag.size() > 2) out.emplace_back(s.flag.substr(2));
    });
    return out;
  }();
  for (const std::string& k : keys) {
    if (key == k) return true;
  }
  return false;
}

}  // namespace mcpfan::tool

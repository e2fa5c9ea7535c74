// The declarations of mcpfan/transport/settings.h against what uses them: every setting has
// its own flag and path; every default lies within its range and words; Server::check()
// refuses a value just outside a range (or outside the words), naming the path and the flag;
// and Server::reload() applies exactly the settings declared reloadable.
#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "mcpfan/transport/server.h"
#include "mcpfan/transport/settings.h"
#include "support/file_dir.h"

namespace {

using mcpfan::ServerConfig;
using mcpfan::SettingInfo;

template <class T>
constexpr bool kNumber = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

std::vector<SettingInfo> declared() {
  std::vector<SettingInfo> out;
  const ServerConfig c;
  mcpfan::for_each_setting(c, [&out](const SettingInfo& s, const auto&) { out.push_back(s); });
  return out;
}

std::string check_outcome(const ServerConfig& c) {
  auto r = mcpfan::Server::check(c);
  return r ? "ok" : r.error().message;
}

TEST(Settings, EachHasItsOwnFlagAndPath) {
  std::set<std::string_view> flags, paths;
  int flagless = 0;
  for (const SettingInfo& s : declared()) {
    EXPECT_TRUE(paths.insert(s.path).second) << "path declared twice: " << s.path;
    EXPECT_FALSE(s.help.empty()) << s.path;
    if (s.flag.empty()) {
      ++flagless;
      continue;
    }
    EXPECT_TRUE(flags.insert(s.flag).second) << "flag declared twice: " << s.flag;
    EXPECT_EQ(s.flag.substr(0, 2), "--") << s.flag;
  }
  EXPECT_EQ(flagless, 1);  // shard.drain_batch, an embedder's setting
  EXPECT_GE(paths.size(), 60u);
}

TEST(Settings, DefaultsLieWithinTheirRangesAndWords) {
  const ServerConfig c;
  int ranged = 0;
  mcpfan::for_each_setting(c, [&ranged](const SettingInfo& s, const auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    if constexpr (kNumber<T>) {
      EXPECT_TRUE(s.ranged) << s.path << ": a number without a range";
      EXPECT_LE(s.min, s.max) << s.path;
      EXPECT_GE(static_cast<double>(value), s.min) << s.path;
      EXPECT_LE(static_cast<double>(value), s.max) << s.path;
      // The bounds are values of the field's type (the command line's range check casts them).
      EXPECT_GE(s.min, static_cast<double>(std::numeric_limits<T>::lowest())) << s.path;
      EXPECT_LE(s.max, static_cast<double>(std::numeric_limits<T>::max())) << s.path;
      ++ranged;
    } else {
      EXPECT_FALSE(s.ranged) << s.path << ": a range on a value that is not a number";
      EXPECT_EQ(s.cli, mcpfan::CliCheck::None) << s.path;
    }
    if constexpr (std::is_same_v<T, std::string>) {
      if (!s.words.empty()) {
        bool known = false;
        for (std::string_view w : s.words) known = known || w == value;
        EXPECT_TRUE(known) << s.path << " = " << value;
      }
    }
  });
  EXPECT_GE(ranged, 45);
  EXPECT_EQ(check_outcome(c).substr(0, 2), "ok") << check_outcome(c);
}

// Each ranged setting at its bounds passes Server::check(); one step outside (where the type
// can hold it) is refused, naming the nested path, the bounds and the flag.
TEST(Settings, CheckRefusesJustOutsideEveryRangeNamingTheFlag) {
  const ServerConfig defaults;
  int refused = 0;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, const auto& field) {
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (kNumber<T>) {
      const std::string flag = s.flag.empty() ? "no flag" : std::string(s.flag);
      const std::string path = "ServerConfig::" + std::string(s.path) + " = ";
      auto with = [&](double v) {
        ServerConfig c;
        mcpfan::for_each_setting(c, [&](const SettingInfo& t, auto& f) {
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(f)>, T>) {
            if (t.path == s.path) f = static_cast<T>(v);
          }
        });
        return check_outcome(c);
      };
      for (double edge : {s.min, s.max}) EXPECT_EQ(with(edge), "ok") << s.path << " = " << edge;
      const double lowest = static_cast<double>(std::numeric_limits<T>::lowest());
      const double highest = static_cast<double>(std::numeric_limits<T>::max());
      for (double outside : {s.min - 1, s.max + 1}) {
        if (outside < lowest || outside > highest || outside == s.min || outside == s.max) continue;
        const std::string got = with(outside);
        EXPECT_EQ(got.rfind(path, 0), 0u) << got;
        EXPECT_NE(got.find(" is outside "), std::string::npos) << got;
        EXPECT_NE(got.find("(" + flag + ")"), std::string::npos) << got;
        ++refused;
      }
    }
  });
  EXPECT_GE(refused, 60);
}

TEST(Settings, CheckRefusesAWordNotDeclared) {
  int words = 0;
  ServerConfig defaults;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, auto& field) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(field)>, std::string>) {
      if (s.words.empty()) return;
      ++words;
      const std::string kept = field;
      field = "none-of-them";
      const std::string got = check_outcome(defaults);
      EXPECT_EQ(got.rfind("ServerConfig::" + std::string(s.path) + " = \"none-of-them\" is neither", 0), 0u) << got;
      EXPECT_NE(got.find("(" + std::string(s.flag) + ")"), std::string::npos) << got;
      field = kept;
    }
  });
  EXPECT_EQ(words, 3);  // --nats-io, --nats-receive, --readyz-backplane
}


// A value of the field other than `now`, within its range: what a reload is given.
template <class T>
T another(const SettingInfo& s, const T& now) {
  if constexpr (std::is_same_v<T, bool>) {
    return !now;
  } else if constexpr (kNumber<T>) {
    return static_cast<double>(now) != s.min ? static_cast<T>(s.min) : static_cast<T>(s.max);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return s.words.empty() ? std::string("/nonexistent/changed") : std::string(s.words[s.words[0] == now ? 1 : 0]);
  } else {
    T out = now;
    out.push_back("http://changed.example");
    return out;
  }
}

// Server::reload() is given the running configuration with one setting changed: a setting it
// applies changes what it answers (its summary of what is in force, or its refusal of a file it
// cannot read); any other setting changes nothing. That must be what settings.h declares.
TEST(Settings, ReloadAppliesExactlyTheSettingsDeclaredReloadable) {
  mcpfan::testing::FileDir files;
  ServerConfig running;
  running.listen.port = 0;
  running.workers = 1;
  running.auth.jwt_secret_file = files.file("secret", std::string(40, 's'));
  running.auth.publish_keys_file = files.file("keys", std::string(24, 'k') + " *\n");
  running.auth.publish_rate = 100;  // a burst shows in the summary only with a rate
  mcpfan::Server server(running);
  ASSERT_TRUE(server.start());
  auto answer = [&server](const ServerConfig& next) {
    auto r = server.reload(next);
    return r ? "applied: " + r.value() : "refused: " + r.error().message;
  };
  const std::string baseline = answer(running);
  ASSERT_EQ(baseline.rfind("applied: ", 0), 0u) << baseline;
  std::set<std::string_view> applied, declared_reloadable;
  mcpfan::for_each_setting(running, [&](const SettingInfo& s, const auto& value) {
    if (s.reloadable) declared_reloadable.insert(s.path);
    ServerConfig next = running;
    mcpfan::for_each_setting(next, [&](const SettingInfo& t, auto& f) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(f)>, std::remove_cvref_t<decltype(value)>>) {
        if (t.path == s.path) f = another(t, f);
      }
    });
    if (answer(next) != baseline) applied.insert(s.path);
    EXPECT_EQ(answer(running), baseline) << "after " << s.path;  // nothing stuck from the last one
  });
  EXPECT_EQ(applied, declared_reloadable);
  EXPECT_EQ(declared_reloadable.size(), 13u);
  EXPECT_TRUE(server.stop());
}

}  // namespace

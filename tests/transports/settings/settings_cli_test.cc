// The mcpfan program's flags come from the same declarations (mcpfan/transport/settings.h):
// `mcpfan --check-config` takes every ranged setting at its bounds and refuses one step
// outside them (exit 2, naming the flag), whether the flag's own check or Server::check()
// after the parse says so; a word not declared is refused too; --help lists every flag; the
// shipped config template marks [reload] exactly the settings declared reloadable.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "mcpfan/transport/settings.h"

extern char** environ;

namespace {

using mcpfan::SettingInfo;

struct Outcome {
  int status = -1;  // the exit status; -1: did not exit
  std::string out;  // stdout and stderr together
};

Outcome mcpfan(const std::vector<std::string>& args) {
  std::vector<std::string> all{MCPFAN_BIN};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  Outcome r;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) r.out.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  if (spawned == 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.status = WEXITSTATUS(status);
  return r;
}

// A bound as the command line writes it: whole numbers without an exponent.
std::string text(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e18) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v);
  }
  return buf;
}

TEST(SettingsCli, EveryRangeIsTakenAtItsBoundsAndRefusedOneStepOutside) {
  const mcpfan::ServerConfig defaults;
  int refused = 0;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, const auto& value) {
    using T = std::remove_cvref_t<decltype(value)>;
    if (!s.ranged || s.flag.empty()) return;
    const std::string flag(s.flag);
    for (double edge : {s.min, s.max}) {
      Outcome r = mcpfan({"--check-config", flag + "=" + text(edge)});
      EXPECT_EQ(r.status, 0) << flag << "=" << text(edge) << ": " << r.out;
    }
    // Below a bound of 0 an unsigned flag cannot even be read: refused all the same.
    const double step = std::is_floating_point_v<T> ? std::fmax(1, s.max * 1e-9) : 1;
    for (double outside : {s.min - step, s.max + step}) {
      Outcome r = mcpfan({"--check-config", flag + "=" + text(outside)});
      EXPECT_EQ(r.status, 2) << flag << "=" << text(outside) << ": " << r.out;
      EXPECT_NE(r.out.find(flag), std::string::npos) << flag << "=" << text(outside) << ": " << r.out;
      ++refused;
    }
  });
  EXPECT_GE(refused, 90);
}

TEST(SettingsCli, AWordNotDeclaredIsRefused) {
  const mcpfan::ServerConfig defaults;
  int words = 0;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, const auto&) {
    if (s.words.empty()) return;
    ++words;
    const std::string flag(s.flag);
    Outcome r = mcpfan({"--check-config", flag + "=none-of-them"});
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.out.find(flag), std::string::npos) << r.out;
    for (std::string_view w : s.words) {
      EXPECT_EQ(mcpfan({"--check-config", flag + "=" + std::string(w)}).status, 0) << flag << "=" << w;
    }
  });
  EXPECT_EQ(words, 3);  // --nats-io, --nats-receive, --readyz-backplane
}

TEST(SettingsCli, HelpListsEveryDeclaredFlagWithItsHelp) {
  Outcome help = mcpfan({"--help"});
  ASSERT_EQ(help.status, 0) << help.out;
  const mcpfan::ServerConfig defaults;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, const auto&) {
    if (s.flag.empty()) return;
    const std::string line = "\n  " + std::string(s.flag);
    const bool listed =
        help.out.find(line + " ") != std::string::npos || help.out.find(line + "\n") != std::string::npos;
    EXPECT_TRUE(listed) << s.flag;
    EXPECT_NE(help.out.find(std::string(s.help)), std::string::npos) << s.flag;
  });
}

TEST(SettingsCli, TheTemplateMarksReloadableExactlyTheDeclaredOnes) {
  std::ifstream in(MCPFAN_SOURCE_DIR "/packaging/mcpfan.toml");
  ASSERT_TRUE(in) << "packaging/mcpfan.toml";
  std::set<std::string> marked, declared;
  for (std::string line; std::getline(in, line);) {
    // "# KEY = VALUE   # [reload] ..." (every key is commented out in the template)
    if (line.rfind("# ", 0) != 0 || line.find("[reload]") == std::string::npos) continue;
    const std::size_t eq = line.find(" = ");
    if (eq != std::string::npos) marked.insert(line.substr(2, eq - 2));
  }
  const mcpfan::ServerConfig defaults;
  mcpfan::for_each_setting(defaults, [&](const SettingInfo& s, const auto&) {
    if (s.reloadable) declared.insert(std::string(s.flag.substr(2)));
  });
  EXPECT_EQ(marked, declared);
}

}  // namespace

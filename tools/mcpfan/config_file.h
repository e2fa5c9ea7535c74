#pragma once
// The --config file: TOML whose keys are the long flag names (listen = "127.0.0.1:8080").
// CLI11 reads it through this formatter, so a reload (SIGHUP) reads it the same way. Every
// problem names the file, the line and the key: syntax (an unterminated string, a [table]),
// an unknown or duplicate key, a value of the wrong type or outside the flag's range. Each
// value is tried on a fresh set of the program's flags (a "scratch" app) before CLI11 applies
// it, which is how a conversion or range error gets its line. Main-thread only.
#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace mcpfan::tool {

/** Where the file put each key; filled when CLI11 reads the file. */
struct ConfigSource {
  std::string file;                   // as given to --config; empty: no file read
  std::map<std::string, int> lines;   // key -> line (from 1)
  std::set<std::string> overridden;   // keys the command line also set: there the file's value is unused

  /**
   * "FILE:LINE: KEY: " for the first key this file set (and the command line did not) that
   * `message` names as "--KEY"; empty when it names none. How a later check (the listen address,
   * Server::check()) points at the line to fix.
   */
  [[nodiscard]] std::string locate(const std::string& message) const;
};

/** A fresh CLI::App carrying every setting flag of the program (its values unused). */
using ScratchApp = std::function<std::unique_ptr<CLI::App>()>;

/**
 * Adds --config to `app` (a file of keys named like the flags; a key the command line also
 * sets is the command line's) and installs the reader. `scratch` builds the app each value is
 * tried on. The returned source is filled by app.parse().
 */
std::shared_ptr<const ConfigSource> use_config_file(CLI::App& app, ScratchApp scratch);

/** `s` with control characters (a NUL ends a C string) shown as '?': CLI11 messages print option values raw. */
[[nodiscard]] std::string printable(std::string s);

/** Keys that are options of the program but no settings: a config file may not name them. */
[[nodiscard]] bool is_command_only(const std::string& key);

}  // namespace mcpfan::tool

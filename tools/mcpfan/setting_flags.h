#pragma once
// The program's flags for the declared settings (mcpfan/transport/settings.h): one CLI11
// option per setting with a flag, its help, default, range and words as declared. The flags
// that are not one setting (--listen, --log-level, ...) stay in main.cc. Main-thread only.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "mcpfan/transport/server_config.h"

namespace mcpfan::tool {

/**
 * Adds every declared setting's flag to `app`, bound to its field of `cfg` (which must outlive
 * `app`), in the declarations' order. `after` is called with each flag once it is added: where
 * the caller puts a flag of its own between two settings (--help lists flags as added).
 */
void add_setting_flags(CLI::App& app, ServerConfig& cfg, const std::function<void(std::string_view flag)>& after = {});

/** Whether `key` (a flag without its "--", as in a config file) names a setting Server::reload() applies. */
[[nodiscard]] bool reloadable_key(const std::string& key);

}  // namespace mcpfan::tool

#pragma once
// The mcpfan program's command line: parsing with every outcome mapped to one of three
// documented exit statuses, and configuration problems reported as "mcpfan: ..." lines that
// point at the --config file's line where the file set the value. Main-thread only.
#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "config_file.h"
#include "mcpfan/transport/server.h"

namespace mcpfan::tool {

// Exit statuses (also in --help's footer, kExitStatusHelp).
inline constexpr int kExitOk = 0;  // --help, --version, --check-config passed; or stopped by a signal or stdin's end
inline constexpr int kExitFailure =
    1;  // the configuration was valid but the start failed (a port in use) or serving failed
inline constexpr int kExitConfig = 2;   // a bad command line or configuration: nothing was started

/** The footer of mcpfan --help: the exit statuses. */
extern const char* const kExitStatusHelp;

/**
 * app.parse(argc, argv). nullopt: parsed, go on. Else the exit status to return: 0 after
 * --help or --version printed their text on stdout, 2 after "mcpfan: <problem>" on stderr
 * (an unknown option, a bad value, a --config file's problem with its file, line and key).
 */
[[nodiscard]] std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv);

/**
 * Prints "mcpfan: <message>" on stderr for a configuration problem found after parsing, with
 * "FILE:LINE: KEY: " before the message when it names a flag the --config file set.
 */
void report_config_problem(const ConfigSource& source, const std::string& message);

/**
 * --check-config's report on stdout: "mcpfan: configuration OK (FILE)" and what a start would
 * serve (listeners, workers, `checked`: Server::check()'s summary of keys, rate and ceilings,
 * NATS and upstream, neither of them contacted).
 */
void print_check_summary(const std::string& file, const std::string& listen, const std::string& publish_listen,
                         const ServerConfig& config, const std::string& checked);

}  // namespace mcpfan::tool

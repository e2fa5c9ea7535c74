#include "command_line.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mcpfan::tool {

const char* const kExitStatusHelp =
    "Exit status: 0 stopped by SIGTERM/SIGINT or the end of --stdio's input, or --help, --version, "
    "--check-config passed; 1 the start failed (e.g. a port in use) or serving failed; 2 a bad command line "
    "or configuration (nothing was started).";

namespace {

// CLI11 says only "was not readable (missing?)"; the system says why.
std::string config_file_problem(const CLI::App& app) {
  const CLI::Option* config = app.get_config_ptr();
  std::string path = config != nullptr && !config->results().empty() ? config->results().front() : "";
  if (path.empty()) return "--config: no file named";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return "--config " + path + ": " + std::strerror(errno);
  std::fclose(f);
  return "--config " + path + ": not a readable file";
}

}  // namespace

std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
      (void)app.exit(e);  // --help or --version: their text on stdout
      return kExitOk;
    }
    std::string what =
        dynamic_cast<const CLI::FileError*>(&e) != nullptr ? config_file_problem(app) : printable(e.what());
    std::fprintf(stderr, "mcpfan: %s\n", what.c_str());
    if (dynamic_cast<const CLI::ConfigError*>(&e) == nullptr) std::fprintf(stderr, "mcpfan: see mcpfan --help\n");
    std::fflush(stderr);
    return kExitConfig;
  }
}

void report_config_problem(const ConfigSource& source, const std::string& message) {
  std::string where = source.locate(message);
  std::string what = message;
  // "FILE:LINE: jwt-secret-file: --jwt-secret-file: ..." says the key twice.
  if (auto colon = where.rfind(": ", where.size() - 3); !where.empty() && colon != std::string::npos) {
    std::string flag = "--" + where.substr(colon + 2, where.size() - colon - 4) + ": ";
    if (what.rfind(flag, 0) == 0) what.erase(0, flag.size());
  }
  std::fprintf(stderr, "mcpfan: %s%s\n", where.c_str(), what.c_str());
  std::fflush(stderr);
}

void print_check_summary(const std::string& file, const std::string& listen, const std::string& publish_listen,
                         const ServerConfig& c, const std::string& checked) {
  std::printf("mcpfan: configuration OK (%s)\n", file.empty() ? "command line only, no --config file" : file.c_str());
  std::printf("  listen %s%s%s; workers %s%s\n", listen.c_str(), publish_listen.empty() ? "" : ", publish-listen ",
              publish_listen.c_str(), c.workers == 0 ? "one per core" : std::to_string(c.workers).c_str(),
              c.listen.insecure ? "; --insecure" : "");
  std::printf("  %s\n", checked.c_str());
  std::printf("  nats %s; upstream %s (neither contacted by --check-config)\n",
              c.nats.urls.empty() ? "off" : c.nats.urls.c_str(),
              c.upstream.url.empty() ? "off" : c.upstream.url.c_str());
  std::fflush(stdout);
}

}  // namespace mcpfan::tool

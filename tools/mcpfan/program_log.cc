#include "program_log.h"

#include <chrono>

#include "mcpfan/version.h"

namespace mcpfan::tool {

void program_log(const ServerConfig& cfg, LogLevel level, std::string_view kind, std::string message,
                 std::vector<LogField> fields, bool always) {
  if (!always && level < cfg.log_level) return;
  LogRecord r;
  r.time = std::chrono::system_clock::now();
  r.level = level;
  r.kind = kind;
  r.message = std::move(message);
  r.fields = std::move(fields);
  write_stderr_log(r, cfg.log_format);
}

namespace {

std::string client_auth(const ServerConfig& c) {
  if (!c.jwt_secret_file.empty()) return "jwt-hs256";
  if (!c.jwt_public_key_file.empty()) return "jwt-public-key";
  return "none";
}

}  // namespace

void log_startup_summary(const ServerConfig& c) {
  program_log(c, LogLevel::Info, "start", "mcpfan " + std::string(build::kVersion) + " starting",
              {{"version", std::string(build::kVersion)},
               {"compiler", std::string(build::kCompiler)},
               {"build", std::string(build::kBuildType)},
               {"log_level", std::string(log_level_name(c.log_level))}});
  std::vector<LogField> auth{{"clients", client_auth(c)}, {"publishers", c.publish_keys_file.empty() ? "none" : "keys"}};
  if (!c.jwt_secret_file.empty()) auth.push_back({"jwt_secret_file", c.jwt_secret_file});
  if (!c.jwt_public_key_file.empty()) auth.push_back({"jwt_public_key_file", c.jwt_public_key_file});
  if (!c.publish_keys_file.empty()) auth.push_back({"publish_keys_file", c.publish_keys_file});
  if (!c.unix_tenant.empty()) auth.push_back({"unix_tenant", c.unix_tenant});
  program_log(c, LogLevel::Info, "start_auth", "authentication", std::move(auth));
  if (c.nats.empty()) {
    program_log(c, LogLevel::Info, "start_backplane", "backplane: none (one process, in memory)", {});
  } else {
    program_log(c, LogLevel::Info, "start_backplane", "backplane: NATS",
                {{"nats", c.nats}, {"node", c.node_name.empty() ? "mcpfan" : c.node_name}, {"prefix", c.nats_prefix}});
  }
  program_log(c, LogLevel::Info, "start_upstream", c.upstream.empty() ? "upstream: none" : "upstream",
              c.upstream.empty() ? std::vector<LogField>{} : std::vector<LogField>{{"upstream", c.upstream}});
}

void flush_program_log() { (void)flush_stderr_log(std::chrono::milliseconds(2000)); }

}  // namespace mcpfan::tool

#include "program_log.h"

#include <chrono>

#include "mcpfan/version.h"

namespace mcpfan::tool {

void program_log(const ServerConfig& cfg, LogLevel level, std::string_view kind, std::string message,
                 std::vector<LogField> fields, bool always) {
  if (!always && level < cfg.log.level) return;
  LogRecord r;
  r.time = std::chrono::system_clock::now();
  r.level = level;
  r.kind = kind;
  r.message = std::move(message);
  r.fields = std::move(fields);
  write_stderr_log(r, cfg.log.format);
}

namespace {

std::string client_auth(const ServerConfig& c) {
  std::string methods;
  auto add = [&](std::string_view m) { methods += (methods.empty() ? "" : "+") + std::string(m); };
  if (!c.oauth.issuer.empty()) add("oauth");
  if (!c.oauth.introspection_url.empty()) add("introspection");
  if (!c.auth.jwt_secret_file.empty()) add("jwt-hs256");
  if (!c.auth.jwt_public_key_file.empty()) add("jwt-public-key");
  return methods.empty() ? "none" : methods;
}

}  // namespace

void log_startup_summary(const ServerConfig& c) {
  program_log(c, LogLevel::Info, "start", "mcpfan " + std::string(build::kVersion) + " starting",
              {{"version", std::string(build::kVersion)},
               {"compiler", std::string(build::kCompiler)},
               {"build", std::string(build::kBuildType)},
               {"log_level", std::string(log_level_name(c.log.level))}});
  std::vector<LogField> auth{{"clients", client_auth(c)},
                             {"publishers", c.auth.publish_keys_file.empty() ? "none" : "keys"}};
  if (!c.auth.jwt_secret_file.empty()) auth.push_back({"jwt_secret_file", c.auth.jwt_secret_file});
  if (!c.auth.jwt_public_key_file.empty()) auth.push_back({"jwt_public_key_file", c.auth.jwt_public_key_file});
  if (!c.auth.publish_keys_file.empty()) auth.push_back({"publish_keys_file", c.auth.publish_keys_file});
  if (!c.auth.unix_tenant.empty()) auth.push_back({"unix_tenant", c.auth.unix_tenant});
  if (!c.oauth.issuer.empty()) auth.push_back({"oauth_issuer", c.oauth.issuer});
  if (!c.authorize.url.empty()) auth.push_back({"authorize_url", c.authorize.url});
  program_log(c, LogLevel::Info, "start_auth", "authentication", std::move(auth));
  if (c.nats.urls.empty()) {
    program_log(c, LogLevel::Info, "start_backplane", "backplane: none (one process, in memory)", {});
  } else {
    program_log(c, LogLevel::Info, "start_backplane", "backplane: NATS",
                {{"nats", c.nats.urls},
                 {"node", c.nats.node_name.empty() ? "mcpfan" : c.nats.node_name},
                 {"prefix", c.nats.prefix}});
  }
  program_log(c, LogLevel::Info, "start_upstream", c.upstream.url.empty() ? "upstream: none" : "upstream",
              c.upstream.url.empty() ? std::vector<LogField>{} : std::vector<LogField>{{"upstream", c.upstream.url}});
}

void flush_program_log() { (void)flush_stderr_log(std::chrono::milliseconds(2000)); }

}  // namespace mcpfan::tool

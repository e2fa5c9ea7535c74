// mcpfan: the server program. Parses flags (and a TOML config with keys named like the
// flags), starts the worker loops, turns SIGINT/SIGTERM into a graceful stop and SIGHUP into
// a reload (the command line and --config file read again; Server::reload() applies the keys,
// the publish rate and the tenant ceilings, and every other change is named as needing a restart).
#include <uv.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <string>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "command_line.h"
#include "config_file.h"
#include "control_signals.h"
#include "program_log.h"
#include "setting_flags.h"
#include "mcpfan/transport/server.h"
#include "mcpfan/version.h"

namespace {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// "HOST:PORT", "[V6]:PORT" or ":PORT".
bool parse_host_port(const std::string& s, HostPort& out) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  std::string host = s.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "127.0.0.1";
  try {
    std::size_t used = 0;
    unsigned long p = std::stoul(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1 || p > 65535) return false;
    out.port = static_cast<std::uint16_t>(p);
  } catch (...) {
    return false;
  }
  out.host = host;
  return true;
}

std::string display(const std::string& host, std::uint16_t port) {
  bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Everything the command line and the config file set.
struct Flags {
  mcpfan::ServerConfig cfg;
  std::string listen = "127.0.0.1:8080";
  std::string publish_listen;
  std::shared_ptr<const mcpfan::tool::ConfigSource> source;  // where the --config file set each key
  bool stdio = false;
};

std::unique_ptr<CLI::App> scratch_flags_app();

void add_flags(CLI::App& app, Flags& f) {
  f.source = mcpfan::tool::use_config_file(app, scratch_flags_app);  // --config (config_file.h)
  mcpfan::ServerConfig& cfg = f.cfg;
  std::string& listen = f.listen;
  bool& stdio = f.stdio;
  app.add_option("--listen", listen,
                 "HOST:PORT for /mcp, /healthz (and /v1/publish, /metrics without --publish-listen)")
      ->capture_default_str();
  app.add_option(
      "--publish-listen", f.publish_listen,
      "HOST:PORT of an internal listener for /v1/publish and /metrics (and /healthz); the public --listen then "
      "answers them 404 and serves /mcp and /healthz only");
  // Every flag that is one setting, declared in mcpfan/transport/settings.h.
  // --stdio is the program's own; --help has always listed it after --insecure.
  mcpfan::tool::add_setting_flags(app, cfg, [&app, &stdio](std::string_view flag) {
    if (flag != "--insecure") return;
    app.add_flag("--stdio", stdio, "also serve one stdio-framed MCP client on stdin/stdout; exit 0 when stdin closes");
  });
  // Logging (transport/log.h): the lines on stderr, their least severity and their format.
  // Taken as words and mapped here: CLI11 would print a one-byte enum's values as raw bytes in --help.
  app.add_option_function<std::string>(
         "--log-level",
         [&cfg](const std::string& v) {
           const std::string w = CLI::detail::to_lower(v);
           cfg.log.level = w == "debug" ? mcpfan::LogLevel::Debug
                           : w == "warn" ? mcpfan::LogLevel::Warn
                           : w == "error" ? mcpfan::LogLevel::Error
                                          : mcpfan::LogLevel::Info;
         },
         "least severity logged: debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}, CLI::ignore_case))
      ->default_str("info");
  app.add_option_function<std::string>(
         "--log-format",
         [&cfg](const std::string& v) {
           cfg.log.format = CLI::detail::to_lower(v) == "json" ? mcpfan::LogFormat::Json : mcpfan::LogFormat::Text;
         },
         "stderr lines as text (\"TIME LEVEL mcpfan: message key=value\") or json (one object per line: ts, level, "
         "kind, msg, fields)")
      ->check(CLI::IsMember({"text", "json"}, CLI::ignore_case))
      ->default_str("text");
}

// A fresh set of the program's flags, on which the --config reader tries each value (config_file.h).
std::unique_ptr<CLI::App> scratch_flags_app() {
  struct WithFlags : CLI::App {
    Flags flags;
    WithFlags() { add_flags(*this, flags); }
  };
  return std::make_unique<WithFlags>();
}

// Settings (as CLI11 writes a config: one "key=value" line each) that differ between two parses.
std::vector<std::string> changed_keys(const std::string& before, const std::string& after) {
  auto lines = [](const std::string& text) {
    std::map<std::string, std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(at, end - at);
      auto eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
      at = end + 1;
    }
    return out;
  };
  auto a = lines(before), b = lines(after);
  std::vector<std::string> keys;
  for (const auto& [k, v] : b) {
    if (auto it = a.find(k); it == a.end() || it->second != v) keys.push_back(k);
  }
  for (const auto& [k, v] : a) {
    if (!b.count(k)) keys.push_back(k);
  }
  return keys;
}

// Resolves HOST:PORT flags into the config (Server::check() then judges the addresses, and
// refuses an open listener without authentication). Returns false after printing why.
bool resolve_listeners(Flags& f) {
  mcpfan::ServerConfig& cfg = f.cfg;
  HostPort hp;
  if (!parse_host_port(f.listen, hp)) {
    mcpfan::tool::report_config_problem(*f.source, "--listen " + f.listen + ": expected HOST:PORT");
    return false;
  }
  HostPort php;
  bool split = !f.publish_listen.empty();
  if (split && !parse_host_port(f.publish_listen, php)) {
    mcpfan::tool::report_config_problem(*f.source, "--publish-listen " + f.publish_listen + ": expected HOST:PORT");
    return false;
  }
  cfg.listen.host = hp.host == "localhost" ? "127.0.0.1" : hp.host;
  cfg.listen.port = hp.port;
  if (split) {
    cfg.listen.publish_host = php.host == "localhost" ? "127.0.0.1" : php.host;
    cfg.listen.publish_port = php.port;
  }
  return true;
}

// SIGHUP: parse the same command line again (the --config file is read anew) and apply what
// can change while streams stay open.
void reload(mcpfan::Server& server, int argc, char** argv, const std::string& running_settings) {
  CLI::App app{"mcpfan"};
  Flags next;
  add_flags(app, next);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    mcpfan::tool::program_log(server.config(), mcpfan::LogLevel::Error, "reload_failed",
                              std::string("reload failed, the running configuration is kept: ") + e.what());
    return;
  }
  for (const std::string& key : changed_keys(running_settings, app.config_to_str(true, false))) {
    if (!mcpfan::tool::reloadable_key(key)) {
      mcpfan::tool::program_log(server.config(), mcpfan::LogLevel::Warn, "reload_needs_restart",
                                "reload: " + key + " changed; it takes effect after a restart");
    }
  }
  auto applied = server.reload(next.cfg);
  if (!applied) {
    mcpfan::tool::program_log(server.config(), mcpfan::LogLevel::Error, "reload_failed",
                              "reload failed, the running configuration is kept: " + applied.error().message);
  } else {
    mcpfan::tool::program_log(server.config(), mcpfan::LogLevel::Info, "reloaded", "reloaded: " + applied.value());
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcpfan: fans MCP change notifications out to many subscribers"};
  app.set_version_flag("--version", "mcpfan " + std::string(mcpfan::build::kVersion) + " (" +
                                        std::string(mcpfan::build::kCompiler) + ", " +
                                        std::string(mcpfan::build::kBuildType) + ")");
  bool check_only = false;
  app.add_flag(
         "--check-config", check_only,
         "check the command line and the --config file as a start would (addresses, the non-loopback rule, key "
         "files, NATS files, upstream URL, ranges), print \"configuration OK\" and exit 0, or name the problem and "
         "exit 2; binds no port and connects to nothing (safe next to the running server, e.g. before a reload)")
      ->configurable(false);
  app.footer(mcpfan::tool::kExitStatusHelp);
  Flags flags;
  add_flags(app, flags);
  if (auto exit_status = mcpfan::tool::parse_command_line(app, argc, argv)) return *exit_status;
  if (!resolve_listeners(flags)) return mcpfan::tool::kExitConfig;
  mcpfan::ServerConfig& cfg = flags.cfg;
  // Everything start() would refuse, before anything starts: a configuration error exits 2,
  // a failure of the start itself 1 (command_line.h).
  auto checked = mcpfan::Server::check(cfg);
  if (!checked) {
    mcpfan::tool::report_config_problem(*flags.source, checked.error().message);
    return mcpfan::tool::kExitConfig;
  }
  if (check_only) {
    mcpfan::tool::print_check_summary(flags.source->file, flags.listen, flags.publish_listen, cfg, checked.value());
    return mcpfan::tool::kExitOk;
  }
  // What a reload compares against: the settings as parsed at start.
  const std::string running_settings = app.config_to_str(true, false);

  std::signal(SIGPIPE, SIG_IGN);
  // Before any thread starts (the Server's workers inherit the mask): see control_signals.h.
  std::string signal_error;
  if (!mcpfan::tool::ControlSignals::block(signal_error)) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "start_failed", signal_error, {}, true);
    mcpfan::tool::flush_program_log();
    return 1;
  }
  uv_loop_t* loop = uv_default_loop();
  // A stdio client's end stops the server like a signal: MCP hosts expect a stdio server
  // to exit when its stdin closes. The callback runs on a worker thread.
  uv_async_t stdio_done;
  uv_async_init(loop, &stdio_done, [](uv_async_t* a) { uv_stop(a->loop); });
  mcpfan::Server server(cfg);
  // SIGHUP on the controlling thread (this loop): the workers keep serving during a reload.
  struct SignalCtx {
    uv_loop_t* loop;
    int caught;
    mcpfan::Server* server;
    int argc;
    char** argv;
    const std::string* settings;
    uv_timer_t* drain_timer;  // --drain-delay-ms: between SIGTERM and the stop
  } signal_ctx{loop, 0, &server, argc, argv, &running_settings, nullptr};
  uv_timer_t drain_timer;
  uv_timer_init(loop, &drain_timer);
  signal_ctx.drain_timer = &drain_timer;
  // Watched before the port is announced: whoever reads the announcement may signal at once
  // (and one sent earlier waits, blocked, until the loop reads it).
  mcpfan::tool::ControlSignals signals;
  if (!signals.start(
          loop,
          [](int signo, void* arg) {
            auto* c = static_cast<SignalCtx*>(arg);
            if (signo == SIGHUP) {
              reload(*c->server, c->argc, c->argv, *c->settings);
            } else if (c->caught == 0) {
              c->caught = signo;
              const std::uint64_t delay = c->server->config().drain_delay_ms;
              if (signo != SIGTERM || delay == 0) return uv_stop(c->loop);
              // Readiness goes first and the listeners stay open, so that load balancers see
              // /readyz fail and move new clients away before this node stops (docs/operations.md "Health checks").
              c->server->drain();
              mcpfan::tool::program_log(c->server->config(), mcpfan::LogLevel::Info, "draining",
                                        "draining (signal=SIGTERM): /readyz answers 503; stopping in " +
                                            std::to_string(delay) + " ms");
              uv_timer_start(c->drain_timer, [](uv_timer_t* t) { uv_stop(t->loop); }, delay, 0);
            } else {
              uv_stop(c->loop);  // a second SIGTERM or SIGINT: no more waiting
            }
          },
          &signal_ctx, signal_error)) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "start_failed", signal_error, {}, true);
    mcpfan::tool::flush_program_log();
    return 1;
  }
  mcpfan::tool::log_startup_summary(cfg);
  auto started = server.start();
  if (!started) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "start_failed", started.error().message, {}, true);
    mcpfan::tool::flush_program_log();
    return 1;
  }
  // The body after "mcpfan: " is what scripts parse: "listening on HOST:PORT workers=N pid=P".
  mcpfan::tool::program_log(
      cfg, mcpfan::LogLevel::Info, "listening", "listening on " + display(cfg.listen.host, started.value()),
      {{"workers", std::to_string(server.config().workers), true}, {"pid", std::to_string(getpid()), true}}, true);
  if (!cfg.listen.publish_host.empty()) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Info, "listening_publish",
                              "publish listener on " + display(cfg.listen.publish_host, server.publish_port()), {},
                              true);
  }
  if (!cfg.listen.unix_path.empty()) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Info, "listening_unix",
                              "stdio-framed clients on Unix socket " + cfg.listen.unix_path);
  }
  if (flags.stdio) {
    // The server owns (and libuv closes) what it is given: duplicates, so that 0 and 1 stay
    // this process's (libuv asserts it never closes a descriptor below 3).
    int in = ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
    int out = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (in < 0 || out < 0) {
      mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "stdio_failed",
                                std::string("--stdio: cannot use stdin/stdout: ") + std::strerror(errno), {}, true);
      mcpfan::tool::flush_program_log();
      return 1;
    }
    mcpfan::StdioOptions stdio;
    stdio.on_end = [&stdio_done](mcpfan::StdioClient, mcpfan::StdioEnd) { uv_async_send(&stdio_done); };
    if (auto attached = server.attach_stdio(in, out, std::move(stdio)); !attached) {
      mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "stdio_failed", "--stdio: " + attached.error().message,
                                {}, true);
      ::close(in);
      ::close(out);
      mcpfan::tool::flush_program_log();
      return 1;
    }
  }

  uv_run(loop, UV_RUN_DEFAULT);
  if (auto stopped = server.stop(); !stopped) {
    mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "stop_failed", stopped.error().message, {}, true);
  }
  const int caught = signal_ctx.caught;
  const char* why = caught == SIGINT ? "signal=SIGINT" : caught == SIGTERM ? "signal=SIGTERM" : "stdin closed";
  mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Info, "stopped", std::string("stopped (") + why + ")", {}, true);
  mcpfan::tool::flush_program_log();
  signals.close();
  uv_close(reinterpret_cast<uv_handle_t*>(&stdio_done), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&drain_timer), nullptr);
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
  return 0;
}

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
  app.add_option("--listen", listen, "HOST:PORT for /mcp, /healthz (and /v1/publish, /metrics without --publish-listen)")
      ->capture_default_str();
  app.add_option("--publish-listen", f.publish_listen,
                 "HOST:PORT of an internal listener for /v1/publish and /metrics (and /healthz); the public --listen then "
                 "answers them 404 and serves /mcp and /healthz only");
  app.add_flag("--reuse-port", cfg.listen.reuse_port,
               "share the --listen and --publish-listen ports with another process serving them with SO_REUSEPORT "
               "(the kernel spreads connections over both, e.g. for a zero-downtime restart); without it a port in "
               "use fails the start with \"address in use\"");
  app.add_option("--workers", cfg.workers, "worker loops (0 = one per core)")->capture_default_str();
  app.add_option("--io-uring-entries", cfg.io_uring_entries,
                 "send SSE stream batches through an io_uring of this many entries per worker (0 = libuv writes only)")
      ->capture_default_str();
  app.add_option("--max-body", cfg.http.max_body, "largest request body in bytes (413 above)")->capture_default_str();
  app.add_option("--keepalive-ms", cfg.http.keepalive_ms, "SSE keepalive comment interval")->capture_default_str()->check(CLI::Range(10, 3600000));
  app.add_option("--max-uri-length", cfg.mcp.max_uri_length, "longest resource URI accepted")->capture_default_str();
  app.add_option("--max-uris-per-listen", cfg.mcp.max_uris_per_listen, "resourceSubscriptions per listen")->capture_default_str();
  app.add_option("--max-pending-bytes", cfg.shard.max_pending_bytes,
                 "unwritten bytes a stream may hold before it is closed as a slow consumer")->capture_default_str();
  app.add_option("--shard-inbox-max", cfg.shard.max_inbox,
                 "notifications a worker loop's inbox may hold not yet matched; past it a publish is refused (503) and a "
                 "message from another node dropped, both counted")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  app.add_option("--shutdown-grace-ms", cfg.shutdown_grace_ms, "time for final writes on SIGTERM before connections are cut")
      ->capture_default_str();
  app.add_option("--drain-delay-ms", cfg.drain_delay_ms,
                 "on SIGTERM, keep serving this long with GET /readyz answering 503 (load balancers take the node out) "
                 "before stopping; a second SIGTERM or SIGINT stops at once; 0: stop at once")
      ->capture_default_str()->check(CLI::Range(std::uint64_t{0}, std::uint64_t{3'600'000}));
  app.add_option("--readyz-backplane", cfg.readyz_backplane,
                 "GET /readyz while the NATS backplane is disconnected: ignore (still 200: local delivery works, and 503 on "
                 "every node at once would empty the load balancer) or require (503)")
      ->capture_default_str()->check(CLI::IsMember({"ignore", "require"}));
  app.add_option("--allow-origin", cfg.http.allow_origins,
                 "allowed Origin (repeatable; \"*\" = any); default: http(s)://localhost|127.0.0.1|[::1] on any port");
  app.add_option("--allow-host", cfg.http.allow_hosts,
                 "allowed Host header host (repeatable; \"*\" = any); default: localhost, 127.0.0.1, [::1] on a loopback "
                 "listener, any Host on an --insecure one");
  app.add_option("--session-idle-ms", cfg.mcp.session_idle_ms,
                 "a 2025-era session with no open GET stream expires after this")->capture_default_str()->check(CLI::Range(10, 86400000));
  app.add_option("--session-replay-bytes", cfg.mcp.session_replay_bytes,
                 "a 2025-era session's journal of missed notifications for a Last-Event-ID resume (newest per method and "
                 "uri; older cursors get re-read hints)")->capture_default_str()->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  app.add_option("--debounce-ms", cfg.debounce_ms,
                 "minimum interval between fan-outs of one (tenant, method, uri); the newest update is always delivered (0 = off)")
      ->capture_default_str();
  app.add_flag("--insecure", cfg.listen.insecure,
               "allow a non-loopback listener without authentication (without it such a listener needs client tokens "
               "for /mcp and publisher keys for /v1/publish)");
  app.add_flag("--stdio", stdio, "also serve one stdio-framed MCP client on stdin/stdout; exit 0 when stdin closes");
  app.add_option("--unix", cfg.listen.unix_path, "serve stdio-framed MCP clients on this Unix-domain socket");
  // The NATS backplane (docs/operations.md "Several nodes"): without --nats, one process, all in memory.
  app.add_option("--nats", cfg.nats.urls, "NATS server URLs, comma-separated (nats://127.0.0.1:4222): publishes reach every node");
  app.add_option("--nats-prefix", cfg.nats.prefix, "first subject token(s) of this cluster's subjects")->capture_default_str();
  app.add_option("--node-name", cfg.nats.node_name, "this node's NATS connection name");
  app.add_option("--nats-creds", cfg.nats.creds_file, "NATS user credentials file")->check(CLI::ExistingFile);
  app.add_option("--nats-tls-ca", cfg.nats.tls_ca_file, "CA bundle; require TLS to the NATS servers")->check(CLI::ExistingFile);
  app.add_option("--nats-linger-ms", cfg.nats.linger_ms, "keep a subject's NATS interest this long after its last subscriber")
      ->capture_default_str();
  app.add_option("--nats-outage-buffer-bytes", cfg.nats.outage_buffer_bytes,
                 "notifications for other nodes held while NATS is unreachable; a publish past it gets 503")
      ->capture_default_str()->check(CLI::Range(1024, 1 << 30));
  app.add_option("--nats-receive-buffer-bytes", cfg.nats.receive_buffer_bytes,
                 "bytes received from other nodes and not yet delivered (also each NATS subscription's pending bound); "
                 "past it a message is dropped and counted")
      ->capture_default_str()->check(CLI::Range(std::int64_t{1024}, std::int64_t{1} << 34));
  app.add_option("--nats-settle-ms", cfg.nats.settle_ms,
                 "after a reconnect, wait this long (for peers to re-subscribe) before sending what waited")
      ->capture_default_str();
  app.add_option("--nats-max-subjects", cfg.nats.max_subjects,
                 "NATS subjects this node may hold; past it the tenant with the most is folded into one <tenant>.> subject")
      ->capture_default_str()->check(CLI::Range(std::size_t{1}, std::size_t{100'000'000}));
  app.add_option("--nats-batch-us", cfg.nats.batch_window_us,
                 "after a send to NATS, later notifications wait up to this long and leave together "
                 "(one after a quiet spell goes at once); 0: every one at once")
      ->capture_default_str()->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1'000'000}));
  app.add_option("--nats-io", cfg.nats.io,
                 "where the NATS connection's socket IO runs: libuv (the backplane's own loop; writes at once, "
                 "batches under load) or threads (nats.c's reader and flusher threads)")
      ->capture_default_str()->check(CLI::IsMember({"libuv", "threads"}));
  app.add_flag("--nats-publish-batching", cfg.nats.publish_batching,
               "let nats.c's flusher thread batch outgoing messages (it waits 1 ms before each write: +1 ms per hop)");
  app.add_option("--nats-delivery-threads", cfg.nats.delivery_threads,
                 "threads of nats.c's shared pool that hand received messages to the hub (0: a thread per subject, "
                 "nats.c's default; only for a handful of subjects)")
      ->capture_default_str()->check(CLI::Range(0, 64));
  // The front proxy (docs/protocol.md "Front proxy"): without --upstream, mcpfan serves only its own methods.
  app.add_option("--upstream", cfg.upstream.url,
                 "http://HOST:PORT/path of an MCP server to stand in front of (HOST an IP or a name, looked up without "
                 "blocking): mcpfan answers subscriptions/listen and 2025-era resources/subscribe itself and forwards "
                 "every other request there");
  app.add_option("--upstream-resolve-ttl-ms", cfg.upstream.resolve_ttl_ms,
                 "how long the upstream host name's addresses serve new connections before it is looked up again (a "
                 "failed connect looks it up again at once); 0: look up for every new connection")
      ->capture_default_str()->check(CLI::Range(std::uint64_t{0}, std::uint64_t{86'400'000}));
  app.add_option("--upstream-connect-ms", cfg.upstream.connect_ms, "connecting to the upstream (502 past it)")
      ->capture_default_str()->check(CLI::Range(1, 600000));
  app.add_option("--upstream-first-byte-ms", cfg.upstream.first_byte_ms, "the first byte of the upstream's answer (504 past it)")
      ->capture_default_str()->check(CLI::Range(1, 86400000));
  app.add_option("--upstream-idle-ms", cfg.upstream.idle_ms, "a gap in a streaming upstream answer; the stream is cut past it")
      ->capture_default_str()->check(CLI::Range(1, 86400000));
  app.add_option("--upstream-max-idle", cfg.upstream.max_idle, "pooled keep-alive upstream connections per worker")
      ->capture_default_str()->check(CLI::Range(std::size_t{0}, std::size_t{100000}));
  app.add_option("--upstream-keepalive-ms", cfg.upstream.keepalive_ms,
                 "a pooled upstream connection idle this long is closed, not reused; keep it below the upstream's own "
                 "keep-alive timeout (Node's default: 5000), so that a request never races the upstream's close")
      ->capture_default_str()->check(CLI::Range(1, 86400000));
  app.add_option("--upstream-max-answer-bytes", cfg.upstream.max_answer_bytes,
                 "initialize and server/discover answers (whose capabilities mcpfan merges) are read whole up to this (502 past it)")
      ->capture_default_str()->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 30));
  app.add_flag("--upstream-forward-subscribe", cfg.upstream.forward_subscribe,
               "also forward 2025-era resources/subscribe and unsubscribe to the upstream (its answer is relayed)");
  app.add_option("--max-line-bytes", cfg.mcp.max_line_bytes, "longest stdio-framed message")->capture_default_str();
  // Limits (docs/security.md "Limits"): each hit is counted in mcpfan_limit_hits_total.
  app.add_option("--max-header-bytes", cfg.http.max_header_bytes, "largest request header block (431 above)")->capture_default_str();
  app.add_option("--max-url-length", cfg.http.max_url_length, "longest request target (414 above)")->capture_default_str();
  app.add_option("--request-timeout-ms", cfg.http.request_timeout_ms,
                 "a request must arrive whole within this after its first byte, or after connecting (408)")
      ->capture_default_str()->check(CLI::Range(10, 3600000));
  app.add_option("--idle-timeout-ms", cfg.http.idle_timeout_ms, "a keep-alive connection idle between requests closes after this")
      ->capture_default_str()->check(CLI::Range(10, 86400000));
  app.add_option("--write-timeout-ms", cfg.http.write_timeout_ms,
                 "a connection whose writes make no progress this long is closed (peer stopped reading or vanished)")
      ->capture_default_str()->check(CLI::Range(10, 86400000));
  app.add_option("--max-requests-per-connection", cfg.http.max_requests_per_connection,
                 "requests on one keep-alive connection; the last is answered with Connection: close (0 = unlimited)")
      ->capture_default_str();
  app.add_option("--tcp-keepalive-s", cfg.http.tcp_keepalive_s, "TCP keep-alive probes after this idle time (0 = off)")
      ->capture_default_str()->check(CLI::Range(0, 86400));
  app.add_option("--max-connections-per-tenant", cfg.tenants.max_connections_per_tenant, "0 = unlimited")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-streams-per-tenant", cfg.tenants.max_streams_per_tenant, "listens + 2025-era sessions; 0 = unlimited")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-subscriptions-per-tenant", cfg.tenants.max_subscriptions_per_tenant,
                 "resource URIs subscribed; 0 = unlimited")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--max-idle-sessions", cfg.tenants.max_idle_sessions,
                 "2025-era sessions without an open stream, in all; more initialize requests get 503")
      ->capture_default_str();
  app.add_option("--max-idle-sessions-per-tenant", cfg.tenants.max_idle_sessions_per_tenant,
                 "2025-era sessions without an open stream per tenant; more get 429 (0 = unlimited)")
      ->capture_default_str();
  app.add_option("--max-listens-per-connection", cfg.mcp.max_listens_per_connection,
                 "subscriptions/listen one stdio client may hold open at once")
      ->capture_default_str();
  app.add_option("--max-tenants", cfg.tenants.max_tenants, "distinct tenants with clients; more are refused")
      ->capture_default_str()->check(CLI::Range(1, 10000000));
  app.add_option("--metrics-tenants", cfg.tenants.metrics_tenants,
                 "tenants labelled by name in /metrics; the rest are summed as tenant=\"_other\"")->capture_default_str();
  // Authentication (docs/security.md "Client tokens", "Publisher keys").
  app.add_option("--jwt-secret-file", cfg.auth.jwt_secret_file, "HS256 secret (at least 32 bytes) for client tokens")
      ->check(CLI::ExistingFile);
  app.add_option("--jwt-public-key-file", cfg.auth.jwt_public_key_file, "RS256 (RSA) or ES256 (P-256) PEM public key for client tokens")
      ->check(CLI::ExistingFile);
  app.add_option("--publish-keys-file", cfg.auth.publish_keys_file, "publisher keys, lines \"KEY TENANT\" (\"*\" = any tenant)")
      ->check(CLI::ExistingFile);
  app.add_option("--unix-tenant", cfg.auth.unix_tenant,
                 "tenant of --unix clients, which then need no token (the socket's permissions are the access control)");
  app.add_option("--publish-rate", cfg.auth.publish_rate, "notifications per second per publisher key; 429 above (0 = unlimited)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--publish-burst", cfg.auth.publish_burst, "publish token bucket size (0 = one second's worth)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
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

// The keys of the reloadable settings (Server::reload()); a change to any other is reported as needing a restart.
bool reloadable_key(const std::string& key) {
  static const char* const kKeys[] = {"jwt-secret-file", "jwt-public-key-file", "publish-keys-file", "publish-rate",
                                      "publish-burst", "max-connections-per-tenant", "max-streams-per-tenant",
                                      "max-subscriptions-per-tenant", "max-idle-sessions-per-tenant"};
  for (const char* k : kKeys) {
    if (key == k) return true;
  }
  return false;
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
    if (!reloadable_key(key)) {
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
  app.add_flag("--check-config", check_only,
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
      mcpfan::tool::program_log(cfg, mcpfan::LogLevel::Error, "stdio_failed", "--stdio: " + attached.error().message, {}, true);
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

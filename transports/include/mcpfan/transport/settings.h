#pragma once
/**
 * Every setting of ServerConfig that an operator sets, declared once: its flag (the mcpfan
 * program's; also its key in a --config file), its path in ServerConfig, its --help text, its
 * range, the words it takes and whether Server::reload() applies it. The program's flags,
 * Server::check()'s range checks and the program's list of reloadable keys are all made from
 * for_each_setting(), so a new setting is one line here and one field in server_config.h (a
 * reloadable one is also applied in Server::reload(): tests/transports/settings holds the two
 * together). A setting only an embedder sets but Server::check() judges has no flag
 * (shard.drain_batch).
 *
 * Not here: what is not one field (--listen and --publish-listen, HOST:PORT into listen.host
 * and listen.port; --log-level and --log-format, words into enums; --stdio and --config, which
 * are the program's), and the embedder's hooks with nothing to check (listen.listen_fd, judged
 * by the socket it names; log.sink; auth.authenticate_client).
 */
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>

#include "mcpfan/transport/server_config.h"

namespace mcpfan {

/**
 * What the mcpfan program's parser checks of a setting's value, beside Server::check() (which
 * checks every range, right after the parse). Which flags check as they are parsed is as it has
 * always been: their messages ("Value 0 not in range 10 to 3600000") and --help annotations are
 * what operators and docs/operations.md know, and those of the others name ServerConfig's path.
 */
enum class CliCheck : std::uint8_t {
  None,         // nothing: Server::check() alone refuses a value out of range (after the parse)
  Range,        // the range
  NonNegative,  // only that it is not negative: the ceiling is Server::check()'s
};

/** What for_each_setting() says of one setting. Its strings are static: an info may be kept. */
struct SettingInfo {
  std::string_view flag;  // "--max-body"; empty: no flag (an embedder's setting, e.g. shard.drain_batch)
  std::string_view path;  // "http.max_body": ServerConfig::<path> in Server::check()'s messages
  std::string_view help;  // the --help text
  // Numbers: the range Server::check() and the command line accept (every bound is exact in a double).
  bool ranged = false;
  double min = 0;
  double max = 0;
  // What the command line's parser refuses itself (CLI11's message; --help shows it), before
  // Server::check() refuses what is outside the range with the ServerConfig::<path> message.
  CliCheck cli = CliCheck::None;
  bool reloadable = false;  // Server::reload() applies it; a change to any other needs a restart
  bool file = false;        // a path the program reads: the command line wants an existing file
  std::span<const std::string_view> words{};  // strings: the only values taken (empty: any)
};

namespace settings {

/** The largest worker count, tenant table and drain batch start() accepts (the construction clamps to them). */
inline constexpr unsigned kMaxWorkers = 1024;
inline constexpr std::size_t kMaxTenants = 10'000'000;
inline constexpr std::size_t kMaxDrainBatch = 1 << 20;
inline constexpr unsigned kMaxIoUringEntries = 4096;  // the send ring's (transports/src/net/send_ring.h)

inline constexpr double kDay = 86'400'000;  // ms
inline constexpr double kHour = 3'600'000;  // ms
inline constexpr double kGiB = 1u << 30;

inline constexpr std::string_view kNatsIo[] = {"libuv", "threads"};
inline constexpr std::string_view kNatsReceive[] = {"loop", "pool"};
inline constexpr std::string_view kReadyzBackplane[] = {"ignore", "require"};

/** What else a declaration says, or'ed: applied by reload(), checked by the parser too (CliCheck). */
enum Also : unsigned { kReload = 1, kParsed = 2, kNonNegative = 4 };

/** A setting with a range. */
constexpr SettingInfo ranged(std::string_view flag, std::string_view path, double min, double max,
                             std::string_view help, unsigned also = 0) {
  SettingInfo s{flag, path, help, true, min, max};
  s.cli = (also & kParsed) ? CliCheck::Range : (also & kNonNegative) ? CliCheck::NonNegative : CliCheck::None;
  s.reloadable = (also & kReload) != 0;
  return s;
}
/** A setting without one (a string, a list, a switch). */
constexpr SettingInfo plain(std::string_view flag, std::string_view path, std::string_view help) {
  return SettingInfo{flag, path, help};
}
/** A file the program reads. */
constexpr SettingInfo file(std::string_view flag, std::string_view path, std::string_view help, unsigned also = 0) {
  SettingInfo s{flag, path, help};
  s.file = true;
  s.reloadable = (also & kReload) != 0;
  return s;
}
/** A string that takes one of `words`. */
constexpr SettingInfo words(std::string_view flag, std::string_view path, std::span<const std::string_view> w,
                            std::string_view help) {
  SettingInfo s{flag, path, help};
  s.words = w;
  return s;
}

}  // namespace settings

/**
 * Calls v(const SettingInfo&, field&) once for every declared setting of `c` (a ServerConfig,
 * const or not), in the order of the program's --help. Field types: the integers, double,
 * bool, std::string and std::vector<std::string> of ServerConfig.
 */
template <class Config, class Visit>
  requires std::is_same_v<std::remove_const_t<Config>, ServerConfig>
void for_each_setting(Config& c, Visit&& v) {
  using namespace settings;
  v(plain("--reuse-port", "listen.reuse_port",
          "share the --listen and --publish-listen ports with another process serving them with SO_REUSEPORT "
          "(the kernel spreads connections over both, e.g. for a zero-downtime restart); without it a port in "
          "use fails the start with \"address in use\""),
    c.listen.reuse_port);
  v(ranged("--workers", "workers", 0, kMaxWorkers, "worker loops (0 = one per core)"), c.workers);
  v(ranged("--io-uring-entries", "io_uring_entries", 0, kMaxIoUringEntries,
           "send SSE stream batches through an io_uring of this many entries per worker (0 = libuv writes only)"),
    c.io_uring_entries);
  v(ranged("--max-body", "http.max_body", 1, kGiB, "largest request body in bytes (413 above)"), c.http.max_body);
  v(ranged("--keepalive-ms", "http.keepalive_ms", 10, kHour, "SSE keepalive comment interval", kParsed),
    c.http.keepalive_ms);
  v(ranged("--max-uri-length", "mcp.max_uri_length", 1, 1 << 24, "longest resource URI accepted"),
    c.mcp.max_uri_length);
  v(ranged("--max-uris-per-listen", "mcp.max_uris_per_listen", 1, 1 << 24, "resourceSubscriptions per listen"),
    c.mcp.max_uris_per_listen);
  v(ranged("--max-task-ids-per-listen", "tasks.max_ids_per_listen", 1, 1 << 16, "taskIds per listen"),
    c.tasks.max_ids_per_listen);
  v(ranged("--max-task-id-length", "tasks.max_id_length", 1, 1 << 16, "longest task id accepted"),
    c.tasks.max_id_length);
  v(ranged("--max-task-bytes", "tasks.max_bytes", 64, kGiB,
           "largest params of a published notifications/tasks, in bytes (refused above, naming the flag)"),
    c.tasks.max_bytes);
  v(ranged("--task-states-max", "tasks.states_max", 0, 1e9,
           "newest task states kept for listeners that name a task after it changed (0 = none); the state that "
           "expires first makes room"),
    c.tasks.states_max);
  v(ranged("--task-states-per-tenant", "tasks.states_per_tenant", 0, 1e9,
           "task states one tenant may have kept; a new task past it is not kept (counted)"),
    c.tasks.states_per_tenant);
  v(ranged("--task-states-max-bytes", "tasks.states_max_bytes", 0, 1e12, "encoded bytes of the task states kept"),
    c.tasks.states_max_bytes);
  v(ranged("--task-state-max-ttl-ms", "tasks.state_max_ttl_ms", 1, 1e12,
           "a task state is kept for its ttlMs, at most this (and this long for ttlMs null)", kParsed),
    c.tasks.state_max_ttl_ms);
  v(ranged("--max-pending-bytes", "shard.max_pending_bytes", 1024, 1e12,
           "unwritten bytes a stream may hold before it is closed as a slow consumer"),
    c.shard.max_pending_bytes);
  v(ranged("", "shard.drain_batch", 1, kMaxDrainBatch, "payloads taken from a worker loop's inbox per dequeue"),
    c.shard.drain_batch);
  v(ranged("--shard-inbox-max", "shard.max_inbox", 1, 1 << 24,
           "notifications a worker loop's inbox may hold not yet matched; past it a publish is refused (503) and a "
           "message from another node dropped, both counted", kParsed),
    c.shard.max_inbox);
  v(ranged("--shutdown-grace-ms", "shutdown_grace_ms", 0, kHour,
           "time for final writes on SIGTERM before connections are cut"),
    c.shutdown_grace_ms);
  v(ranged("--drain-delay-ms", "drain_delay_ms", 0, kHour,
           "on SIGTERM, keep serving this long with GET /readyz answering 503 (load balancers take the node out) "
           "before stopping; a second SIGTERM or SIGINT stops at once; 0: stop at once", kParsed),
    c.drain_delay_ms);
  v(words("--readyz-backplane", "readyz_backplane", kReadyzBackplane,
          "GET /readyz while the NATS backplane is disconnected: ignore (still 200: local delivery works, and 503 on "
          "every node at once would empty the load balancer) or require (503)"),
    c.readyz_backplane);
  v(plain("--allow-origin", "http.allow_origins",
          "allowed Origin (repeatable; \"*\" = any); default: http(s)://localhost|127.0.0.1|[::1] on any port"),
    c.http.allow_origins);
  v(plain("--allow-host", "http.allow_hosts",
          "allowed Host header host (repeatable; \"*\" = any); default: localhost, 127.0.0.1, [::1] on a loopback "
          "listener, any Host on an --insecure one"),
    c.http.allow_hosts);
  v(ranged("--session-idle-ms", "mcp.session_idle_ms", 10, kDay,
           "a 2025-era session with no open GET stream expires after this", kParsed),
    c.mcp.session_idle_ms);
  v(ranged("--session-replay-bytes", "mcp.session_replay_bytes", 0, kGiB,
           "a 2025-era session's journal of missed notifications for a Last-Event-ID resume (newest per method and "
           "uri; older cursors get re-read hints)", kParsed),
    c.mcp.session_replay_bytes);
  v(ranged("--debounce-ms", "debounce_ms", 0, kHour,
           "minimum interval between fan-outs of one (tenant, method, uri); the newest update is always delivered "
           "(0 = off)"),
    c.debounce_ms);
  v(plain("--insecure", "listen.insecure",
          "allow a non-loopback listener without authentication (without it such a listener needs client tokens "
          "for /mcp and publisher keys for /v1/publish)"),
    c.listen.insecure);
  v(plain("--unix", "listen.unix_path", "serve stdio-framed MCP clients on this Unix-domain socket"),
    c.listen.unix_path);
  // The NATS backplane (docs/operations.md "Several nodes"): without --nats, one process, all in memory.
  v(plain("--nats", "nats.urls",
          "NATS server URLs, comma-separated (nats://127.0.0.1:4222): publishes reach every node"),
    c.nats.urls);
  v(plain("--nats-prefix", "nats.prefix", "first subject token(s) of this cluster's subjects"), c.nats.prefix);
  v(plain("--node-name", "nats.node_name", "this node's NATS connection name"), c.nats.node_name);
  v(file("--nats-creds", "nats.creds_file", "NATS user credentials file"), c.nats.creds_file);
  v(file("--nats-tls-ca", "nats.tls_ca_file", "CA bundle; require TLS to the NATS servers"), c.nats.tls_ca_file);
  v(ranged("--nats-linger-ms", "nats.linger_ms", 0, kDay,
           "keep a subject's NATS interest this long after its last subscriber"),
    c.nats.linger_ms);
  v(ranged("--nats-outage-buffer-bytes", "nats.outage_buffer_bytes", 1024, kGiB,
           "notifications for other nodes held while NATS is unreachable; a publish past it gets 503", kParsed),
    c.nats.outage_buffer_bytes);
  v(ranged("--nats-receive-buffer-bytes", "nats.receive_buffer_bytes", 1024, 16 * kGiB,
           "bytes received from other nodes and not yet delivered (also each NATS subscription's pending bound); "
           "past it a message is dropped and counted", kParsed),
    c.nats.receive_buffer_bytes);
  v(ranged("--nats-settle-ms", "nats.settle_ms", 0, kHour,
           "after a reconnect, wait this long (for peers to re-subscribe) before sending what waited"),
    c.nats.settle_ms);
  v(ranged("--nats-ping-interval-ms", "nats.ping_interval_ms", 100, kHour,
           "how often the node pings its NATS server; a server that misses --nats-max-pings-out of them in a row "
           "is taken as gone and the node reconnects (to another server of the cluster, if any)"),
    c.nats.ping_interval_ms);
  v(ranged("--nats-max-pings-out", "nats.max_pings_out", 1, 100,
           "pings to the NATS server left unanswered before the connection is taken as dead"),
    c.nats.max_pings_out);
  v(ranged("--nats-heartbeat-ms", "nats.heartbeat_ms", 0, kHour,
           "publish a heartbeat to the other nodes this often; a node that hears a peer's heartbeats skip or stop "
           "sends its listeners re-read hints (0: off)"),
    c.nats.heartbeat_ms);
  v(ranged("--nats-max-subjects", "nats.max_subjects", 1, 100'000'000,
           "NATS subjects this node may hold; past it the tenant with the most is folded into one <tenant>.> "
           "subject", kParsed),
    c.nats.max_subjects);
  v(ranged("--nats-batch-us", "nats.batch_window_us", 0, 1'000'000,
           "after a send to NATS, later notifications wait up to this long and leave together "
           "(one after a quiet spell goes at once); 0: every one at once", kParsed),
    c.nats.batch_window_us);
  v(words("--nats-io", "nats.io", kNatsIo,
          "where the NATS connection's socket IO runs: libuv (the backplane's own loop; writes at once, "
          "batches under load) or threads (nats.c's reader and flusher threads)"),
    c.nats.io);
  v(words("--nats-receive", "nats.receive", kNatsReceive,
          "where messages from other nodes are taken: loop (on the backplane's own loop, handed to the workers "
          "one batch per read; with --nats-io libuv) or pool (nats.c's delivery thread, one hand-off each)"),
    c.nats.receive);
  v(plain("--nats-publish-batching", "nats.publish_batching",
          "let nats.c's flusher thread batch outgoing messages (it waits 1 ms before each write: +1 ms per hop)"),
    c.nats.publish_batching);
  v(ranged("--nats-delivery-threads", "nats.delivery_threads", 0, 64,
           "threads of nats.c's shared pool that hand received messages to the hub (0: a thread per subject, "
           "nats.c's default; only for a handful of subjects)", kParsed),
    c.nats.delivery_threads);
  // The front proxy (docs/protocol.md "Front proxy"): without --upstream, mcpfan serves only its own methods.
  v(plain("--upstream", "upstream.url",
          "http://HOST:PORT/path or https://... of an MCP server to stand in front of (HOST an IP or a name, looked "
          "up without blocking): mcpfan answers subscriptions/listen and 2025-era resources/subscribe itself and "
          "forwards every other request there"),
    c.upstream.url);
  v(file("--upstream-ca-file", "upstream.ca_file",
         "PEM roots an https:// --upstream's certificate must chain to (default: the system's)"),
    c.upstream.ca_file);
  v(ranged("--upstream-resolve-ttl-ms", "upstream.resolve_ttl_ms", 0, kDay,
           "how long the upstream host name's addresses serve new connections before it is looked up again (a "
           "failed connect looks it up again at once); 0: look up for every new connection", kParsed),
    c.upstream.resolve_ttl_ms);
  v(ranged("--upstream-connect-ms", "upstream.connect_ms", 1, 600'000, "connecting to the upstream (502 past it)",
           kParsed),
    c.upstream.connect_ms);
  v(ranged("--upstream-first-byte-ms", "upstream.first_byte_ms", 1, kDay,
           "the first byte of the upstream's answer (504 past it)", kParsed),
    c.upstream.first_byte_ms);
  v(ranged("--upstream-idle-ms", "upstream.idle_ms", 1, kDay,
           "a gap in a streaming upstream answer; the stream is cut past it", kParsed),
    c.upstream.idle_ms);
  v(ranged("--upstream-max-idle", "upstream.max_idle", 0, 100'000, "pooled keep-alive upstream connections per worker",
           kParsed),
    c.upstream.max_idle);
  v(ranged("--upstream-keepalive-ms", "upstream.keepalive_ms", 1, kDay,
           "a pooled upstream connection idle this long is closed, not reused; keep it below the upstream's own "
           "keep-alive timeout (Node's default: 5000), so that a request never races the upstream's close", kParsed),
    c.upstream.keepalive_ms);
  v(ranged("--upstream-max-answer-bytes", "upstream.max_answer_bytes", 1024, kGiB,
           "initialize and server/discover answers (whose capabilities mcpfan merges) are read whole up to this (502 "
           "past it)", kParsed),
    c.upstream.max_answer_bytes);
  v(plain("--upstream-forward-subscribe", "upstream.forward_subscribe",
          "also forward 2025-era resources/subscribe and unsubscribe to the upstream (its answer is relayed)"),
    c.upstream.forward_subscribe);
  v(plain("--upstream-task-poll", "upstream.task_poll",
          "poll-to-push: a task the upstream creates for a tools/call proxied here is polled with tasks/get (with "
          "the creating request's credentials) while a listen on this node watches it, and each change is "
          "published as notifications/tasks to the listens of the same tenant and principal"),
    c.upstream.task_poll);
  v(ranged("--upstream-task-poll-min-ms", "upstream.task_poll_min_ms", 10, kDay,
           "the shortest interval between two polls of a task (its pollIntervalMs is raised to it)", kParsed),
    c.upstream.task_poll_min_ms);
  v(ranged("--upstream-task-poll-max-ms", "upstream.task_poll_max_ms", 10, kDay,
           "the longest interval between two polls of a task (its pollIntervalMs is lowered to it)", kParsed),
    c.upstream.task_poll_max_ms);
  v(ranged("--upstream-task-poll-max-tasks", "upstream.task_poll_max_tasks", 1, 1e9,
           "tasks polled (and their owners kept) at once; a task past it is not polled (counted)"),
    c.upstream.task_poll_max_tasks);
  v(ranged("--upstream-task-poll-max-failures", "upstream.task_poll_max_failures", 1, 1000,
           "failed polls of a task in a row before its polling stops (counted)"),
    c.upstream.task_poll_max_failures);
  v(ranged("--max-line-bytes", "mcp.max_line_bytes", 1, 1e12, "longest stdio-framed message"), c.mcp.max_line_bytes);
  // Limits (docs/security.md "Limits"): each hit is counted in mcpfan_limit_hits_total.
  v(ranged("--max-header-bytes", "http.max_header_bytes", 256, 1 << 24, "largest request header block (431 above)"),
    c.http.max_header_bytes);
  v(ranged("--max-url-length", "http.max_url_length", 16, 1 << 24, "longest request target (414 above)"),
    c.http.max_url_length);
  v(ranged("--request-timeout-ms", "http.request_timeout_ms", 10, kHour,
           "a request must arrive whole within this after its first byte, or after connecting (408)", kParsed),
    c.http.request_timeout_ms);
  v(ranged("--idle-timeout-ms", "http.idle_timeout_ms", 10, kDay,
           "a keep-alive connection idle between requests closes after this", kParsed),
    c.http.idle_timeout_ms);
  v(ranged("--write-timeout-ms", "http.write_timeout_ms", 10, kDay,
           "a connection whose writes make no progress this long is closed (peer stopped reading or vanished)",
           kParsed),
    c.http.write_timeout_ms);
  v(ranged("--max-requests-per-connection", "http.max_requests_per_connection", 0, 4'294'967'295.0,
           "requests on one keep-alive connection; the last is answered with Connection: close (0 = unlimited)"),
    c.http.max_requests_per_connection);
  v(ranged("--tcp-keepalive-s", "http.tcp_keepalive_s", 0, 86400,
           "TCP keep-alive probes after this idle time (0 = off)", kParsed),
    c.http.tcp_keepalive_s);
  v(ranged("--max-connections-per-tenant", "tenants.max_connections_per_tenant", 0, 1e15,
           "0 = unlimited", kReload | kNonNegative),
    c.tenants.max_connections_per_tenant);
  v(ranged("--max-streams-per-tenant", "tenants.max_streams_per_tenant", 0, 1e15,
           "listens + 2025-era sessions; 0 = unlimited", kReload | kNonNegative),
    c.tenants.max_streams_per_tenant);
  v(ranged("--max-subscriptions-per-tenant", "tenants.max_subscriptions_per_tenant", 0, 1e15,
           "resource URIs subscribed; 0 = unlimited", kReload | kNonNegative),
    c.tenants.max_subscriptions_per_tenant);
  v(ranged("--max-idle-sessions", "tenants.max_idle_sessions", 0, 1e9,
           "2025-era sessions without an open stream, in all; more initialize requests get 503"),
    c.tenants.max_idle_sessions);
  v(ranged("--max-idle-sessions-per-tenant", "tenants.max_idle_sessions_per_tenant", 0, 1e9,
           "2025-era sessions without an open stream per tenant; more get 429 (0 = unlimited)", kReload),
    c.tenants.max_idle_sessions_per_tenant);
  v(ranged("--max-listens-per-connection", "mcp.max_listens_per_connection", 1, 1'000'000,
           "subscriptions/listen one stdio client may hold open at once"),
    c.mcp.max_listens_per_connection);
  // HTTP/2 and TLS (docs/operations.md "TLS and HTTP/2").
  v(plain("--no-h2", "http2.off", "speak HTTP/1.1 only: no ALPN h2 over TLS, no HTTP/2 with prior knowledge"),
    c.http2.off);
  v(ranged("--h2-max-streams", "http2.max_concurrent_streams", 1, 1'000'000,
           "SETTINGS_MAX_CONCURRENT_STREAMS: streams (listens) one HTTP/2 connection may hold open; more are refused"),
    c.http2.max_concurrent_streams);
  v(ranged("--h2-initial-window", "http2.initial_window", 65535, 2147483647,
           "SETTINGS_INITIAL_WINDOW_SIZE: bytes of request body a client may send on a stream before its window is "
           "opened again"),
    c.http2.initial_window);
  v(file("--tls-cert", "tls.cert_file", "PEM certificate chain: TLS (ALPN h2, http/1.1) on --listen; with --tls-key",
         kReload),
    c.tls.cert_file);
  v(file("--tls-key", "tls.key_file", "PEM private key of --tls-cert", kReload), c.tls.key_file);
  v(file("--publish-tls-cert", "tls.publish_cert_file", "PEM certificate chain: TLS on --publish-listen", kReload),
    c.tls.publish_cert_file);
  v(file("--publish-tls-key", "tls.publish_key_file", "PEM private key of --publish-tls-cert", kReload),
    c.tls.publish_key_file);
  v(file("--tls-client-ca", "tls.client_ca_file",
         "PEM CA bundle: TLS clients may present a certificate it signed; a publisher's authenticates it by a "
         "\"cert:NAME TENANT\" line of --publish-keys-file"),
    c.tls.client_ca_file);
  v(ranged("--tls-handshake-timeout-ms", "tls.handshake_timeout_ms", 10, kHour,
           "a TLS handshake not done within this closes the connection (counted)"),
    c.tls.handshake_timeout_ms);
  v(ranged("--tls-ticket-rotate-s", "tls.ticket_rotate_s", 60, 7 * 86400,
           "session-ticket keys rotate this often; tickets of the previous key still resume"),
    c.tls.ticket_rotate_s);
  v(ranged("--max-tenants", "tenants.max_tenants", 1, kMaxTenants, "distinct tenants with clients; more are refused",
           kParsed),
    c.tenants.max_tenants);
  v(ranged("--metrics-tenants", "tenants.metrics_tenants", 0, 100'000,
           "tenants labelled by name in /metrics; the rest are summed as tenant=\"_other\""),
    c.tenants.metrics_tenants);
  // Authentication (docs/security.md "Client tokens", "Publisher keys").
  v(file("--jwt-secret-file", "auth.jwt_secret_file", "HS256 secret (at least 32 bytes) for client tokens", kReload),
    c.auth.jwt_secret_file);
  v(file("--jwt-public-key-file", "auth.jwt_public_key_file",
         "RS256 (RSA) or ES256 (P-256) PEM public key for client tokens", kReload),
    c.auth.jwt_public_key_file);
  v(file("--publish-keys-file", "auth.publish_keys_file", "publisher keys, lines \"KEY TENANT\" (\"*\" = any tenant)",
         kReload),
    c.auth.publish_keys_file);
  v(plain("--unix-tenant", "auth.unix_tenant",
          "tenant of --unix clients, which then need no token (the socket's permissions are the access control)"),
    c.auth.unix_tenant);
  // OAuth 2.1 resource server (docs/security.md "OAuth").
  v(plain("--oauth-issuer", "oauth.issuer",
          "accept access tokens of this OAuth authorization server (its JWKS found by RFC 8414 or OpenID Connect "
          "discovery; https, or http on loopback)"),
    c.oauth.issuer);
  v(plain("--oauth-jwks-url", "oauth.jwks_url", "the issuer's JWKS URL, in place of the discovered jwks_uri"),
    c.oauth.jwks_url);
  v(plain("--oauth-resource", "oauth.resource",
          "this server's canonical /mcp URL, as clients reach it (RFC 9728 resource; default: http(s)://--listen/mcp)"),
    c.oauth.resource);
  v(plain("--oauth-audience", "oauth.audiences",
          "an audience access tokens must carry in `aud` (repeatable; default: --oauth-resource, RFC 8707)"),
    c.oauth.audiences);
  v(plain("--oauth-listen-scope", "oauth.listen_scope", "scope required for listens and resources/subscribe"),
    c.oauth.listen_scope);
  v(plain("--oauth-scopes", "oauth.scopes",
          "a scope the protected resource metadata lists in scopes_supported (repeatable; default: "
          "--oauth-listen-scope; with --upstream, list the upstream's scopes too)"),
    c.oauth.scopes);
  v(plain("--oauth-tenant-claim", "oauth.tenant_claim",
          "the access-token claim naming the tenant (e.g. org_id); its value must be a valid tenant name"),
    c.oauth.tenant_claim);
  v(plain("--oauth-tenant", "oauth.tenant", "one tenant for every access token (instead of --oauth-tenant-claim)"),
    c.oauth.tenant);
  v(plain("--oauth-uris-claim", "oauth.uris_claim", "the access-token claim listing the URI prefixes it may watch"),
    c.oauth.uris_claim);
  v(file("--oauth-ca-file", "oauth.ca_file", "PEM roots an https issuer's certificate must chain to"),
    c.oauth.ca_file);
  v(ranged("--oauth-leeway-s", "oauth.leeway_s", 0, 600, "clock leeway for exp, nbf and iat"), c.oauth.leeway_s);
  v(ranged("--oauth-fetch-timeout-ms", "oauth.fetch_timeout_ms", 100, 120'000,
           "each request to the authorization server (discovery, JWKS, introspection)"),
    c.oauth.fetch_timeout_ms);
  v(ranged("--oauth-max-document-bytes", "oauth.max_document_bytes", 1024, 16 << 20,
           "the largest discovery document, JWKS or introspection answer read"),
    c.oauth.max_document_bytes);
  v(ranged("--oauth-jwks-refresh-s", "oauth.jwks_refresh_s", 10, 86'400,
           "the JWKS is fetched again this often (sooner when its Cache-Control max-age says so)"),
    c.oauth.jwks_refresh_s);
  v(ranged("--oauth-jwks-min-refresh-s", "oauth.jwks_min_refresh_s", 1, 3600,
           "a token naming an unknown key id fetches the JWKS again at most this often"),
    c.oauth.jwks_min_refresh_s);
  v(plain("--oauth-introspection-url", "oauth.introspection_url",
          "RFC 7662 introspection endpoint: tokens that are not JWTs of --oauth-issuer are introspected"),
    c.oauth.introspection_url);
  v(file("--oauth-introspection-credentials-file", "oauth.introspection_credentials_file",
         "\"client_id:client_secret\" for the introspection endpoint (HTTP Basic)"),
    c.oauth.introspection_credentials_file);
  v(ranged("--oauth-introspection-cache", "oauth.introspection_cache", 0, 10'000'000,
           "introspection verdicts kept (never past the token's exp)"),
    c.oauth.introspection_cache);
  v(ranged("--oauth-introspection-cache-s", "oauth.introspection_cache_s", 0, 86'400,
           "an active introspection verdict is kept at most this long"),
    c.oauth.introspection_cache_s);
  v(ranged("--oauth-token-cache", "oauth.token_cache", 0, 10'000'000,
           "verified access tokens remembered (by digest), so the same token is not verified again (0: off)"),
    c.oauth.token_cache);
  v(ranged("--oauth-token-cache-s", "oauth.token_cache_s", 0, 3600,
           "a remembered token is trusted this long at most (never past its exp)"),
    c.oauth.token_cache_s);
  v(ranged("--oauth-max-waiting", "oauth.max_waiting", 1, 10'000'000,
           "requests waiting at once for the authorization server or --authorize-url; more get 503"),
    c.oauth.max_waiting);
  // Per-subscription authorization by the application (docs/security.md "--authorize-url").
  v(plain("--authorize-url", "authorize.url",
          "ask this URL which of the URIs and kinds a listen or resources/subscribe requests its principal may "
          "watch; the acknowledgement is narrowed to the answer"),
    c.authorize.url);
  v(ranged("--authorize-timeout-ms", "authorize.timeout_ms", 10, 120'000,
           "an --authorize-url answer not back by then fails the request closed"),
    c.authorize.timeout_ms);
  v(ranged("--authorize-cache", "authorize.cache_entries", 0, 10'000'000, "--authorize-url answers kept"),
    c.authorize.cache_entries);
  v(ranged("--authorize-max-ttl-ms", "authorize.max_ttl_ms", 0, kDay,
           "an --authorize-url answer's ttlMs is capped at this"),
    c.authorize.max_ttl_ms);
  v(ranged("--publish-rate", "auth.publish_rate", 0, 1e12,
           "notifications per second per publisher key; 429 above (0 = unlimited)", kReload | kNonNegative),
    c.auth.publish_rate);
  v(ranged("--publish-burst", "auth.publish_burst", 0, 1e12, "publish token bucket size (0 = one second's worth)",
           kReload | kNonNegative),
    c.auth.publish_burst);
}

}  // namespace mcpfan

#pragma once
/**
 * What a Server is started with: ServerConfig, in sections a module takes whole (the NATS
 * backplane takes `nats`, the front proxy `upstream`, the engine's shards `shard`). Every
 * setting the mcpfan program has a flag for is declared once more, with its flag, help text,
 * range and whether a reload applies it, in mcpfan/transport/settings.h; the program's
 * flags, Server::check()'s ranges and the reloadable keys all come from there.
 */
#include <cstdint>
#include <string>
#include <vector>

#include "mcpfan/publish_decoder.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/shard.h"
#include "mcpfan/task_states.h"
#include "mcpfan/transport/host_auth.h"
#include "mcpfan/transport/log.h"

namespace mcpfan {

/** Where the Server listens: the public listener, the operator listener and the Unix socket. */
struct ListenConfig {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8080;  // 0 = ephemeral; start() returns the bound port
  /**
   * A listening TCP socket of the host's own (bound and listen()ed by it, or inherited, e.g.
   * by socket activation), served instead of binding host:port; -1 (default): bind host:port.
   * start() serves a duplicate per worker and returns its port; the host's fd stays the
   * host's (close it when it likes, the duplicates keep the socket open until stop()). libuv
   * makes the shared socket non-blocking. Not a listening stream socket: start() fails with
   * -32602 and nothing started. `host` still names the default Host allow-list entry: set
   * http.allow_hosts for a socket on another address.
   */
  int listen_fd = -1;
  /**
   * false (default): host:port and publish_host:publish_port are this Server's alone. An
   * address some other socket listens on (another process, even one whose SO_REUSEPORT
   * sockets the kernel would let join) fails start() with "--listen HOST:PORT: address in
   * use (...)" (or --publish-listen) and nothing started. true: join such a group of
   * SO_REUSEPORT listeners of the same user, and the kernel spreads connections over both
   * processes (several processes on one port on purpose, e.g. a zero-downtime restart).
   * Either way the workers of one Server share each listener with SO_REUSEPORT.
   */
  bool reuse_port = false;
  /**
   * false (default): a listener that is not on a loopback address (host, publish_host, or the
   * address of listen_fd) needs authentication for what it serves, or start() and check() fail
   * with -32602 naming the listener and what is missing: client authentication
   * (auth.jwt_secret_file, auth.jwt_public_key_file or auth.authenticate_client) for /mcp, and
   * auth.publish_keys_file for /v1/publish (both on host:port without publish_host; with
   * publish_host each listener needs only its own). true: serve such a listener without it
   * (the mcpfan program's --insecure).
   */
  bool insecure = false;
  // ---- the operator listener (empty publish_host: every path on the one listener) ----
  // Non-empty: the operator paths (/v1/publish, /metrics; router.h is_operator_path) are served
  // only on publish_host:publish_port and answer 404 on the public listener, which keeps /mcp
  // and /healthz; the operator listener answers /mcp with 404 (clients belong on the public one).
  std::string publish_host;
  std::uint16_t publish_port = 0;  // 0 = ephemeral; Server::publish_port() returns the bound port
  std::string unix_path;           // non-empty: stdio-framed clients on this Unix socket
};

/** HTTP/1.1 on the listeners: request bounds, connection limits (each hit is counted in mcpfan_limit_hits_total). */
struct HttpConfig {
  std::size_t max_body = 1u << 20;  // bytes; larger bodies get 413
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_url_length = 8 * 1024;
  std::uint64_t request_timeout_ms = 10000;  // a request must arrive whole this long after it starts (408)
  std::uint64_t idle_timeout_ms = 60000;     // a keep-alive connection between requests closes after this
  std::uint64_t write_timeout_ms = 30000;    // writes making no progress this long close the connection (stdio's too)
  std::uint32_t max_requests_per_connection = 10000;  // the last one is answered with Connection: close (0 = unlimited)
  std::uint32_t tcp_keepalive_s = 60;        // TCP keep-alive probes after this idle time (0 = off)
  std::uint64_t keepalive_ms = 15000;        // SSE keepalive comment interval
  std::vector<std::string> allow_origins;    // empty: http(s)://localhost|127.0.0.1|[::1][:port]
  std::vector<std::string> allow_hosts;      // Host header allow-list; empty: localhost|127.0.0.1|[::1]|listen host
};

/** What MCP clients may hold and ask for: URIs, listens, 2025-era sessions, stdio framing. */
struct McpConfig {
  std::size_t max_uri_length = 4096;  // longest resource URI accepted
  std::size_t max_uris_per_listen = 1024;
  std::uint64_t session_idle_ms = 300000;         // a 2025-era session with no open stream expires after this
  std::size_t session_replay_bytes = 256 * 1024;  // a 2025 session's journal for Last-Event-ID resumes
  std::size_t max_line_bytes = 1u << 20;          // longest stdio-framed message
  std::size_t max_listens_per_connection = 256;   // 2026 listens one stdio client may hold
};

/** Task status (the Tasks extension, SEP-2663): listen and publish bounds, the states kept for late listeners. */
struct TasksConfig {
  std::size_t max_ids_per_listen = 64;       // taskIds in one listen
  std::size_t max_id_length = 256;           // longest task id accepted (listen or publish)
  std::size_t max_bytes = 256 * 1024;        // params of one published notifications/tasks
  std::size_t states_max = 100000;           // task states kept in all (the first to expire makes room)
  std::size_t states_per_tenant = 10000;     // per tenant (a new task past it is not kept)
  std::size_t states_max_bytes = 256u << 20;  // their encoded bytes in all
  std::uint64_t state_max_ttl_ms = 3600000;  // a state is kept its task's ttlMs, at most this
};

/** Tenants: per-tenant ceilings (0 = unlimited) and the tenant table. */
struct TenantsConfig {
  std::int64_t max_connections_per_tenant = 0;
  std::int64_t max_streams_per_tenant = 0;        // listens + 2025-era sessions
  std::int64_t max_subscriptions_per_tenant = 0;  // resource URIs subscribed
  std::size_t max_tenants = 10000;                // distinct tenants with clients; more are refused
  // 2025-era sessions without an open GET stream (made by initialize, held until
  // --session-idle-ms): without a ceiling one client pipelining initialize holds gigabytes.
  std::size_t max_idle_sessions = 20000;             // in all (503 past it)
  std::int64_t max_idle_sessions_per_tenant = 5000;  // per tenant (429 past it)
  std::size_t metrics_tenants = 100;  // tenants labelled by name in /metrics; the rest sum as "_other"
};

/** Authentication (all empty: no auth, every client is tenant "default") and the publish rate. */
struct AuthConfig {
  std::string jwt_secret_file;      // HS256 secret for client tokens
  std::string jwt_public_key_file;  // RS256/ES256 public key (PEM) for client tokens
  std::string publish_keys_file;    // lines "KEY TENANT" ("*" = any tenant)
  std::string unix_tenant;          // --unix clients belong to this tenant without a token
  /**
   * The host's own client authentication in place of JWTs (transport/host_auth.h: when it is
   * called, on which threads, the outcomes). Empty: not used. Set together with
   * jwt_secret_file or jwt_public_key_file, start() fails (-32602) and starts nothing.
   * Fixed at start: reload() keeps it and refuses JWT files while it is set.
   */
  ClientAuthenticator authenticate_client;
  double publish_rate = 0;   // notifications per second per publisher key (0 = unlimited)
  double publish_burst = 0;  // bucket size; 0 = one second's worth
};

/**
 * OAuth 2.1 resource server (docs/security.md "OAuth"): access tokens from an authorization
 * server, verified with the keys of its JWKS (RFC 9068 JWTs) or by introspection (RFC 7662).
 * Empty `issuer`: off.
 */
struct OAuthConfig {
  // Its `iss`; discovery (RFC 8414, then OpenID Connect) finds the JWKS. https, or http on loopback.
  std::string issuer;
  std::string jwks_url;  // overrides the discovered jwks_uri
  // This server's canonical /mcp URL (RFC 9728 `resource`; the default audience, RFC 8707).
  // Empty: http(s)://<--listen>/mcp.
  std::string resource;
  std::vector<std::string> audiences;  // `aud` must name one of these; empty: `resource`
  std::string listen_scope;            // required for listens and subscriptions; empty: none
  // The protected resource metadata's scopes_supported (what clients ask the authorization
  // server for; in front of an upstream, its scopes too); empty: listen_scope.
  std::vector<std::string> scopes;
  std::string tenant_claim;            // the claim naming the tenant ("org_id"); or:
  std::string tenant;                  // one fixed tenant for every token of the issuer
  std::string uris_claim = "uris";     // optional claim: URI prefixes the token may watch
  std::string ca_file;                 // roots for an https issuer (empty: the system's)
  std::int64_t leeway_s = 60;          // for exp, nbf, iat
  std::uint64_t fetch_timeout_ms = 5000;      // each request to the authorization server
  std::size_t max_document_bytes = 256 * 1024;  // a discovery document, a JWKS or an introspection answer
  std::uint64_t jwks_refresh_s = 300;  // refreshed this often at most (or its Cache-Control max-age, if shorter)
  std::uint64_t jwks_min_refresh_s = 10;  // an unknown `kid` refetches at most this often
  std::string introspection_url;          // RFC 7662 endpoint: tokens that are not our JWTs are introspected
  std::string introspection_credentials_file;  // "client_id:client_secret" (HTTP Basic)
  std::size_t introspection_cache = 10000;     // verdicts kept (each until its token's exp at most)
  std::uint64_t introspection_cache_s = 60;    // an active verdict is kept at most this long
  std::size_t max_waiting = 10000;             // requests waiting for a fetch at once; more get 503
  // JWTs verified are remembered (by SHA-256) this many, each at most token_cache_s and never
  // past its exp: a client reconnecting with the same token skips the signature check. 0: off.
  std::size_t token_cache = 10000;
  std::uint64_t token_cache_s = 60;
};

/** Per-subscription authorization by the application (docs/security.md "--authorize-url"). */
struct AuthorizeConfig {
  std::string url;                     // POSTed before a listen or a resources/subscribe is acknowledged; empty: off
  std::uint64_t timeout_ms = 2000;     // an answer not back by then fails closed
  std::size_t cache_entries = 10000;   // answers kept
  std::uint64_t max_ttl_ms = 60000;    // an answer's ttlMs is capped at this
};

/** Logging (transport/log.h; what is logged and on which thread: server.h "Logging"). */
struct LogConfig {
  /**
   * Receives every record at or above `level`, on the Server's log thread (never a worker
   * loop; LogSink says when it is called and for how long). Empty (default): the built-in
   * sink, which writes `format` lines to stderr through a bounded queue and its own thread
   * (a stderr nobody drains never stops a loop). With a sink of its own, the Server writes
   * nothing to stderr.
   */
  LogSink sink;
  LogLevel level = LogLevel::Info;
  LogFormat format = LogFormat::Text;  // the built-in sink's; ignored with `sink`
};

/** The NATS backplane (empty `urls`: one process, in memory); the backplane takes it whole. */
struct NatsConfig {
  std::string urls;                 // comma-separated nats:// URLs
  std::string prefix = "mcpfan";    // subjects are <prefix>.v1.… (transports/src/nats/subjects.h)
  std::string node_name;            // this node's NATS connection name (seen in the server's /connz)
  std::string creds_file;           // NATS user credentials file (JWT + nkey seed), optional
  std::string tls_ca_file;          // CA bundle: require TLS to the NATS servers, optional
  std::uint64_t linger_ms = 5000;   // interest kept this long after its last subscriber
  int outage_buffer_bytes = 8 << 20;  // for other nodes while disconnected; a publish past it gets 503
  // Received from other nodes and not yet matched by every shard they go to; past it a message
  // is dropped (counted). Also each NATS subscription's pending-bytes bound inside nats.c.
  std::int64_t receive_buffer_bytes = 64 << 20;
  // After a (re)connect, before what waited is sent: peers re-subscribe first (570 ms measured
  // at 19,000 subjects).
  std::uint64_t settle_ms = 1000;
  // A connection whose server stopped answering is noticed after about ping_interval_ms ×
  // (max_pings_out + 1) and reconnected elsewhere (nats.c's defaults, 2 minutes × 2, left a node
  // blind for minutes).
  std::uint64_t ping_interval_ms = 2000;
  int max_pings_out = 2;
  // Every node publishes a heartbeat this often, and a node that hears a peer's sequence skip, its
  // fault count grow, or nothing for four of its intervals sends its listeners re-read hints
  // (transports/src/nats/peers.h). 0: no heartbeats (and no detection of losses the node cannot see).
  std::uint64_t heartbeat_ms = 500;
  std::size_t max_subjects = 1'000'000;  // past it the tenant with the most subjects is folded into one
  std::uint64_t batch_window_us = 1000;  // after a send to NATS, later ones wait up to this long to leave together
  std::string io = "libuv";     // the NATS socket IO: "libuv" (the backplane's own loop) or "threads" (nats.c's)
  // Received messages: "loop" (taken on the backplane's loop, handed to the workers one batch per
  // read; needs io "libuv", else it is "pool") or "pool" (nats.c's delivery thread, one hand-off each)
  std::string receive = "loop";
  bool publish_batching = false;  // nats.c's flusher thread waits 1 ms to batch; off: sent at once (libuv: next turn)
  // nats.c's shared delivery pool (process-wide); 0 = its default, a thread per subscription
  int delivery_threads = 1;
};

/** The front proxy (empty `url`: mcpfan serves only what it serves itself). */
struct UpstreamConfig {
  // http(s)://HOST:PORT/path of an MCP server (an IP or a name): every request mcpfan does not serve goes there
  std::string url;
  std::string ca_file;  // https: the roots its certificate must chain to (empty: the system's)
  /**
   * A resolved host name is reused for new connections this long; a failed connect forgets it
   * at once. 0: resolve for every new connection.
   */
  std::uint64_t resolve_ttl_ms = 5000;
  std::uint64_t connect_ms = 5000;      // connecting to it (502 past it)
  std::uint64_t first_byte_ms = 30000;  // the first byte of its answer (504 past it)
  std::uint64_t idle_ms = 300000;       // a gap in a streaming answer (the stream is cut)
  std::size_t max_idle = 16;            // pooled keep-alive connections per worker
  // A pooled connection idle this long is closed: below the upstream's keep-alive timeout.
  std::uint64_t keepalive_ms = 4000;
  // An answer mcpfan rewrites (initialize, server/discover) is read whole up to this.
  std::size_t max_answer_bytes = 1u << 20;
  bool forward_subscribe = false;           // also send 2025 resources/(un)subscribe to the upstream
  // Poll-to-push (docs/protocol.md "Poll-to-push"): a task the upstream creates for a tools/call
  // proxied here is polled with tasks/get while a listen on this node watches it, and each
  // change is published as notifications/tasks.
  bool task_poll = false;
  std::uint64_t task_poll_min_ms = 100;     // a task's pollIntervalMs is raised to this
  std::uint64_t task_poll_max_ms = 60000;   // and lowered to this (also the interval of a task without one)
  std::size_t task_poll_max_tasks = 10000;  // tasks tracked at once, over every loop
  unsigned task_poll_max_failures = 5;      // failed polls in a row before a task's polling stops
};

/**
 * TLS on the listeners (docs/security.md "TLS"): TLS 1.2 and 1.3, ALPN h2 and http/1.1.
 * Empty files: that listener is plaintext (and still takes HTTP/2 with prior knowledge).
 */
struct TlsConfig {
  std::string cert_file;          // PEM chain for --listen
  std::string key_file;           // its private key
  std::string publish_cert_file;  // PEM chain for --publish-listen
  std::string publish_key_file;
  // Non-empty: clients may present a certificate these signed; a verified one's common name
  // authenticates a publisher named by a "cert:NAME TENANT" line of auth.publish_keys_file.
  std::string client_ca_file;
  std::uint64_t handshake_timeout_ms = 10000;  // a handshake not done by then closes the connection (counted)
  std::uint64_t ticket_rotate_s = 3600;        // session-ticket key rotation; the previous key still resumes
};

/** HTTP/2 on the listeners (over TLS by ALPN, or cleartext with prior knowledge). */
struct Http2Config {
  bool off = false;                            // HTTP/1.1 only: no ALPN h2, and the h2c preface is a 400
  std::uint32_t max_concurrent_streams = 1000; // SETTINGS_MAX_CONCURRENT_STREAMS: listens one connection may hold
  std::uint32_t initial_window = 1u << 20;     // SETTINGS_INITIAL_WINDOW_SIZE for request bodies
};

struct ServerConfig {
  ListenConfig listen;
  HttpConfig http;
  Http2Config http2;
  TlsConfig tls;
  McpConfig mcp;
  TasksConfig tasks;
  TenantsConfig tenants;
  AuthConfig auth;
  OAuthConfig oauth;
  AuthorizeConfig authorize;
  LogConfig log;
  NatsConfig nats;
  UpstreamConfig upstream;
  ShardOptions shard;  // each worker's engine Shard (mcpfan/shard.h)

  /** The engine's decoders' bounds, from the settings above (one place, for every decoder made). */
  [[nodiscard]] PublishLimits publish_limits() const noexcept {
    PublishLimits l;
    l.max_uri_length = mcp.max_uri_length;
    l.max_task_id_length = tasks.max_id_length;
    l.max_task_bytes = tasks.max_bytes;
    return l;
  }
  [[nodiscard]] RpcLimits rpc_limits() const noexcept {
    return RpcLimits{mcp.max_uri_length, mcp.max_uris_per_listen, tasks.max_id_length, tasks.max_ids_per_listen};
  }
  [[nodiscard]] TaskStateLimits task_state_limits() const noexcept {
    return TaskStateLimits{tasks.states_max, tasks.states_per_tenant, tasks.states_max_bytes, tasks.state_max_ttl_ms};
  }

  // ---- the engine and the process ----
  unsigned workers = 0;  // 0 = one per core
  /**
   * SSE stream batches are sent through one io_uring per worker, this many submission
   * entries (the batches of one loop turn go out 256 per system call instead of one writev
   * each). 0: libuv writes only. Where the kernel refuses io_uring (too old, a seccomp
   * filter) the server says so once and uses libuv writes; /metrics mcpfan_io_uring_workers.
   */
  unsigned io_uring_entries = 256;
  std::uint64_t debounce_ms = 0;  // minimum interval between fan-outs of one (tenant, method, uri); 0 = off
  std::uint64_t shutdown_grace_ms = 1500;
  /**
   * Between drain() (SIGTERM in the mcpfan program) and stop(): how long the node keeps
   * serving everything while GET /readyz answers 503, so that load balancers take it out
   * before its listeners close. 0 (default): stop at once. The Server does not act on it
   * itself: the mcpfan program waits this long between drain() and stop() on SIGTERM, and a
   * host embedding mcpfan does the same with its own timer.
   */
  std::uint64_t drain_delay_ms = 0;
  /**
   * GET /readyz while the NATS backplane is disconnected: "ignore" (default: still 200; the
   * node serves its own streams, and 503 on every node at once would take the whole tier out
   * of a load balancer) or "require" (503: new clients go to nodes that reach the cluster).
   */
  std::string readyz_backplane = "ignore";
};

}  // namespace mcpfan

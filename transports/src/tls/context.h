#pragma once
// TLS 1.2/1.3 with OpenSSL 3 (docs/design.md "The rooms of transports/"): what a listener or an
// outbound caller shares between its connections. A context makes SSL objects; a Channel
// (tls/channel.h) turns one of them into a byte transformer for one connection. No socket, no
// loop: this room never does I/O.
//
// Thread affinity: ServerContext and ClientContext are thread-safe (one per listener or
// upstream, shared by every worker). Lifetime: shared_ptr. Each SSL_CTX holds a reference to
// the state its callbacks need (settings, counters, the ticket key ring), and each SSL holds a
// reference to its SSL_CTX, so a Channel outlives its context safely and an SSL made before a
// reload() keeps the old certificate until it is freed.
#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace mcpfan::detail::tls {

struct ServerSettings {
  std::string cert_file;  // PEM chain (leaf first)
  std::string key_file;   // PEM private key
  // Empty: no client certificate is asked for. Else one is requested (not required) and verified against this
  // bundle; a connection whose certificate fails goes on unauthenticated (Channel::client_cert_verified() false).
  std::string client_ca_file;
  bool offer_h2 = true;                  // ALPN: "h2" preferred over "http/1.1"; false: only "http/1.1"
  std::uint64_t ticket_rotate_s = 3600;  // session ticket key period; also the tickets' lifetime
};

/** Relaxed counters, readable from any thread. Only server-side channels count. */
struct TlsCounters {
  std::atomic<std::uint64_t> handshakes{0};  // completed, resumed ones included
  std::atomic<std::uint64_t> resumed{0};
  std::atomic<std::uint64_t> handshake_failures{0};
  std::atomic<std::uint64_t> client_certs_verified{0};  // per handshake, resumed ones included
  std::atomic<std::uint64_t> reloads{0};
  std::atomic<std::uint64_t> reload_failures{0};
  std::atomic<std::uint64_t> ticket_key_rotations{0};
};

struct ServerShared;  // settings, counters and ticket keys: kept alive by every SSL_CTX made for them

class ServerContext {
 public:
  /** nullptr and `err` naming the file and OpenSSL's reason when a file does not load. */
  static std::shared_ptr<ServerContext> load(const ServerSettings& settings, std::string& err);
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  /** Re-reads the same files into a new SSL_CTX and swaps it in; on failure keeps the old one (false, `err`). */
  bool reload(std::string& err);
  /** The same with other files (a reload whose configuration names new ones); on failure the old names stay. */
  bool reload(const std::string& cert_file, const std::string& key_file, std::string& err);
  /** A server-mode SSL on the current SSL_CTX (the caller owns it; a Channel takes it). nullptr only without memory. */
  SSL* new_ssl();
  TlsCounters& counters();
  const ServerSettings& settings() const;
  /** Rotates the ticket key now, as the period would (tests: a previous key still decrypts its tickets). */
  void rotate_ticket_key_for_test();

  explicit ServerContext(std::shared_ptr<ServerShared> shared, SSL_CTX* ctx);  // load()'s

 private:
  std::shared_ptr<ServerShared> shared_;
  std::mutex mu_;  // guards ctx_: held to swap it or to SSL_new on it (which takes its own reference)
  SSL_CTX* ctx_;
};

struct ClientSettings {
  std::string ca_file;    // empty: the system's roots (SSL_CTX_set_default_verify_paths)
  bool offer_h2 = false;  // ALPN offers "h2" before "http/1.1"; false: "http/1.1" only
};

class ClientContext {
 public:
  static std::shared_ptr<ClientContext> load(const ClientSettings& settings, std::string& err);
  ~ClientContext();
  ClientContext(const ClientContext&) = delete;
  ClientContext& operator=(const ClientContext&) = delete;

  /** A client-mode SSL for `host`: SNI (not for IP literals), the peer verified against the name or address. */
  SSL* new_ssl(const std::string& host);

  explicit ClientContext(SSL_CTX* ctx, bool offer_h2) : ctx_(ctx), offer_h2_(offer_h2) {}  // load()'s

 private:
  SSL_CTX* ctx_;  // immutable after load(): SSL_new on it is thread-safe
  bool offer_h2_;
};

/** The counters of the ServerContext that made `ssl`; nullptr for a client SSL. */
TlsCounters* server_counters(const SSL* ssl);

/** Empties this thread's OpenSSL error queue into one message ("; " between reasons); "" when it was empty. */
std::string drain_errors();

}  // namespace mcpfan::detail::tls

#pragma once
// One TLS connection as a byte transformer (docs/design.md "The rooms of transports/"):
// ciphertext in, plaintext out; plaintext in, ciphertext out. It never blocks and never does
// I/O: its owner (a net::Socket) reads and writes, and hands the bytes through here.
//
// The SSL's BIOs are not OpenSSL's memory BIOs but one BIO of ours (tls/caller_bio.h) that
// reads straight from the bytes given to feed() and appends straight to the caller's
// `to_send`. A memory BIO keeps the largest buffer it ever held (a whole read of the loop's
// read buffer, a whole encrypted batch) for the life of the connection: ~167 KB for an idle
// server connection after 64 KiB each way, against ~13.7 KB here (the SSL, its session, the
// BIO; SSL_MODE_RELEASE_BUFFERS frees the record buffers). OpenSSL keeps a partial record
// itself, so input is always consumed whole.
//
// Thread affinity: loop-affine (its connection's loop). Lifetime: owned by its connection;
// owns its SSL, which keeps its SSL_CTX (and that the context's shared state) alive.
#include <openssl/ssl.h>
#include <sys/uio.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "tls/caller_bio.h"
#include "tls/context.h"

namespace mcpfan::detail::tls {

class Channel {
 public:
  /** Takes ownership of `ssl` (from ServerContext::new_ssl or ClientContext::new_ssl); its role is SSL_is_server's. */
  explicit Channel(SSL* ssl);
  /** Frees the SSL. Without a fatal error its session stays resumable, close_notify or not (a closed keep-alive). */
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  enum class Status { Ok, Failed };

  /**
   * Feeds received ciphertext. Appends what must be sent (handshake records, alerts, tickets) to `to_send` and
   * calls on_plain for each piece of decrypted application data. Failed: a fatal TLS error (error() names it);
   * `to_send` may then hold an alert to send before closing. A partial record waits inside for the rest.
   * on_plain may call encrypt() or close_notify() with this same `to_send` (records must leave in the order they
   * were made, so not another string), and must not destroy the Channel.
   */
  Status feed(const char* data, std::size_t len, std::string& to_send,
              const std::function<void(const char*, std::size_t)>& on_plain);
  /** Client side: the ClientHello into `to_send`. */
  Status start(std::string& to_send);
  /**
   * Encrypts into `to_send` in full records (16 KiB each, whatever the pieces' sizes). Before the handshake is
   * done the plaintext waits here (at most kMaxBufferedPlain, else Failed) and goes out when it completes.
   */
  Status encrypt(const iovec* v, std::size_t n, std::string& to_send);
  Status encrypt(std::string_view plain, std::string& to_send);
  /** Our close_notify alert (once; nothing before the handshake is done). */
  void close_notify(std::string& to_send);

  bool handshake_done() const { return handshake_done_; }
  /** The peer sent close_notify: nothing more will come (ours is not sent for it: close_notify() is the owner's). */
  bool peer_closed() const { return peer_closed_; }
  /** "h2", "http/1.1" or empty (no ALPN: HTTP/1.1). */
  std::string_view alpn() const;
  bool resumed() const;
  /** A client certificate was presented and verified against the server's client_ca_file. */
  bool client_cert_verified() const { return client_cert_verified_; }
  /** The verified client certificate's CN (its whole RFC 2253 subject without one); empty when not verified. */
  std::string client_cert_subject() const;
  const std::string& error() const { return error_; }
  /** Plaintext given to encrypt() before the handshake, waiting for it. */
  std::size_t buffered_plain() const { return pending_.size(); }

  static constexpr std::size_t kMaxBufferedPlain = 256 * 1024;

 private:
  Status handshake(std::string& to_send);
  Status read_plain(const std::function<void(const char*, std::size_t)>& on_plain);
  Status write_plain(const char* data, std::size_t len);
  Status fail(const char* what, int ret);
  void on_handshake_done();

  SSL* ssl_;
  CallerIo io_;
  std::string pending_;
  std::string error_;
  bool server_;
  bool failed_ = false;
  bool handshake_done_ = false;
  bool peer_closed_ = false;
  bool close_sent_ = false;
  bool client_cert_verified_ = false;
};

}  // namespace mcpfan::detail::tls

// TLS for mcpfan-load's subscriber connections (--tls): OpenSSL on memory BIOs, so the
// connection keeps its libuv reads and writes. Ciphertext read from the socket goes into
// Feed(); what the peer sent comes out as plaintext, and whatever TLS has to send (the
// handshake, encrypted requests, alerts) comes out as ciphertext for the socket.
#pragma once

#include <openssl/ssl.h>

#include <string>

namespace mcpload {

// One client context for the whole run: TLS 1.2/1.3, ALPN "http/1.1" or "h2", SNI "localhost";
// the peer is verified against --ca-file (hostname "localhost") unless --insecure-tls.
class TlsClientContext {
 public:
  ~TlsClientContext();
  bool Init(bool h2, const std::string& ca_file, bool insecure, std::string* err);
  SSL_CTX* get() const { return ctx_; }
  bool verify() const { return verify_; }

 private:
  SSL_CTX* ctx_ = nullptr;
  bool verify_ = false;
};

class TlsPipe {
 public:
  TlsPipe() = default;
  TlsPipe(const TlsPipe&) = delete;
  TlsPipe& operator=(const TlsPipe&) = delete;
  ~TlsPipe();

  // Starts the handshake: the ClientHello is appended to *out.
  bool Start(const TlsClientContext& ctx, std::string* out, std::string* err);
  // Ciphertext from the socket: the decrypted bytes are appended to *plain, bytes for the
  // socket to *out. False on a TLS error (*err says which); *eof when the peer sent close_notify.
  bool Feed(const char* p, size_t n, std::string* plain, std::string* out, bool* eof, std::string* err);
  // Plaintext to send: encrypted into *out, or held until the handshake is done.
  bool Write(const char* p, size_t n, std::string* out, std::string* err);
  bool handshake_done() const { return done_; }
  std::string Alpn() const;

 private:
  bool Flush(std::string* out);
  bool WritePending(std::string* out, std::string* err);

  SSL* ssl_ = nullptr;
  BIO* wbio_ = nullptr;  // what TLS writes (owned by ssl_)
  BIO* rbio_ = nullptr;  // what the socket read (owned by ssl_)
  bool done_ = false;
  std::string pending_;  // plaintext written before the handshake finished
};

}  // namespace mcpload

#include "tls_pipe.h"

#include <openssl/err.h>

namespace mcpload {

namespace {

std::string SslErr(const char* what) {
  std::string s = what;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char b[256];
    ERR_error_string_n(e, b, sizeof b);
    s += ": ";
    s += b;
  }
  return s;
}

}  // namespace

TlsClientContext::~TlsClientContext() {
  SSL_CTX_free(ctx_);
}

bool TlsClientContext::Init(bool h2, const std::string& ca_file, bool insecure, std::string* err) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (!ctx_) {
    *err = SslErr("SSL_CTX_new");
    return false;
  }
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  // ALPN: the wire-format list, one length byte per protocol.
  static const unsigned char kH2[] = {2, 'h', '2'};
  static const unsigned char kH1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (h2 ? SSL_CTX_set_alpn_protos(ctx_, kH2, sizeof kH2) : SSL_CTX_set_alpn_protos(ctx_, kH1, sizeof kH1)) {
    *err = SslErr("SSL_CTX_set_alpn_protos");
    return false;
  }
  if (insecure) {
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    return true;
  }
  if (ca_file.empty()) {
    *err = "--tls needs --ca-file F (the CA to trust) or --insecure-tls";
    return false;
  }
  if (SSL_CTX_load_verify_locations(ctx_, ca_file.c_str(), nullptr) != 1) {
    *err = SslErr(("--ca-file " + ca_file).c_str());
    return false;
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  verify_ = true;
  return true;
}

TlsPipe::~TlsPipe() {
  SSL_free(ssl_);
}

bool TlsPipe::Start(const TlsClientContext& ctx, std::string* out, std::string* err) {
  ssl_ = SSL_new(ctx.get());
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  if (!ssl_ || !rbio_ || !wbio_) {
    BIO_free(rbio_);
    BIO_free(wbio_);
    *err = SslErr("SSL_new");
    return false;
  }
  BIO_set_mem_eof_return(rbio_, -1);  // an empty read BIO means "want more", not EOF
  SSL_set_bio(ssl_, rbio_, wbio_);
  SSL_set_connect_state(ssl_);
  SSL_set_tlsext_host_name(ssl_, "localhost");
  if (ctx.verify()) SSL_set1_host(ssl_, "localhost");
  int r = SSL_do_handshake(ssl_);
  if (r != 1 && SSL_get_error(ssl_, r) != SSL_ERROR_WANT_READ) {
    *err = SslErr("TLS handshake");
    return false;
  }
  return Flush(out);
}

bool TlsPipe::Flush(std::string* out) {
  size_t n = BIO_ctrl_pending(wbio_);
  if (n == 0) return true;
  size_t at = out->size();
  out->resize(at + n);
  int got = BIO_read(wbio_, out->data() + at, int(n));
  out->resize(at + size_t(got > 0 ? got : 0));
  return true;
}

bool TlsPipe::WritePending(std::string* out, std::string* err) {
  if (pending_.empty()) return true;
  std::string p;
  p.swap(pending_);
  return Write(p.data(), p.size(), out, err);
}

bool TlsPipe::Write(const char* p, size_t n, std::string* out, std::string* err) {
  if (!done_) {
    pending_.append(p, n);
    return true;
  }
  while (n > 0) {
    size_t w = 0;
    if (SSL_write_ex(ssl_, p, n, &w) != 1) {
      *err = SslErr("SSL_write");
      return false;
    }
    p += w;
    n -= w;
  }
  return Flush(out);
}

bool TlsPipe::Feed(const char* p, size_t n, std::string* plain, std::string* out, bool* eof, std::string* err) {
  *eof = false;
  if (n > 0 && BIO_write(rbio_, p, int(n)) != int(n)) {
    *err = "BIO_write failed";
    return false;
  }
  if (!done_) {
    int r = SSL_do_handshake(ssl_);
    if (r == 1) {
      done_ = true;
      if (!WritePending(out, err)) return false;
    } else {
      int e = SSL_get_error(ssl_, r);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
        *err = SslErr("TLS handshake");
        if (SSL_get_verify_result(ssl_) != X509_V_OK)
          *err += std::string(" (verify: ") + X509_verify_cert_error_string(SSL_get_verify_result(ssl_)) + ")";
        Flush(out);  // the alert
        return false;
      }
      return Flush(out);
    }
  }
  for (;;) {
    size_t at = plain->size();
    plain->resize(at + 16384);
    size_t got = 0;
    int r = SSL_read_ex(ssl_, plain->data() + at, 16384, &got);
    plain->resize(at + (r == 1 ? got : 0));
    if (r == 1) continue;
    int e = SSL_get_error(ssl_, 0);
    if (e == SSL_ERROR_WANT_READ) break;
    if (e == SSL_ERROR_ZERO_RETURN) {
      *eof = true;
      break;
    }
    *err = SslErr("SSL_read");
    return false;
  }
  return Flush(out);
}

std::string TlsPipe::Alpn() const {
  const unsigned char* p = nullptr;
  unsigned n = 0;
  SSL_get0_alpn_selected(ssl_, &p, &n);
  return std::string(reinterpret_cast<const char*>(p), n);
}

}  // namespace mcpload

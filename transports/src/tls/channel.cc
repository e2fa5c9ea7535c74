#include "tls/channel.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>

namespace mcpfan::detail::tls {

namespace {

// encrypt() and close_notify() may run inside feed() (on_plain answering at once, or the handshake flushing what
// waited for it): they write through the BIO, and feed's unread input must still be there after them.
class OutputScope {
 public:
  OutputScope(CallerIo& io, std::string& out) : io_(io), saved_(io) { io_.out = &out; }
  ~OutputScope() { io_ = saved_; }
  OutputScope(const OutputScope&) = delete;
  OutputScope& operator=(const OutputScope&) = delete;

 private:
  CallerIo& io_;
  CallerIo saved_;
};

}  // namespace

Channel::Channel(SSL* ssl) : ssl_(ssl), server_(ssl && SSL_is_server(ssl) == 1) {
  if (!ssl_) {  // new_ssl() out of memory: a channel that fails every call rather than a crash
    failed_ = true;
    error_ = "no SSL object";
    return;
  }
  BIO* bio = new_caller_bio(&io_);
  if (!bio) {
    failed_ = true;
    error_ = "BIO_new: " + drain_errors();
    return;
  }
  SSL_set_bio(ssl_, bio, bio);  // one BIO both ways: SSL_set_bio takes the one reference once
}

Channel::~Channel() {
  if (!ssl_) return;
  // SSL_free on a connection that sent no close_notify marks its session not resumable, and a client's saved
  // session is that same object: an upstream closed for idleness would lose its resumption. Only a fatal error
  // should (OpenSSL has already dropped the session then).
  if (!failed_) SSL_set_shutdown(ssl_, SSL_get_shutdown(ssl_) | SSL_SENT_SHUTDOWN);
  SSL_free(ssl_);
}

Channel::Status Channel::fail(const char* what, int ret) {
  int code = SSL_get_error(ssl_, ret);
  std::string reason = drain_errors();
  if (reason.empty() && !server_ && SSL_get_verify_result(ssl_) != X509_V_OK) reason = "certificate verify failed";
  if (!server_ && SSL_get_verify_result(ssl_) != X509_V_OK)
    reason += std::string(" (") + X509_verify_cert_error_string(SSL_get_verify_result(ssl_)) + ")";
  if (reason.empty())
    reason = code == SSL_ERROR_SYSCALL ? "unexpected end of stream" : "SSL error " + std::to_string(code);
  error_ = std::string(what) + ": " + reason;
  if (server_ && !handshake_done_) {
    if (TlsCounters* c = server_counters(ssl_)) c->handshake_failures.fetch_add(1, std::memory_order_relaxed);
  }
  failed_ = true;
  pending_.clear();
  pending_.shrink_to_fit();
  return Status::Failed;
}

void Channel::on_handshake_done() {
  handshake_done_ = true;
  if (!server_) return;
  X509* peer = SSL_get0_peer_certificate(ssl_);
  client_cert_verified_ = peer && SSL_get_verify_result(ssl_) == X509_V_OK;
  if (TlsCounters* c = server_counters(ssl_)) {
    c->handshakes.fetch_add(1, std::memory_order_relaxed);
    if (SSL_session_reused(ssl_)) c->resumed.fetch_add(1, std::memory_order_relaxed);
    if (client_cert_verified_) c->client_certs_verified.fetch_add(1, std::memory_order_relaxed);
  }
}

Channel::Status Channel::handshake(std::string& to_send) {
  ERR_clear_error();
  int ret = SSL_do_handshake(ssl_);
  if (ret == 1) {
    on_handshake_done();
    if (!pending_.empty()) {
      std::string plain;
      plain.swap(pending_);
      return encrypt(plain, to_send);
    }
    return Status::Ok;
  }
  int code = SSL_get_error(ssl_, ret);
  if (code == SSL_ERROR_WANT_READ) return Status::Ok;
  return fail("handshake failed", ret);
}

Channel::Status Channel::start(std::string& to_send) {
  if (failed_) return Status::Failed;
  if (handshake_done_) return Status::Ok;
  OutputScope scope(io_, to_send);
  return handshake(to_send);
}

Channel::Status Channel::read_plain(const std::function<void(const char*, std::size_t)>& on_plain) {
  char buf[16 * 1024];  // one record's plaintext at most per SSL_read
  for (;;) {
    ERR_clear_error();
    std::size_t got = 0;
    int ret = SSL_read_ex(ssl_, buf, sizeof buf, &got);
    if (ret == 1) {
      on_plain(buf, got);
      continue;
    }
    int code = SSL_get_error(ssl_, ret);
    if (code == SSL_ERROR_WANT_READ) return Status::Ok;
    if (code == SSL_ERROR_ZERO_RETURN) {
      peer_closed_ = true;
      return Status::Ok;
    }
    return fail("read failed", ret);
  }
}

Channel::Status Channel::feed(const char* data, std::size_t len, std::string& to_send,
                              const std::function<void(const char*, std::size_t)>& on_plain) {
  if (failed_) return Status::Failed;
  if (peer_closed_) return Status::Ok;  // nothing may follow close_notify
  OutputScope scope(io_, to_send);
  io_.in = data;
  io_.in_len = len;
  Status st = handshake_done_ ? Status::Ok : handshake(to_send);
  if (st == Status::Ok && handshake_done_) st = read_plain(on_plain);
  return st;
}

Channel::Status Channel::write_plain(const char* data, std::size_t len) {
  ERR_clear_error();
  std::size_t written = 0;
  int ret = SSL_write_ex(ssl_, data, len, &written);
  // The BIO takes everything, so a write is whole or fatal.
  return ret == 1 ? Status::Ok : fail("write failed", ret);
}

Channel::Status Channel::encrypt(const iovec* v, std::size_t n, std::string& to_send) {
  if (failed_) return Status::Failed;
  if (!handshake_done_) {
    for (std::size_t i = 0; i < n; ++i) {
      if (pending_.size() + v[i].iov_len > kMaxBufferedPlain) {
        error_ = "over " + std::to_string(kMaxBufferedPlain / 1024) + " KiB of plaintext before the handshake";
        failed_ = true;
        return Status::Failed;
      }
      pending_.append(static_cast<const char*>(v[i].iov_base), v[i].iov_len);
    }
    return Status::Ok;
  }
  // SSL_write makes at least one record per call: small pieces are gathered into whole records first, and a
  // piece of whole records' worth goes straight through.
  constexpr std::size_t kRecord = 16 * 1024;
  char stage[kRecord];
  std::size_t staged = 0;
  OutputScope scope(io_, to_send);
  Status st = Status::Ok;
  for (std::size_t i = 0; i < n && st == Status::Ok; ++i) {
    const char* p = static_cast<const char*>(v[i].iov_base);
    std::size_t left = v[i].iov_len;
    while (left > 0 && st == Status::Ok) {
      if (staged == 0 && left >= kRecord) {
        std::size_t whole = left - left % kRecord;
        st = write_plain(p, whole);
        p += whole;
        left -= whole;
        continue;
      }
      std::size_t take = std::min(left, kRecord - staged);
      std::copy_n(p, take, stage + staged);
      staged += take;
      p += take;
      left -= take;
      if (staged == kRecord) {
        st = write_plain(stage, staged);
        staged = 0;
      }
    }
  }
  if (st == Status::Ok && staged > 0) st = write_plain(stage, staged);
  return st;
}

Channel::Status Channel::encrypt(std::string_view plain, std::string& to_send) {
  iovec v{const_cast<char*>(plain.data()), plain.size()};
  return encrypt(&v, 1, to_send);
}

void Channel::close_notify(std::string& to_send) {
  if (failed_ || close_sent_ || !handshake_done_) return;
  close_sent_ = true;
  OutputScope scope(io_, to_send);
  ERR_clear_error();
  SSL_shutdown(ssl_);
  drain_errors();
}

std::string_view Channel::alpn() const {
  const unsigned char* p = nullptr;
  unsigned int n = 0;
  if (ssl_) SSL_get0_alpn_selected(ssl_, &p, &n);
  return p ? std::string_view(reinterpret_cast<const char*>(p), n) : std::string_view();
}

bool Channel::resumed() const {
  return ssl_ && SSL_session_reused(ssl_) == 1;
}

std::string Channel::client_cert_subject() const {
  if (!client_cert_verified_) return {};
  X509_NAME* name = X509_get_subject_name(SSL_get0_peer_certificate(ssl_));
  std::string out;
  int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i >= 0) {
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
    if (n >= 0) out.assign(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(n));
    OPENSSL_free(utf8);
  } else if (BIO* mem = BIO_new(BIO_s_mem())) {
    X509_NAME_print_ex(mem, name, 0, XN_FLAG_RFC2253);
    char* p = nullptr;
    long n = BIO_get_mem_data(mem, &p);
    if (n > 0) out.assign(p, static_cast<std::size_t>(n));
    BIO_free(mem);
  }
  ERR_clear_error();
  return out;
}

}  // namespace mcpfan::detail::tls

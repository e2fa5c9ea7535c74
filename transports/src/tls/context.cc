#include "tls/context.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "tls/base_ctx.h"
#include "tls/ticket_keys.h"

namespace mcpfan::detail::tls {

struct ServerShared {
  explicit ServerShared(const ServerSettings& s)
      : settings(s), tickets(s.ticket_rotate_s, counters.ticket_key_rotations) {}
  ServerSettings settings;
  TlsCounters counters;
  TicketKeys tickets;
};

std::string drain_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    if (!out.empty()) out += "; ";
    if (const char* reason = ERR_reason_error_string(e)) {
      out += reason;
    } else {
      char buf[256];
      ERR_error_string_n(e, buf, sizeof buf);
      out += buf;
    }
  }
  return out;
}

// TLS 1.2 ciphers (1.3's defaults are all fine): forward-secret AEADs only, as Mozilla's "intermediate".
constexpr const char* kCiphers12 =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

bool set_error(std::string& err, const std::string& what) {
  std::string reason = drain_errors();
  err = reason.empty() ? what : what + ": " + reason;
  return false;
}

SSL_CTX* new_base_ctx(const SSL_METHOD* method, std::string& err) {
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (!ctx) {
    set_error(err, "SSL_CTX_new");
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // Idle connections drop their read and write buffers (about 34 KiB together otherwise).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(ctx, kCiphers12) != 1) {
    set_error(err, "cipher list");
    SSL_CTX_free(ctx);
    return nullptr;
  }
  return ctx;
}

namespace {

// The SSL_CTX's own reference to its ServerShared, freed with the SSL_CTX (after its last SSL).
void free_shared(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<std::shared_ptr<ServerShared>*>(ptr);
}

int shared_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, free_shared);
  return index;
}

ServerShared* shared_of(const SSL* ssl) {
  auto* p = static_cast<std::shared_ptr<ServerShared>*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), shared_index()));
  return p ? p->get() : nullptr;
}

int ticket_cb(SSL* ssl, unsigned char key_name[16], unsigned char iv[EVP_MAX_IV_LENGTH], EVP_CIPHER_CTX* cipher,
              EVP_MAC_CTX* mac, int enc) {
  ServerShared* shared = shared_of(ssl);
  return shared ? shared->tickets.crypt(key_name, iv, cipher, mac, enc) : -1;
}

// Server preference: h2 when both sides have it. A client offering neither protocol gets no ALPN at all (it is
// then spoken to as HTTP/1.1) rather than a no_application_protocol alert.
int alpn_cb(SSL* ssl, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
            void*) {
  ServerShared* shared = shared_of(ssl);
  auto offered = [&](std::string_view proto) {
    for (unsigned int i = 0; i < inlen;) {
      unsigned int n = in[i];
      if (i + 1 + n > inlen) return false;
      if (std::string_view(reinterpret_cast<const char*>(in + i + 1), n) == proto) {
        *out = in + i + 1;
        *outlen = static_cast<unsigned char>(n);
        return true;
      }
      i += 1 + n;
    }
    return false;
  };
  if (shared && shared->settings.offer_h2 && offered("h2")) return SSL_TLSEXT_ERR_OK;
  if (offered("http/1.1")) return SSL_TLSEXT_ERR_OK;
  return SSL_TLSEXT_ERR_NOACK;
}

// A client certificate is requested, not required: one that fails verification does not fail the handshake, and
// the connection is then simply not authenticated by it (SSL_get_verify_result keeps the failure).
int accept_any_client_cert(int, X509_STORE_CTX*) {
  return 1;
}

SSL_CTX* build_server_ctx(const std::shared_ptr<ServerShared>& shared, std::string& err) {
  ERR_clear_error();
  const ServerSettings& s = shared->settings;
  SSL_CTX* ctx = new_base_ctx(TLS_server_method(), err);
  if (!ctx) return nullptr;
  bool ok = false;
  if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1) {
    set_error(err, "certificate " + s.cert_file);
  } else if (SSL_CTX_use_PrivateKey_file(ctx, s.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    set_error(err, "private key " + s.key_file);
  } else if (SSL_CTX_check_private_key(ctx) != 1) {
    set_error(err, "private key " + s.key_file + " does not match certificate " + s.cert_file);
  } else if (!s.client_ca_file.empty() && SSL_CTX_load_verify_locations(ctx, s.client_ca_file.c_str(), nullptr) != 1) {
    set_error(err, "client CA " + s.client_ca_file);
  } else {
    ok = true;
  }
  if (ok && !s.client_ca_file.empty()) {
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(s.client_ca_file.c_str());
    if (!names) {
      ok = set_error(err, "client CA " + s.client_ca_file);
    } else {
      SSL_CTX_set_client_CA_list(ctx, names);
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_client_cert);
    }
  }
  if (!ok) {
    SSL_CTX_free(ctx);
    return nullptr;
  }
  // Tickets only: no server-side session cache, so nothing grows per client.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  // OpenSSL refuses to resume (a fatal handshake error) on a server that verifies peers without a session context.
  // Tickets are already this context's own (its keys), so one fixed name is enough.
  static constexpr unsigned char kSessionContext[] = "mcpfan tls";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  // A ticket lives one rotation period (TicketKeys keeps the previous key that long), and at most the 7 days
  // RFC 8446 allows.
  SSL_CTX_set_timeout(ctx, static_cast<long>(std::clamp<std::uint64_t>(s.ticket_rotate_s, 1, 7 * 24 * 3600)));
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticket_cb);
  SSL_CTX_set_alpn_select_cb(ctx, alpn_cb, nullptr);
  SSL_CTX_set_ex_data(ctx, shared_index(), new std::shared_ptr<ServerShared>(shared));
  ERR_clear_error();  // what the PEM readers may leave behind on success
  return ctx;
}

}  // namespace

TlsCounters* server_counters(const SSL* ssl) {
  ServerShared* shared = shared_of(ssl);
  return shared ? &shared->counters : nullptr;
}

ServerContext::ServerContext(std::shared_ptr<ServerShared> shared, SSL_CTX* ctx)
    : shared_(std::move(shared)), ctx_(ctx) {}

ServerContext::~ServerContext() {
  SSL_CTX_free(ctx_);
}

std::shared_ptr<ServerContext> ServerContext::load(const ServerSettings& settings, std::string& err) {
  auto shared = std::make_shared<ServerShared>(settings);
  SSL_CTX* ctx = build_server_ctx(shared, err);
  if (!ctx) return nullptr;
  return std::make_shared<ServerContext>(std::move(shared), ctx);
}

bool ServerContext::reload(std::string& err) {
  SSL_CTX* next = build_server_ctx(shared_, err);
  if (!next) {
    shared_->counters.reload_failures.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  {
    std::lock_guard lock(mu_);
    std::swap(ctx_, next);
  }
  SSL_CTX_free(next);  // the old one: its open connections hold their own references
  shared_->counters.reloads.fetch_add(1, std::memory_order_relaxed);
  return true;
}

bool ServerContext::reload(const std::string& cert_file, const std::string& key_file, std::string& err) {
  // Only reloads (one at a time, the program's thread) and load() read the file names: the
  // callbacks on the workers read other settings.
  ServerSettings& s = shared_->settings;
  std::string old_cert = s.cert_file, old_key = s.key_file;
  s.cert_file = cert_file;
  s.key_file = key_file;
  if (reload(err)) return true;
  s.cert_file = std::move(old_cert);
  s.key_file = std::move(old_key);
  return false;
}

SSL* ServerContext::new_ssl() {
  // Every worker's accepts come here: the lock covers only a reference count, SSL_new (several allocations) runs
  // outside it on a context that a reload can no longer free under it.
  SSL_CTX* ctx;
  {
    std::lock_guard lock(mu_);
    ctx = ctx_;
    SSL_CTX_up_ref(ctx);
  }
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx);
  SSL_CTX_free(ctx);  // the SSL holds its own reference
  if (!ssl) {
    drain_errors();
    return nullptr;
  }
  SSL_set_accept_state(ssl);  // SSL_new leaves the role unset until the first SSL_accept
  return ssl;
}

TlsCounters& ServerContext::counters() {
  return shared_->counters;
}
const ServerSettings& ServerContext::settings() const {
  return shared_->settings;
}
void ServerContext::rotate_ticket_key_for_test() {
  shared_->tickets.rotate_now();
}

}  // namespace mcpfan::detail::tls

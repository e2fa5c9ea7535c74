#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tls/base_ctx.h"
#include "tls/context.h"

namespace mcpfan::detail::tls {

ClientContext::~ClientContext() {
  SSL_CTX_free(ctx_);
}

std::shared_ptr<ClientContext> ClientContext::load(const ClientSettings& settings, std::string& err) {
  ERR_clear_error();
  SSL_CTX* ctx = new_base_ctx(TLS_client_method(), err);
  if (!ctx) return nullptr;
  int ok = settings.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                    : SSL_CTX_load_verify_locations(ctx, settings.ca_file.c_str(), nullptr);
  if (ok != 1) {
    set_error(err, settings.ca_file.empty() ? std::string("system CA roots") : "CA " + settings.ca_file);
    SSL_CTX_free(ctx);
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return std::make_shared<ClientContext>(ctx, settings.offer_h2);
}

SSL* ClientContext::new_ssl(const std::string& host) {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) {
    drain_errors();
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  std::string bare =
      host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2) : host;
  unsigned char addr[16];
  bool ip = inet_pton(AF_INET, bare.c_str(), addr) == 1 || inet_pton(AF_INET6, bare.c_str(), addr) == 1;
  bool ok;
  if (ip) {
    // RFC 6066: no SNI for an address; the certificate must carry it as an IP SAN.
    ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), bare.c_str()) == 1;
  } else {
    SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = SSL_set_tlsext_host_name(ssl, bare.c_str()) == 1 && SSL_set1_host(ssl, bare.c_str()) == 1;
  }
  static constexpr unsigned char kH2[] = "\x02h2\x08http/1.1";
  static constexpr unsigned char kHttp11[] = "\x08http/1.1";
  // SSL_set_alpn_protos returns 0 on success.
  if (ok)
    ok = offer_h2_ ? SSL_set_alpn_protos(ssl, kH2, sizeof kH2 - 1) == 0
                   : SSL_set_alpn_protos(ssl, kHttp11, sizeof kHttp11 - 1) == 0;
  if (!ok) {
    drain_errors();
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

}  // namespace mcpfan::detail::tls

#include "nats/settings.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "nats/subjects.h"

namespace mcpfan::detail::nats {

namespace {

// A file start() (or nats.c at connect) will read: it must open now, or the start would fail later.
std::optional<std::string> read_whole(const std::string& path, const char* flag, std::string& out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::string(flag) + " " + path + ": " + std::strerror(errno);
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && out.size() < (1u << 20)) out.append(buf, n);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return std::string(flag) + " " + path + ": read error";
  if (out.empty()) return std::string(flag) + " " + path + ": empty";
  return std::nullopt;
}

// The CA bundle nats.c loads at start: at least one PEM certificate, every block parseable.
std::optional<std::string> ca_bundle_error(const std::string& path) {
  std::string pem;
  if (auto e = read_whole(path, "--nats-tls-ca", pem)) return e;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) return "--nats-tls-ca " + path + ": out of memory";
  int certs = 0;
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_free(x);
    ++certs;
  }
  BIO_free(bio);
  if (certs == 0) return "--nats-tls-ca " + path + ": no PEM certificate (-----BEGIN CERTIFICATE-----) in it";
  return std::nullopt;
}

// The URL list of --nats: what nats.c would only refuse at its first connect, said now.
std::optional<std::string> nats_urls_error(const std::string& servers) {
  int urls = 0;
  for (std::size_t at = 0; at <= servers.size();) {
    std::size_t comma = servers.find(',', at);
    if (comma == std::string::npos) comma = servers.size();
    std::string_view url(servers.data() + at, comma - at);
    at = comma + 1;
    if (url.empty()) continue;
    ++urls;
    if (url.find_first_of(" \t\r\n") != std::string_view::npos) {
      return "--nats: \"" + std::string(url) + "\" contains whitespace";
    }
    std::string_view rest = url;
    if (auto scheme = url.find("://"); scheme != std::string_view::npos) {
      std::string_view s = url.substr(0, scheme);
      if (s != "nats" && s != "tls") {
        return "--nats: \"" + std::string(url) + "\": the scheme must be nats:// or tls://";
      }
      rest = url.substr(scheme + 3);
    }
    if (auto userinfo = rest.rfind('@'); userinfo != std::string_view::npos) rest = rest.substr(userinfo + 1);
    if (auto slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
    std::string_view port;
    if (auto close = rest.rfind(']'); !rest.empty() && rest.front() == '[') {
      if (close == std::string_view::npos) return "--nats: \"" + std::string(url) + "\": unterminated [IPv6] host";
      if (close + 1 < rest.size()) port = rest[close + 1] == ':' ? rest.substr(close + 2) : rest.substr(close + 1, 0);
      rest = rest.substr(1, close - 1);
    } else if (auto colon = rest.rfind(':'); colon != std::string_view::npos) {
      port = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    }
    if (rest.empty()) return "--nats: \"" + std::string(url) + "\": no host";
    if (port.data() != nullptr) {
      unsigned long p = 0;
      bool digits = !port.empty() && port.size() <= 5;
      for (char ch : port) {
        digits = digits && ch >= '0' && ch <= '9';
        if (digits) p = p * 10 + static_cast<unsigned long>(ch - '0');
      }
      if (!digits || p == 0 || p > 65535) return "--nats: \"" + std::string(url) + "\": the port must be 1..65535";
    }
  }
  if (urls == 0) return std::string("--nats: no server URL");
  return std::nullopt;
}

}  // namespace

std::optional<std::string> settings_error(const NatsConfig& c) {
  if (auto e = prefix_error(c.prefix)) return "--nats-prefix: " + *e;
  if (auto e = nats_urls_error(c.urls)) return e;
  // Below it heartbeats would cost every node more than they tell (each node hears every other's).
  if (c.heartbeat_ms != 0 && c.heartbeat_ms < 50) {
    return "--nats-heartbeat-ms: " + std::to_string(c.heartbeat_ms) + " is below 50 ms; use 0 (off) or at least 50";
  }
  std::string creds;
  if (!c.creds_file.empty()) {
    if (auto e = read_whole(c.creds_file, "--nats-creds", creds)) return e;
  }
  if (!c.tls_ca_file.empty()) {
    if (auto e = ca_bundle_error(c.tls_ca_file)) return e;
  }
  return std::nullopt;
}

}  // namespace mcpfan::detail::nats

#include "server/preflight.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <uv.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "nats/subjects.h"
#include "server/config_check.h"
#include "server/listen_socket.h"

namespace mcpfan::detail {

namespace {

Error invalid(std::string message) { return Error{rpc_code::kInvalidParams, std::move(message)}; }

// An IPv4 or IPv6 literal and a port.
bool parse_ip(const std::string& host, std::uint16_t port, sockaddr_storage& addr) {
  return uv_ip4_addr(host.c_str(), port, reinterpret_cast<sockaddr_in*>(&addr)) == 0 ||
         uv_ip6_addr(host.c_str(), port, reinterpret_cast<sockaddr_in6*>(&addr)) == 0;
}

// ServerConfig::listen_fd: a listening TCP stream socket (refused otherwise); `addr` gets its address.
bool host_listener_address(int fd, sockaddr_storage& addr, std::string& err) {
  int type = 0, accepting = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
    err = std::string("not a socket: ") + std::strerror(errno);
    return false;
  }
  len = sizeof accepting;
  if (type != SOCK_STREAM || ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) {
    err = "not a listening stream socket (bind() and listen() it first)";
    return false;
  }
  sockaddr_storage bound{};
  len = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0 ||
      (bound.ss_family != AF_INET && bound.ss_family != AF_INET6)) {
    err = "not a TCP socket (IPv4 or IPv6)";
    return false;
  }
  addr = bound;
  return true;
}

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
    if (url.find_first_of(" \t\r\n") != std::string_view::npos) return "--nats: \"" + std::string(url) + "\" contains whitespace";
    std::string_view rest = url;
    if (auto scheme = url.find("://"); scheme != std::string_view::npos) {
      std::string_view s = url.substr(0, scheme);
      if (s != "nats" && s != "tls") return "--nats: \"" + std::string(url) + "\": the scheme must be nats:// or tls://";
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

std::optional<std::string> nats_error(const ServerConfig& c) {
  if (c.nats.empty()) return std::nullopt;
  if (auto e = nats::prefix_error(c.nats_prefix)) return "--nats-prefix: " + *e;
  if (auto e = nats_urls_error(c.nats)) return e;
  std::string creds;
  if (!c.nats_creds_file.empty()) {
    if (auto e = read_whole(c.nats_creds_file, "--nats-creds", creds)) return e;
  }
  if (!c.nats_tls_ca_file.empty()) {
    if (auto e = ca_bundle_error(c.nats_tls_ca_file)) return e;
  }
  return std::nullopt;
}

// What bind_unix_listener() would refuse for reasons other than the socket itself.
std::optional<std::string> unix_path_error(const std::string& path) {
  if (path.empty()) return std::nullopt;
  const std::string what = "--unix " + path + ": ";
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return what + "path longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes";
  }
  std::string dir = path.substr(0, path.rfind('/') == std::string::npos ? 0 : path.rfind('/'));
  if (path.front() == '/' && dir.empty()) dir = "/";
  if (dir.empty()) dir = ".";
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) return what + "directory " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return what + dir + " is not a directory";
  if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) return what + "exists and is not a socket";
  return std::nullopt;
}

}  // namespace

bool is_loopback(const sockaddr_storage& addr) noexcept {
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    return (ntohl(a.sin_addr.s_addr) >> 24) == 127;
  }
  if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

std::optional<std::string> open_listener_error(const ServerConfig& c, const Preflight& at) {
  if (c.insecure) return std::nullopt;
  const bool clients = !c.jwt_secret_file.empty() || !c.jwt_public_key_file.empty() || static_cast<bool>(c.authenticate_client);
  const bool publishers = !c.publish_keys_file.empty();
  const bool split = !c.publish_host.empty();
  static constexpr const char* kClientKeys = "--jwt-secret-file or --jwt-public-key-file";
  static constexpr const char* kAdvice = "; use a loopback address, configure it, or pass --insecure (ServerConfig::insecure)";
  auto refuse = [&](const std::string& listener, const std::string& missing, const std::string& why) {
    return "refusing " + listener + " without authentication (" + missing + ")" + why + kAdvice;
  };
  const std::string listener = c.listen_fd >= 0 ? "ServerConfig::listen_fd on " + address_text(at.addr) : "--listen on " + c.host;
  if (!is_loopback(at.addr)) {
    if (split && !clients) {
      return refuse(listener, kClientKeys, ": any client could subscribe");
    }
    if (!split && !clients && !publishers) {
      return refuse(listener, std::string(kClientKeys) + ", and --publish-keys-file",
                    ": any client could subscribe and anyone could publish to /v1/publish");
    }
    if (!split && !publishers) {
      return refuse(listener, "--publish-keys-file",
                    ": client tokens are configured, but /v1/publish on this listener would take a publish from anyone "
                    "(or move publishing to an internal --publish-listen)");
    }
    if (!split && !clients) {
      return refuse(listener, kClientKeys, ": publisher keys are configured, but any client could subscribe");
    }
  }
  if (split && !publishers && !is_loopback(at.publish_addr)) {
    return refuse("--publish-listen on " + c.publish_host, "--publish-keys-file", ": anyone could publish to /v1/publish");
  }
  return std::nullopt;
}

Result<Preflight> preflight(const ServerConfig& c) {
  if (auto checked = check_config(c); !checked) return checked.error();
  Preflight out;
  if (!parse_ip(c.host, c.port, out.addr)) {
    return invalid("cannot parse listen address " + c.host + " (use an IPv4 or IPv6 literal)");
  }
  if (c.listen_fd >= 0) {  // the host's own listening socket: its address is what clients reach
    std::string err;
    if (!host_listener_address(c.listen_fd, out.addr, err)) return invalid("ServerConfig::listen_fd: " + err);
  }
  if (!c.publish_host.empty() && !parse_ip(c.publish_host, c.publish_port, out.publish_addr)) {
    return invalid("cannot parse publish listen address " + c.publish_host + " (use an IPv4 or IPv6 literal)");
  }
  // start() checks this again once ports are bound (port 0 here is the kernel's later choice).
  if (!c.publish_host.empty() && out.publish_addr.ss_family == out.addr.ss_family && c.publish_port != 0 &&
      (c.listen_fd >= 0 || c.port != 0) && addresses_overlap(out.publish_addr, out.addr)) {
    return invalid("--publish-listen " + address_text(out.publish_addr) +
                   ": the address of --listen (the operator paths need a listener of their own)");
  }
  if (auto refused = open_listener_error(c, out)) return invalid(*refused);
  if (auto e = unix_path_error(c.unix_path)) return invalid(*e);
  if (!c.upstream.empty()) {
    auto target = proxy::parse_upstream_url(c.upstream);
    if (!target) return target.error();  // it names --upstream and the URL
    out.upstream = std::move(target.value());
  }
  if (auto e = nats_error(c)) return invalid(*e);
  return out;
}

}  // namespace mcpfan::detail

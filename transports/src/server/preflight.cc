#include "server/preflight.h"

#include <sys/stat.h>
#include <sys/un.h>
#include <uv.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "backplane/backplane.h"
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

// ServerConfig::listen.listen_fd: a listening TCP stream socket (refused otherwise); `addr` gets its address.
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
  if (c.listen.insecure) return std::nullopt;
  const bool clients = !c.auth.jwt_secret_file.empty() || !c.auth.jwt_public_key_file.empty() ||
                       static_cast<bool>(c.auth.authenticate_client) || !c.oauth.issuer.empty();
  const bool publishers = !c.auth.publish_keys_file.empty();
  const bool split = !c.listen.publish_host.empty();
  static constexpr const char* kClientKeys = "--jwt-secret-file, --jwt-public-key-file or --oauth-issuer";
  static constexpr const char* kAdvice =
      "; use a loopback address, configure it, or pass --insecure (ServerConfig::listen.insecure)";
  auto refuse = [&](const std::string& listener, const std::string& missing, const std::string& why) {
    return "refusing " + listener + " without authentication (" + missing + ")" + why + kAdvice;
  };
  const std::string listener = c.listen.listen_fd >= 0 ? "ServerConfig::listen.listen_fd on " + address_text(at.addr)
                                                       : "--listen on " + c.listen.host;
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
    return refuse("--publish-listen on " + c.listen.publish_host, "--publish-keys-file",
                  ": anyone could publish to /v1/publish");
  }
  return std::nullopt;
}

namespace {

// The listeners' TLS contexts, loaded (so --check-config reads the files too).
Result<std::pair<std::shared_ptr<tls::ServerContext>, std::shared_ptr<tls::ServerContext>>> load_tls(
    const ServerConfig& c) {
  const TlsConfig& t = c.tls;
  if (t.cert_file.empty() != t.key_file.empty()) return invalid("--tls-cert and --tls-key go together");
  if (t.publish_cert_file.empty() != t.publish_key_file.empty()) {
    return invalid("--publish-tls-cert and --publish-tls-key go together");
  }
  if (!t.publish_cert_file.empty() && c.listen.publish_host.empty()) {
    return invalid("--publish-tls-cert is for --publish-listen, which is not set");
  }
  if (!t.client_ca_file.empty() && t.cert_file.empty() && t.publish_cert_file.empty()) {
    return invalid("--tls-client-ca needs a TLS listener (--tls-cert or --publish-tls-cert)");
  }
  auto load = [&](const std::string& cert, const std::string& key, std::string_view flag,
                  std::shared_ptr<tls::ServerContext>& into) -> std::optional<Error> {
    if (cert.empty()) return std::nullopt;
    tls::ServerSettings s;
    s.cert_file = cert;
    s.key_file = key;
    s.client_ca_file = t.client_ca_file;
    s.offer_h2 = !c.http2.off;
    s.ticket_rotate_s = t.ticket_rotate_s;
    std::string err;
    into = tls::ServerContext::load(s, err);
    if (!into) return invalid(std::string(flag) + ": " + err);
    return std::nullopt;
  };
  std::pair<std::shared_ptr<tls::ServerContext>, std::shared_ptr<tls::ServerContext>> out;
  if (auto e = load(t.cert_file, t.key_file, "--tls-cert", out.first)) return *e;
  if (auto e = load(t.publish_cert_file, t.publish_key_file, "--publish-tls-cert", out.second)) return *e;
  return out;
}

}  // namespace

Result<Preflight> preflight(const ServerConfig& c) {
  if (auto checked = check_config(c); !checked) return checked.error();
  Preflight out;
  if (!parse_ip(c.listen.host, c.listen.port, out.addr)) {
    return invalid("cannot parse listen address " + c.listen.host + " (use an IPv4 or IPv6 literal)");
  }
  if (c.listen.listen_fd >= 0) {  // the host's own listening socket: its address is what clients reach
    std::string err;
    if (!host_listener_address(c.listen.listen_fd, out.addr, err)) {
      return invalid("ServerConfig::listen.listen_fd: " + err);
    }
  }
  if (!c.listen.publish_host.empty() && !parse_ip(c.listen.publish_host, c.listen.publish_port, out.publish_addr)) {
    return invalid("cannot parse publish listen address " + c.listen.publish_host + " (use an IPv4 or IPv6 literal)");
  }
  // start() checks this again once ports are bound (port 0 here is the kernel's later choice).
  if (!c.listen.publish_host.empty() && out.publish_addr.ss_family == out.addr.ss_family &&
      c.listen.publish_port != 0 && (c.listen.listen_fd >= 0 || c.listen.port != 0) &&
      addresses_overlap(out.publish_addr, out.addr)) {
    return invalid("--publish-listen " + address_text(out.publish_addr) +
                   ": the address of --listen (the operator paths need a listener of their own)");
  }
  if (auto refused = open_listener_error(c, out)) return invalid(*refused);
  if (auto e = unix_path_error(c.listen.unix_path)) return invalid(*e);
  if (!c.upstream.url.empty()) {
    auto target = proxy::parse_upstream_url(c.upstream.url);
    if (!target) return target.error();  // it names --upstream and the URL
    out.upstream = std::move(target.value());
    if (out.upstream->https) {
      tls::ClientSettings ts;
      ts.ca_file = c.upstream.ca_file;
      std::string err;
      out.upstream->tls = tls::ClientContext::load(ts, err);
      if (!out.upstream->tls) return invalid("--upstream-ca-file: " + err);
    }
  }
  if (!c.upstream.ca_file.empty() && (!out.upstream || !out.upstream->https)) {
    return invalid("--upstream-ca-file is for an https:// --upstream");
  }
  if (c.upstream.task_poll && !out.upstream) return invalid("--upstream-task-poll needs --upstream");
  if (auto e = backplane_config_error(c)) return invalid(*e);
  auto tls = load_tls(c);
  if (!tls) return tls.error();
  out.tls = std::move(tls.value().first);
  out.publish_tls = std::move(tls.value().second);
  return out;
}

}  // namespace mcpfan::detail

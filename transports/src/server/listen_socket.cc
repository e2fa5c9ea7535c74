#include "server/listen_socket.h"

#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mcpfan::detail {
namespace {

constexpr std::uint32_t kTcpListen = 10;  // the kernel's TCP_LISTEN state (include/net/tcp_states.h)

socklen_t length_of(const sockaddr_storage& a) noexcept {
  return a.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

std::uint16_t port_of(const sockaddr_storage& a) noexcept {
  return ntohs(a.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6&>(a).sin6_port
                                       : reinterpret_cast<const sockaddr_in&>(a).sin_port);
}

void set_port(sockaddr_storage& a, std::uint16_t port) noexcept {
  if (a.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(a).sin6_port = htons(port);
  else reinterpret_cast<sockaddr_in&>(a).sin_port = htons(port);
}

bool is_wildcard(const sockaddr_storage& a) noexcept {
  if (a.ss_family == AF_INET6) return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
  return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr == htonl(INADDR_ANY);
}

bool same_ip(const sockaddr_storage& a, const sockaddr_storage& b) noexcept {
  if (a.ss_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                       &reinterpret_cast<const sockaddr_in6&>(b).sin6_addr, sizeof(in6_addr)) == 0;
  }
  return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr ==
         reinterpret_cast<const sockaddr_in&>(b).sin_addr.s_addr;
}

// A socket bound to `addr`, with SO_REUSEADDR (TIME_WAIT connections of an earlier run do not
// block the bind) and, for the members of a group, SO_REUSEPORT. -1 with errno on failure.
int bound_socket(const sockaddr_storage& addr, bool reuseport) {
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), length_of(addr)) != 0) {
    int err = errno;
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

Error in_use(std::string_view what, const sockaddr_storage& addr, bool share) {
  return Error{rpc_code::kInternalError,
               std::string(what) + " " + address_text(addr) + ": address in use " +
                   (share ? "(a process serves it without SO_REUSEPORT, or as another user: it cannot be shared)"
                          : "(another process serves it; --reuse-port shares it on purpose)")};
}

Error cannot_bind(std::string_view what, const sockaddr_storage& addr, int err) {
  return Error{rpc_code::kInternalError,
               std::string(what) + " " + address_text(addr) + ": cannot bind: " + std::strerror(err)};
}

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string address_text(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = "?";
  const bool v6 = addr.ss_family == AF_INET6;
  if (v6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, host, sizeof host);
  } else {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, host, sizeof host);
  }
  // Appended piece by piece: g++ 12 at -O3 takes `"[" + std::string(host)` for an overlapping
  // memcpy (a false -Wrestrict, fatal under -Werror in the package build).
  std::string out;
  out.reserve(sizeof host + 8);
  if (v6) out += '[';
  out += host;
  if (v6) out += ']';
  out += ':';
  out += std::to_string(port_of(addr));
  return out;
}

bool addresses_overlap(const sockaddr_storage& a, const sockaddr_storage& b) noexcept {
  if (a.ss_family != b.ss_family || (a.ss_family != AF_INET && a.ss_family != AF_INET6)) return false;
  return port_of(a) == port_of(b) && (same_ip(a, b) || is_wildcard(a) || is_wildcard(b));
}

Result<bool> foreign_listener(const sockaddr_storage& addr, const std::vector<int>& own) {
  std::vector<ino_t> ours;
  for (int fd : own) {
    struct stat st{};
    if (::fstat(fd, &st) == 0) ours.push_back(st.st_ino);
  }
  int nl = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (nl < 0) return Error{rpc_code::kInternalError, std::string("sock_diag: ") + std::strerror(errno)};
  FdCloser closer{nl};
  timeval bound{1, 0};  // the kernel answers a dump at once; this only bounds a broken one
  ::setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } ask{};
  ask.header.nlmsg_len = sizeof ask;
  ask.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  ask.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  ask.header.nlmsg_seq = 1;
  ask.request.sdiag_family = static_cast<std::uint8_t>(addr.ss_family);
  ask.request.sdiag_protocol = IPPROTO_TCP;
  ask.request.idiag_states = 1u << kTcpListen;  // the kernel filters by state; the address is compared here
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(nl, &ask, sizeof ask, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0) {
    return Error{rpc_code::kInternalError, std::string("sock_diag: ") + std::strerror(errno)};
  }
  constexpr std::size_t kHeader = NLMSG_ALIGN(sizeof(nlmsghdr));
  std::vector<char> buf(32 * 1024);  // malloc's alignment suits nlmsghdr
  bool found = false;
  for (;;) {
    ssize_t got = ::recv(nl, buf.data(), buf.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return Error{rpc_code::kInternalError,
                   std::string("sock_diag: ") + (got < 0 ? std::strerror(errno) : "no answer")};
    std::size_t left = static_cast<std::size_t>(got);
    const char* at = buf.data();
    while (left >= kHeader) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(at);
      if (h->nlmsg_len < kHeader || h->nlmsg_len > left)
        return Error{rpc_code::kInternalError, "sock_diag: a malformed answer"};
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) {
        int err = h->nlmsg_len >= kHeader + sizeof(nlmsgerr) ? -reinterpret_cast<const nlmsgerr*>(at + kHeader)->error
                                                             : EPROTO;
        return Error{rpc_code::kInternalError, std::string("sock_diag: ") + std::strerror(err)};
      }
      if (h->nlmsg_len >= kHeader + sizeof(inet_diag_msg)) {
        const auto* m = reinterpret_cast<const inet_diag_msg*>(at + kHeader);
        sockaddr_storage theirs{};
        theirs.ss_family = m->idiag_family;
        if (m->idiag_family == AF_INET6) {
          std::memcpy(&reinterpret_cast<sockaddr_in6&>(theirs).sin6_addr, m->id.idiag_src, sizeof(in6_addr));
          reinterpret_cast<sockaddr_in6&>(theirs).sin6_port = m->id.idiag_sport;
        } else {
          reinterpret_cast<sockaddr_in&>(theirs).sin_addr.s_addr = m->id.idiag_src[0];
          reinterpret_cast<sockaddr_in&>(theirs).sin_port = m->id.idiag_sport;
        }
        bool mine = std::find(ours.begin(), ours.end(), static_cast<ino_t>(m->idiag_inode)) != ours.end();
        if (!mine && addresses_overlap(addr, theirs)) found = true;
      }
      std::size_t step = std::min<std::size_t>(NLMSG_ALIGN(h->nlmsg_len), left);
      at += step;
      left -= step;
    }
  }
}

Status bind_listener(sockaddr_storage& addr, unsigned n, bool share, std::string_view what, std::vector<int>& fds) {
  fds.clear();
  auto fail = [&fds](Error e) -> Status {
    for (int f : fds) ::close(f);
    fds.clear();
    return e;
  };
  // 1. The probe (listen_socket.h). Port 0 needs none: the kernel's choice of a port never
  //    joins an existing group (inet_csk_find_open_port() ignores SO_REUSEPORT).
  if (!share && port_of(addr) != 0) {
    int probe = bound_socket(addr, /*reuseport=*/false);
    if (probe < 0) return errno == EADDRINUSE ? in_use(what, addr, share) : cannot_bind(what, addr, errno);
    ::close(probe);
  }
  for (unsigned i = 0; i < n; ++i) {
    int fd = bound_socket(addr, /*reuseport=*/true);
    // listen() here, not in the worker thread: once start() returns (and the port is
    // announced) connections must queue, not be refused.
    if (fd < 0 || ::listen(fd, SOMAXCONN) != 0) {
      int err = errno;
      if (fd >= 0) ::close(fd);
      return fail(err == EADDRINUSE ? in_use(what, addr, share) : cannot_bind(what, addr, err));
    }
    if (i == 0) {  // an ephemeral port is chosen by the first bind; the rest share it
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      set_port(addr, port_of(bound));
    }
    fds.push_back(fd);
  }
  // 2. Nobody joined between the probe and our listen() (listen_socket.h). Unanswerable
  //    (no sock_diag): skipped, the probe stands alone.
  if (!share) {
    if (auto foreign = foreign_listener(addr, fds); foreign.ok() && foreign.value())
      return fail(in_use(what, addr, share));
  }
  return {};
}

int bind_unix_listener(const std::string& path, std::string& err) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    err = "path longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes";
    return -1;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      err = "exists and is not a socket";
      return -1;
    }
    // A live listener accepts the connection (into its backlog, at once); a stale file is refused.
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    int connect_errno = errno;
    if (probe >= 0) ::close(probe);
    if (live || connect_errno == EAGAIN) {  // EAGAIN: a live listener with a full backlog
      err = "address in use (another process serves it)";
      return -1;
    }
    ::unlink(path.c_str());
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, SOMAXCONN) != 0) {
    err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace mcpfan::detail

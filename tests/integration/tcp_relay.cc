#include "tcp_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace itest {

namespace {

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Writes all of `n` bytes (blocking sockets: the peer is a nats-server on loopback that reads).
bool write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

TcpRelay::TcpRelay(int target_port) : target_(target_port) {
  listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener_ < 0 || ::pipe2(wake_, O_CLOEXEC) != 0) return;
  int one = 1;
  (void)::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 16) != 0 ||
      ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    return;
  }
  port_ = ntohs(a.sin_port);
  thread_ = std::thread([this] { Run(); });
}

TcpRelay::~TcpRelay() {
  if (thread_.joinable()) {
    char b = 1;
    (void)!::write(wake_[1], &b, 1);
    thread_.join();
  }
  for (int fd : {listener_, wake_[0], wake_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void TcpRelay::Run() {
  struct Pair {
    int a, b;
  };
  std::vector<Pair> pairs;
  auto close_all = [&] {
    for (const Pair& p : pairs) {
      ::close(p.a);
      ::close(p.b);
    }
    pairs.clear();
    relayed_.store(0);
  };
  char buf[64 * 1024];
  for (;;) {
    if (cut_.load() && !pairs.empty()) close_all();
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listener_, POLLIN, 0}};
    for (const Pair& p : pairs) {
      fds.push_back({p.a, POLLIN, 0});
      fds.push_back({p.b, POLLIN, 0});
    }
    // A short timeout: a Cut() takes effect within it even on idle connections.
    if (::poll(fds.data(), fds.size(), 20) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    if (fds[1].revents & POLLIN) {
      int in = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (in >= 0) {
        int out = cut_.load() || static_cast<int>(pairs.size()) >= kMaxPairs ? -1 : connect_loopback(target_);
        if (out < 0) {
          ::close(in);
        } else {
          pairs.push_back({in, out});
          relayed_.store(static_cast<int>(pairs.size()));
        }
      }
    }
    std::vector<std::size_t> dead;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      for (int side = 0; side < 2; ++side) {
        const pollfd& f = fds[2 + 2 * i + static_cast<std::size_t>(side)];
        if (f.revents == 0) continue;
        const int from = side == 0 ? pairs[i].a : pairs[i].b;
        const int to = side == 0 ? pairs[i].b : pairs[i].a;
        ssize_t n = ::recv(from, buf, sizeof buf, 0);
        if (n <= 0 || !write_all(to, buf, static_cast<std::size_t>(n))) {
          dead.push_back(i);
          break;
        }
      }
    }
    for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
      ::close(pairs[*it].a);
      ::close(pairs[*it].b);
      pairs.erase(pairs.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    relayed_.store(static_cast<int>(pairs.size()));
  }
  close_all();
}

}  // namespace itest

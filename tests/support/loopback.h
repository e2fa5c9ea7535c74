#pragma once
// Test helpers shared by the test binaries that embed Server (tests/stress, tests/transports):
// a blocking TCP connection to 127.0.0.1:port, a whole send, and a bounded read.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace mcpfan::testing {

/** A connected socket (close it), or -1. */
inline int connect_loopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/** Sends all of `s` (MSG_NOSIGNAL); false if the peer is gone. */
inline bool send_all(int fd, const std::string& s) {
  for (std::size_t off = 0; off < s.size();) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

/**
 * Reads into `got` until `needle` appears (true), or the peer closes or 5 s pass (false).
 * An empty needle reads until the peer closes (true) or 5 s pass (false).
 */
inline bool read_until(int fd, std::string& got, std::string_view needle) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (needle.empty() || got.find(needle) == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return needle.empty();
    got.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace mcpfan::testing

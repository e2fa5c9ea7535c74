// ServerConfig::listen.listen_fd (docs/embedding.md "The host's own listening socket"): served by every worker
// in place of binding host:port; the host's fd stays the host's; anything that is not a
// listening stream socket is refused by start() with nothing started.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

int loopback_listener(std::uint16_t& port, bool do_listen = true) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (do_listen) {
    EXPECT_EQ(::listen(fd, 16), 0);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

/** GET /healthz over a fresh connection; the whole answer (the server closes: Connection: close). */
std::string healthz(std::uint16_t port) {
  int fd = mcpfan::testing::connect_loopback(port);
  if (fd < 0) return "connect failed";
  std::string req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[1024];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return got;
}

TEST(ServerListenFd, ServesTheHostsSocket) {
  std::uint16_t port = 0;
  int fd = loopback_listener(port);
  mcpfan::ServerConfig config;
  config.listen.listen_fd = fd;
  config.workers = 2;
  mcpfan::Server server(config);
  auto bound = server.start();
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  EXPECT_EQ(bound.value(), port);
  for (int i = 0; i < 4; ++i) EXPECT_NE(healthz(port).find("200 OK"), std::string::npos);
  // The host's fd is its own: closing it leaves the workers' duplicates serving.
  ::close(fd);
  EXPECT_NE(healthz(port).find("200 OK"), std::string::npos);
  EXPECT_TRUE(server.stop().ok());
}

TEST(ServerListenFd, RefusesWhatIsNotAListeningStreamSocket) {
  std::uint16_t port = 0;
  int unlistened = loopback_listener(port, /*do_listen=*/false);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  int udp = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  for (int fd : {unlistened, pipe_fds[0], udp}) {
    mcpfan::ServerConfig config;
    config.listen.listen_fd = fd;
    config.workers = 1;
    mcpfan::Server server(config);
    auto bound = server.start();
    ASSERT_FALSE(bound.ok());
    EXPECT_EQ(bound.error().code, mcpfan::rpc_code::kInvalidParams);
    EXPECT_NE(bound.error().message.find("listen_fd"), std::string::npos) << bound.error().message;
    EXPECT_NE(::fcntl(fd, F_GETFD), -1) << "the host's fd was closed";
  }
  ::close(unlistened);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ::close(udp);
}

}  // namespace

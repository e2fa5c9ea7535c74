// The listening sockets of a listener (transports/src/server/listen_socket.h; docs/operations.md "A port in use"):
// one SO_REUSEPORT socket per worker on one port, but an address another group already serves
// is refused unless shared on purpose; a group that joined ours after our probe is seen; the
// TIME_WAIT connections of an earlier run are not "in use". A socket of this test with
// SO_REUSEPORT stands for another process: the kernel tells them apart only by user id.
#include "server/listen_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

using mcpfan::detail::addresses_overlap;
using mcpfan::detail::bind_listener;
using mcpfan::detail::foreign_listener;

sockaddr_storage v4(const char* ip, std::uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in&>(s);
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return s;
}

sockaddr_storage v6(const char* ip, std::uint16_t port) {
  sockaddr_storage s{};
  auto& a = reinterpret_cast<sockaddr_in6&>(s);
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  ::inet_pton(AF_INET6, ip, &a.sin6_addr);
  return s;
}

std::uint16_t port_of_fd(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

/** Another process's listener, as the kernel sees it: SO_REUSEPORT, the same user. -1 on failure. */
int reuseport_listener(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_storage a = v4("127.0.0.1", port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(sockaddr_in)) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void close_all(std::vector<int>& fds) {
  for (int f : fds) ::close(f);
  fds.clear();
}

const std::string kHint = "(another process serves it; --reuse-port shares it on purpose)";

TEST(ListenSocket, AddressesOverlap) {
  EXPECT_TRUE(addresses_overlap(v4("127.0.0.1", 80), v4("127.0.0.1", 80)));
  EXPECT_TRUE(addresses_overlap(v4("0.0.0.0", 80), v4("127.0.0.1", 80)));
  EXPECT_TRUE(addresses_overlap(v4("127.0.0.1", 80), v4("0.0.0.0", 80)));
  EXPECT_FALSE(addresses_overlap(v4("127.0.0.1", 80), v4("127.0.0.2", 80)));
  EXPECT_FALSE(addresses_overlap(v4("127.0.0.1", 80), v4("127.0.0.1", 81)));
  EXPECT_TRUE(addresses_overlap(v6("::1", 80), v6("::", 80)));
  EXPECT_FALSE(addresses_overlap(v6("::1", 80), v6("::2", 80)));
  EXPECT_FALSE(addresses_overlap(v6("::", 80), v4("0.0.0.0", 80)));  // families are compared apart
  EXPECT_EQ(mcpfan::detail::address_text(v6("::1", 8080)), "[::1]:8080");
  EXPECT_EQ(mcpfan::detail::address_text(v4("127.0.0.1", 8080)), "127.0.0.1:8080");
}

TEST(ListenSocket, PortZeroBindsEverySocketOnOneFreshPort) {
  sockaddr_storage addr = v4("127.0.0.1", 0);
  std::vector<int> fds;
  auto bound = bind_listener(addr, 3, /*share=*/false, "--listen", fds);
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  ASSERT_EQ(fds.size(), 3u);
  std::uint16_t port = ntohs(reinterpret_cast<sockaddr_in&>(addr).sin_port);
  EXPECT_NE(port, 0);
  for (int fd : fds) EXPECT_EQ(port_of_fd(fd), port);
  auto foreign = foreign_listener(addr, fds);
  ASSERT_TRUE(foreign.ok()) << foreign.error().message;
  EXPECT_FALSE(foreign.value()) << "our own sockets counted as another's";
  close_all(fds);
}

TEST(ListenSocket, RefusesAnAddressAnotherGroupServesUnlessShared) {
  int other = reuseport_listener(0);
  ASSERT_GE(other, 0);
  std::uint16_t port = port_of_fd(other);
  sockaddr_storage addr = v4("127.0.0.1", port);
  std::vector<int> fds;
  auto refused = bind_listener(addr, 2, /*share=*/false, "--publish-listen", fds);
  ASSERT_FALSE(refused.ok()) << "joined another process's SO_REUSEPORT group";
  EXPECT_EQ(refused.error().message,
            "--publish-listen 127.0.0.1:" + std::to_string(port) + ": address in use " + kHint);
  EXPECT_TRUE(fds.empty());
  // On purpose: joins, as every mcpfan did before.
  auto shared = bind_listener(addr, 2, /*share=*/true, "--publish-listen", fds);
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(fds.size(), 2u);
  close_all(fds);
  ::close(other);
}

TEST(ListenSocket, SeesAGroupThatJoinedAfterTheProbe) {
  // Two processes starting at one instant both pass the probe; the check after listen() is
  // what sees the other one.
  sockaddr_storage addr = v4("127.0.0.1", 0);
  std::vector<int> fds;
  ASSERT_TRUE(bind_listener(addr, 2, /*share=*/false, "--listen", fds).ok());
  std::uint16_t port = port_of_fd(fds[0]);
  int joiner = reuseport_listener(port);
  ASSERT_GE(joiner, 0) << "the kernel refused a same-user SO_REUSEPORT joiner: the defect cannot arise here";
  auto seen = foreign_listener(addr, fds);
  ASSERT_TRUE(seen.ok()) << seen.error().message;
  EXPECT_TRUE(seen.value());
  ::close(joiner);
  auto gone = foreign_listener(addr, fds);
  ASSERT_TRUE(gone.ok()) << gone.error().message;
  EXPECT_FALSE(gone.value());
  close_all(fds);
}

TEST(ListenSocket, TimeWaitOfAnEarlierRunIsNotInUse) {
  sockaddr_storage addr = v4("127.0.0.1", 0);
  std::vector<int> fds;
  ASSERT_TRUE(bind_listener(addr, 1, /*share=*/false, "--listen", fds).ok());
  std::uint16_t port = port_of_fd(fds[0]);
  // The server closes first, so its end of the connection lingers (FIN_WAIT2, then TIME_WAIT).
  int client = mcpfan::testing::connect_loopback(port);
  ASSERT_GE(client, 0);
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  int accepted = ::accept(fds[0], nullptr, nullptr);
  ASSERT_GE(accepted, 0);
  ::close(accepted);
  char byte = 0;
  pollfd c{client, POLLIN, 0};
  ASSERT_EQ(::poll(&c, 1, 5000), 1);
  EXPECT_EQ(::recv(client, &byte, 1, 0), 0);  // the server's FIN
  ::close(client);
  close_all(fds);
  // Without SO_REUSEADDR the lingering connection blocks a bind: what the probe must not trip on.
  int plain = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  EXPECT_NE(::bind(plain, reinterpret_cast<sockaddr*>(&addr), sizeof(sockaddr_in)), 0);
  ::close(plain);
  auto again = bind_listener(addr, 2, /*share=*/false, "--listen", fds);
  EXPECT_TRUE(again.ok()) << again.error().message;
  close_all(fds);
}

TEST(ListenSocket, ServerStartRefusesAPortInUseUnlessReusePort) {
  int other = reuseport_listener(0);
  ASSERT_GE(other, 0);
  std::uint16_t port = port_of_fd(other);
  {
    mcpfan::ServerConfig config;
    config.listen.port = port;
    config.workers = 2;
    mcpfan::Server server(config);
    auto started = server.start();
    ASSERT_FALSE(started.ok()) << "started on a port another process serves";
    EXPECT_EQ(started.error().message, "--listen 127.0.0.1:" + std::to_string(port) + ": address in use " + kHint);
  }
  {
    mcpfan::ServerConfig config;
    config.listen.port = 0;
    config.listen.publish_host = "127.0.0.1";
    config.listen.publish_port = port;
    config.workers = 2;
    mcpfan::Server server(config);
    auto started = server.start();
    ASSERT_FALSE(started.ok()) << "started on a publish port another process serves";
    EXPECT_EQ(started.error().message,
              "--publish-listen 127.0.0.1:" + std::to_string(port) + ": address in use " + kHint);
  }
  {
    mcpfan::ServerConfig config;
    config.listen.port = port;
    config.workers = 2;
    config.listen.reuse_port = true;
    mcpfan::Server server(config);
    auto started = server.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(started.value(), port);
    EXPECT_TRUE(server.stop().ok());
  }
  ::close(other);
}

TEST(ListenSocket, ServerStartRefusesOnePortForBothListeners) {
  int probe = reuseport_listener(0);  // a port nobody else holds once closed
  ASSERT_GE(probe, 0);
  std::uint16_t port = port_of_fd(probe);
  ::close(probe);
  mcpfan::ServerConfig config;
  config.listen.port = port;
  config.listen.publish_host = "127.0.0.1";
  config.listen.publish_port = port;
  config.workers = 1;
  config.listen.reuse_port = true;  // not even on purpose: the operator paths would leak onto the public listener
  mcpfan::Server server(config);
  auto started = server.start();
  ASSERT_FALSE(started.ok());
  EXPECT_NE(
      started.error().message.find("--publish-listen 127.0.0.1:" + std::to_string(port) + ": the address of --listen"),
      std::string::npos)
      << started.error().message;
}

}  // namespace

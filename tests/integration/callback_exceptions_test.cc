// Exceptions at libuv callback boundaries (docs/security.md "Failures inside the server"). libuv is C: an exception
// that leaves one of its callbacks ends in std::terminate, taking every client down. Here a real allocation failure
// (the server under an address-space limit, one stdio client sending a line that never ends, with --max-line-bytes set
// too high) must be caught, counted, and cost only that client its connection.
//
// Not under the sanitizers: ASan and TSan reserve terabytes of address space at start, so
// they cannot run under an address-space limit at all.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

#ifndef MCPFAN_SANITIZED
TEST(CallbackExceptions, AnAllocationFailureClosesOnlyTheConnectionThatCausedIt) {
  TempDir dir;
  const std::string sock = dir.path() + "/s";
  ChildProcess p;
  // 1 GiB of address space: a line buffer that doubles past 512 MiB cannot grow.
  ASSERT_TRUE(p.Spawn({"/usr/bin/prlimit", "--as=1073741824", "--", MCPFAN_BIN, "--listen", "127.0.0.1:0", "--workers",
                       "1", "--unix", sock, "--max-line-bytes", "3000000000"}))
      << p.error();
  int port = 0;
  p.WaitStderrUntil(
      [&](const std::string& t) {
        auto at = t.find("listening on 127.0.0.1:");
        if (at != std::string::npos) port = std::atoi(t.c_str() + at + 23);
        return port > 0;
      },
      kStart);
  ASSERT_GT(port, 0) << p.Stderr();
  SseStream healthy;
  ASSERT_TRUE(OpenListen(healthy, port, R"("h")", R"({"toolsListChanged":true})"));

  // The greedy client: one line, no newline, until the server gives up on it (bounded: at
  // most 2 GiB, each send at most 10 s).
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const std::string chunk(1 << 20, 'x');
  std::size_t sent = 0;
  bool cut_off = false;
  while (sent < (std::size_t{2} << 30)) {
    ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      cut_off = errno == EPIPE || errno == ECONNRESET;
      break;
    }
    sent += static_cast<std::size_t>(n);
  }
  ::close(fd);
  EXPECT_TRUE(cut_off) << "the server kept reading " << sent << " bytes; stderr:\n" << p.Stderr();

  // Caught, counted, and the server goes on serving everyone else.
  EXPECT_TRUE(PollMetric(port, "mcpfan_callback_exceptions_total", [](double v) { return v >= 1; }));
  EXPECT_FALSE(p.WaitExit(Ms(0))) << p.DescribeStatus() << "\n" << p.Stderr();
  ASSERT_TRUE(PublishOk(port, R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = healthy.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("h")"));
}
#endif

}  // namespace
}  // namespace itest

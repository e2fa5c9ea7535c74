// A port another process serves (docs/operations.md "A port in use"): a second `mcpfan` on the --listen or
// --publish-listen address of a running one must exit 1 with "address in use", not share the
// port through SO_REUSEPORT and take part of its connections; --reuse-port (on the process
// that joins) shares it on purpose. Every wait is bounded; every process is stopped by PID.
#include <signal.h>

#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

std::string Addr(int port) { return "127.0.0.1:" + std::to_string(port); }

// Starts `mcpfan args` and expects it to refuse: no "listening on" line, `status` (1: the start
// failed; 2: the configuration itself is wrong, found before binding), and `message` in its stderr.
::testing::AssertionResult Refuses(const std::vector<std::string>& args, const std::string& message,
                                   const std::string& status = "exit 1") {
  ChildProcess second;
  std::string err;
  if (int port = LaunchMcpfan(second, args, kStart, "second mcpfan", &err); port > 0) {
    return ::testing::AssertionFailure() << "the second mcpfan started on port " << port << " (it shares the port):\n"
                                         << second.Stderr();
  }
  if (!second.WaitExit(kStart))
    return ::testing::AssertionFailure() << "the second mcpfan did not exit:\n" << second.Stderr();
  if (second.DescribeStatus() != status) {
    return ::testing::AssertionFailure() << "the second mcpfan ended with " << second.DescribeStatus() << ":\n"
                                         << second.Stderr();
  }
  if (second.Stderr().find(message) == std::string::npos) {
    return ::testing::AssertionFailure() << "no \"" << message << "\" in its stderr:\n" << second.Stderr();
  }
  return ::testing::AssertionSuccess();
}

bool Healthy(int port) {
  auto r = Roundtrip(port, BuildRequest("GET", "/healthz", {{"Connection", "close"}}));
  return r && r->status == 200;
}

// SIGTERM and a bounded wait for the exit.
bool Stopped(ServerProcess& srv) { return srv.Signal(SIGTERM) && srv.WaitExit(kStart); }

TEST(ListenPort, SecondInstanceOnTheListenPortFails) {
  ServerProcess first({"--workers", "2"});
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(Refuses({"--listen", Addr(first.port()), "--workers", "2"},
                      "mcpfan: --listen " + Addr(first.port()) +
                          ": address in use (another process serves it; --reuse-port shares it on purpose)"));
  // The first one still serves every connection.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Healthy(first.port())) << i;
  EXPECT_FALSE(first.exited());
}

TEST(ListenPort, ReusePortSharesTheListenPortOnPurpose) {
  ServerProcess first({"--workers", "1", "--reuse-port"});
  ASSERT_TRUE(first.ok()) << first.error();
  ChildProcess second;
  std::string err;
  EXPECT_EQ(LaunchMcpfan(second, {"--listen", Addr(first.port()), "--workers", "1", "--reuse-port"}, kStart,
                         "second mcpfan", &err),
            first.port())
      << err;
  EXPECT_TRUE(Healthy(first.port()));
}

TEST(ListenPort, SecondInstanceOnThePublishListenPortFails) {
  ServerProcess first({"--publish-listen", "127.0.0.1:0", "--workers", "2"});
  ASSERT_TRUE(first.ok()) << first.error();
  int ops = PublishPort(first);
  ASSERT_GT(ops, 0) << first.Stderr();
  EXPECT_TRUE(Refuses({"--listen", "127.0.0.1:0", "--publish-listen", Addr(ops), "--workers", "2"},
                      "mcpfan: --publish-listen " + Addr(ops) +
                          ": address in use (another process serves it; --reuse-port shares it on purpose)"));
  EXPECT_TRUE(PublishOk(ops, Updated("file:///still-served")));
}

TEST(ListenPort, ReusePortSharesThePublishListenPortOnPurpose) {
  ServerProcess first({"--publish-listen", "127.0.0.1:0", "--workers", "1", "--reuse-port"});
  ASSERT_TRUE(first.ok()) << first.error();
  int ops = PublishPort(first);
  ASSERT_GT(ops, 0) << first.Stderr();
  ChildProcess second;
  std::string err;
  EXPECT_GT(
      LaunchMcpfan(second, {"--listen", "127.0.0.1:0", "--publish-listen", Addr(ops), "--workers", "1", "--reuse-port"},
                   kStart, "second mcpfan", &err),
      0)
      << err;
  EXPECT_TRUE(second.WaitForStderr("publish listener on " + Addr(ops), kStart)) << second.Stderr();
}

TEST(ListenPort, OneProcessCannotServeBothListenersOnOnePort) {
  // Two listeners sharing one port would mix the operator paths into the public listener.
  // A port known to be free: the one a stopped server had.
  ServerProcess first({"--workers", "1"});
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(Stopped(first));
  EXPECT_TRUE(Refuses({"--listen", Addr(first.port()), "--publish-listen", Addr(first.port()), "--workers", "2"},
                      "mcpfan: --publish-listen " + Addr(first.port()) + ": the address of --listen", "exit 2"));
}

TEST(ListenPort, RestartOnTheSamePortAfterServing) {
  // The connections the first one closed linger in TIME_WAIT on its port: that is not "in use".
  ServerProcess first({"--workers", "2"});
  ASSERT_TRUE(first.ok()) << first.error();
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Healthy(first.port())) << i;
  ASSERT_TRUE(Stopped(first));
  ChildProcess second;
  std::string err;
  EXPECT_EQ(LaunchMcpfan(second, {"--listen", Addr(first.port()), "--workers", "2"}, kStart, "second mcpfan", &err),
            first.port())
      << err;
}

// The same for --unix: a second mcpfan used to unlink the live socket file and bind its own,
// silently taking the path (new clients reached it, not the first).
TEST(ListenPort, SecondInstanceOnALiveUnixPathFails) {
  TempDir dir;
  const std::string path = dir.path() + "/mcpfan.sock";
  ServerProcess first({"--workers", "1", "--unix", path});
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(Refuses({"--listen", "127.0.0.1:0", "--unix", path}, "address in use (another process serves it)"));
  LineChannel ch;
  std::string err;
  EXPECT_TRUE(ConnectUnix(ch, path, kIo, &err)) << "the first server lost its socket: " << err;
}

// A socket file whose process is gone (no listener: connecting is refused) is replaced.
TEST(ListenPort, AStaleUnixSocketFileIsReplaced) {
  TempDir dir;
  const std::string path = dir.path() + "/stale.sock";
  int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(fd);  // the file stays, nobody listens
  ServerProcess srv({"--workers", "1", "--unix", path});
  ASSERT_TRUE(srv.ok()) << srv.error();
  LineChannel ch;
  std::string err;
  EXPECT_TRUE(ConnectUnix(ch, path, kIo, &err)) << err;
}

}  // namespace
}  // namespace itest

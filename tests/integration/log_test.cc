// Logging never blocks a worker (docs/operations.md "Logging"). The server's stderr is a FIFO that the
// test holds open and stops reading once it has the port: the pipe fills after a few
// thousand lines. Before, each bad stdio line was one fprintf on the worker loop, which
// then blocked: this client's later lines and every other client on that loop waited.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

TEST(Log, AStderrNobodyReadsNeverStopsTheServer) {
  TempDir dir;
  const std::string fifo = dir.path() + "/stderr";
  const std::string sock = dir.path() + "/s";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int held = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);  // a reader that stops reading
  ASSERT_GE(held, 0);
  ChildProcess p;
  ASSERT_TRUE(p.Spawn({"/bin/sh", "-c",
                       "exec \"$0\" --listen 127.0.0.1:0 --workers 1 --unix \"$1\" --max-line-bytes 100 2>\"$2\"",
                       std::getenv("MCPFAN_BIN") ? std::getenv("MCPFAN_BIN") : MCPFAN_BIN, sock, fifo}))
      << p.error();
  // The port, from the FIFO (bounded), then never read again.
  std::string text;
  int port = 0;
  for (auto end = After(kStart); port == 0 && Clock::now() < end;) {
    char buf[512];
    ssize_t n = ::read(held, buf, sizeof buf);
    if (n > 0) text.append(buf, static_cast<std::size_t>(n));
    auto at = text.find("listening on 127.0.0.1:");
    if (at != std::string::npos) port = std::atoi(text.c_str() + at + 23);
    if (n <= 0) std::this_thread::sleep_for(Ms(5));
  }
  ASSERT_GT(port, 0) << text;

  LineChannel c;
  std::string err;
  ASSERT_TRUE(ConnectUnix(c, sock, kIo, &err)) << err;
  const std::string bad(200, 'x');  // over --max-line-bytes: answered -32600 and logged
  for (int round = 0; round < 200; ++round) {
    std::string batch;
    for (int i = 0; i < 100; ++i) batch += bad + "\n";
    ASSERT_TRUE(c.Send(batch, kIo, &err)) << "round " << round << ": " << err;
    for (int i = 0; i < 100; ++i) {
      auto m = c.NextJson(kIo, &err);
      ASSERT_TRUE(m) << "round " << round << ", answer " << i << ": " << err;
      ASSERT_EQ(m->GetInt({"error", "code"}), -32600);
    }
  }
  // 20,000 lines to log: most are suppressed by the rate limit, and none held a loop up.
  EXPECT_TRUE(PollMetric(port, "mcpfan_log_lines_dropped_total", [](double v) { return v >= 19000; }));
  EXPECT_TRUE(ServesListenAndPublish(port));
  ::close(held);
}

}  // namespace
}  // namespace itest

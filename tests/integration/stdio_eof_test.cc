// The end of a stdio client's input (design §2.3): every complete line received
// before stdin's EOF is answered, a listen still open gets its final result, and only then
// does `mcpfan --stdio` exit 0. stdin may be a pipe, a regular file or /dev/null.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "child_process.h"
#include "fd_io.h"
#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

const std::string kPing = R"({"jsonrpc":"2.0","id":"p","method":"ping"})";

// Reads `fd` until EOF (bounded); the bytes read.
std::string ReadToEof(int fd, Ms timeout) {
  SetNonBlocking(fd);
  std::string out;
  Deadline end = After(timeout);
  while (ReadSomeInto(fd, out, end) > 0) {
  }
  return out;
}

std::vector<Json> JsonLines(const std::string& text) {
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.emplace_back(line);
  return lines;
}

// `mcpfan --stdio` with stdin on `in` (taken and closed) and stdout on a pipe: everything it
// writes until stdout's EOF. It must then exit 0 by itself (bounded waits; stopped by PID).
std::string RunStdio(int in, const char* workers) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in);
    ADD_FAILURE() << "pipe2";
    return {};
  }
  ChildProcess p;
  std::string err;
  int port = LaunchMcpfan(p, {"--listen", "127.0.0.1:0", "--workers", workers, "--stdio"}, kStart, "mcpfan --stdio",
                          &err, in, out[1]);
  ::close(in);
  ::close(out[1]);
  EXPECT_GT(port, 0) << err;
  std::string answers = port > 0 ? ReadToEof(out[0], kIo) : std::string();
  ::close(out[0]);
  EXPECT_TRUE(p.WaitExit(kIo)) << p.Stderr();
  EXPECT_EQ(p.DescribeStatus(), "exit 0") << p.Stderr();
  return answers;
}

// What a client that writes its requests and closes stdin at once must get back.
void ExpectAllAnswered(const std::string& out, bool with_listen) {
  auto lines = JsonLines(out);
  ASSERT_EQ(lines.size(), with_listen ? 4u : 2u) << out;
  EXPECT_TRUE(IsResult(lines[1], R"("p")", "{}")) << out;
  EXPECT_EQ(lines[0].GetString({"result", "protocolVersion"}), "2025-11-25") << out;
  if (with_listen) {
    EXPECT_TRUE(IsAck(lines[2], R"("l")")) << out;
    EXPECT_TRUE(IsCompleteResult(lines[3], R"("l")")) << out;
  }
}

// `printf '<initialize>\n<ping>\n<listen>\n' | mcpfan --stdio`: the input has ended before
// the server reads it. Before the fix every answer was dropped (40 times out of 40), and
// now and then libuv aborted closing fd 0 (`uv__close: Assertion 'fd > STDERR_FILENO'`).
TEST(StdioEof, RequestsWrittenJustBeforeEofAreAllAnsweredBeforeExit) {
  const std::string input = StdioInitialize("0") + "\n" + kPing + "\n" +
                            StdioListen(R"("l")", R"({"toolsListChanged":true})") + "\n";
  for (int round = 0; round < 25; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    int in[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::write(in[1], input.data(), input.size()), static_cast<ssize_t>(input.size()));
    ::close(in[1]);  // EOF is there before the server starts
    std::string answers = RunStdio(in[0], "2");
    ExpectAllAnswered(answers, /*with_listen=*/true);
    if (::testing::Test::HasFailure()) break;
  }
}

TEST(StdioEof, StdinFromARegularFileIsServedToTheEndAndExitsZero) {
  TempDir dir;
  const std::string in_path = dir.path() + "/requests.jsonl";
  {
    std::ofstream f(in_path);
    // The last line has no newline: still a message.
    f << StdioInitialize("0") << "\n\n" << kPing;
  }
  int in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  std::string answers = RunStdio(in, "1");
  ExpectAllAnswered(answers, /*with_listen=*/false);
}

// Both ends regular files, and more requests than one read holds: all answered, in order.
TEST(StdioEof, FileToFileAnswersEveryRequestInOrder) {
  TempDir dir;
  const std::string in_path = dir.path() + "/requests.jsonl", out_path = dir.path() + "/answers.jsonl";
  constexpr int kRequests = 5000;  // ~250 KB: several 64 KiB reads
  {
    std::ofstream f(in_path);
    for (int i = 0; i < kRequests; ++i)
      f << R"({"jsonrpc":"2.0","id":)" << i << R"(,"method":"ping","params":{"pad":"xxxxxxxxxx"}})"
        << "\n";
  }
  int in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  ChildProcess p;
  std::string err;
  int port = LaunchMcpfan(p, {"--listen", "127.0.0.1:0", "--workers", "1", "--stdio"}, kStart, "mcpfan --stdio", &err,
                          in, out);
  ::close(in);
  ::close(out);
  ASSERT_GT(port, 0) << err;
  ASSERT_TRUE(p.WaitExit(Ms(30000))) << p.Stderr();
  EXPECT_EQ(p.DescribeStatus(), "exit 0") << p.Stderr();
  std::ifstream f(out_path);
  int next = 0;
  for (std::string line; std::getline(f, line); ++next) {
    ASSERT_TRUE(IsResult(Json(line), std::to_string(next), "{}")) << line;
  }
  EXPECT_EQ(next, kRequests);
}

TEST(StdioEof, StdinFromDevNullExitsZeroAtOnce) {
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(in, 0);
  EXPECT_EQ(RunStdio(in, "1"), "");
}

}  // namespace
}  // namespace itest

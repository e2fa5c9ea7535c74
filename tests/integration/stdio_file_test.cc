// `mcpfan --stdio > file` (docs/operations.md "Logging"): stdout as a regular file is written through
// libuv's threadpool, never with a blocking write on the worker loop; everything the
// client is answered and sent reaches the file, in order, and the server exits 0 at EOF.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

TEST(StdioFile, StdoutRedirectedToARegularFileGetsEveryLineInOrder) {
  TempDir dir;
  const std::string out_path = dir.path() + "/out.jsonl";
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(out, 0);
  int in[2];
  ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
  ChildProcess p;
  std::string err;
  int port = LaunchMcpfan(p, {"--listen", "127.0.0.1:0", "--workers", "1", "--stdio"}, kStart, "mcpfan --stdio", &err,
                          in[0], out);
  ::close(in[0]);
  ::close(out);
  ASSERT_GT(port, 0) << err;
  auto write_line = [&](const std::string& line) {
    std::string l = line + "\n";
    return ::write(in[1], l.data(), l.size()) == static_cast<ssize_t>(l.size());
  };
  ASSERT_TRUE(write_line(StdioInitialize("0")));
  ASSERT_TRUE(write_line(StdioListen("\"f\"", R"({"resourceSubscriptions":["mem://f/"]})")));
  // Publish once the listen is in place: its ack is in the file by then.
  auto file_has = [&](std::string_view needle) {
    std::ifstream f(out_path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str().find(needle) != std::string::npos;
  };
  for (auto end = After(kIo); !file_has("acknowledged") && Clock::now() < end;) std::this_thread::sleep_for(Ms(5));
  ASSERT_TRUE(file_has("acknowledged"));
  for (int i = 0; i < 200; ++i) {
    // Distinct URIs: nothing coalesces while a file write is in flight.
    ASSERT_TRUE(PublishOk(port, R"({"method":"notifications/resources/updated","params":{"uri":"mem://f/)" +
                                    std::to_string(i) + R"(","_meta":{"n":)" + std::to_string(i) + "}}}"));
  }
  // The last publish has reached the file before stdin ends.
  auto count = [&](std::string_view needle) {
    std::ifstream f(out_path);
    std::size_t n = 0;
    for (std::string line; std::getline(f, line);) n += line.find(needle) != std::string::npos;
    return n;
  };
  for (auto end = After(Ms(15000)); count(R"("n":199)") < 1 && Clock::now() < end;) std::this_thread::sleep_for(Ms(5));
  EXPECT_EQ(count(R"("n":199)"), 1u);
  ::close(in[1]);  // EOF: exit 0
  ASSERT_TRUE(p.WaitExit(Ms(15000))) << p.Stderr();
  EXPECT_EQ(p.DescribeStatus(), "exit 0") << p.Stderr();
  std::ifstream f(out_path);
  std::vector<Json> lines;
  for (std::string line; std::getline(f, line);) lines.emplace_back(line);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0].GetInt({"id"}), 0);
  EXPECT_EQ(lines[1].GetString({"method"}), "notifications/subscriptions/acknowledged");
  // Every publish, in order, with the listen's subscriptionId; then, as stdin ended, the
  // listen's final result.
  ASSERT_TRUE(IsCompleteResult(lines.back(), R"("f")"));
  lines.pop_back();
  std::int64_t next = 0;
  for (std::size_t i = 2; i < lines.size(); ++i) {
    ASSERT_EQ(lines[i].GetString({"method"}), "notifications/resources/updated") << i;
    EXPECT_EQ(lines[i].GetString({"params", "_meta", std::string(kSubId)}), "f");
    EXPECT_EQ(lines[i].GetInt({"params", "_meta", "n"}), next++) << i;
  }
  EXPECT_EQ(next, 200);
}

}  // namespace
}  // namespace itest

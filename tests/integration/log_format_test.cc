// The program's log lines (--log-format, --log-level; /work docs "Logs"): every line has a
// timestamp and a level; JSON lines are objects with fixed keys; a level filters what is
// below it; a flood of one kind is rate-limited and every suppressed line is accounted for.
// Each test stops the server (SIGTERM) and reads stderr after "stopped": the Server's records
// reach stderr before that line, so an absent line was never logged.
#include <signal.h>

#include <cstdlib>
#include <regex>

#include "harness.h"
#include "json_util.h"
#include "stdio_client.h"

namespace itest {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Stops the server and returns its whole stderr (bounded waits).
std::string StopAndCollect(ServerProcess& srv) {
  srv.Signal(SIGTERM);
  EXPECT_TRUE(srv.WaitForStderr("stopped (signal=SIGTERM)", Ms(5000))) << srv.Stderr();
  EXPECT_TRUE(srv.WaitExit(Ms(5000)));
  return srv.Stderr();
}

// A publish whose body is over --max-body 1024: answered 413, a warn record (limit_body_bytes).
void HitTheBodyLimit(int port) {
  const std::string body(2000, 'x');
  auto r = Roundtrip(port, BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}}, body));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
}

TEST(LogFormat, JsonLinesAreObjectsWithFixedKeys) {
  ServerProcess srv({"--workers", "1", "--max-body", "1024", "--log-format", "json"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  HitTheBodyLimit(srv.port());
  ASSERT_TRUE(srv.WaitForStderr("\"kind\":\"limit_body_bytes\"", kIo)) << srv.Stderr();
  const std::string err = StopAndCollect(srv);
  const std::regex ts(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)");
  bool listening = false, limit = false, start = false, stopped = false;
  for (const std::string& line : Lines(err)) {
    Json j(line);
    ASSERT_TRUE(j.ok()) << line << ": " << j.error();
    auto t = j.GetString({"ts"});
    auto level = j.GetString({"level"});
    auto kind = j.GetString({"kind"});
    ASSERT_TRUE(t && level && kind && j.GetString({"msg"})) << line;
    EXPECT_TRUE(std::regex_match(*t, ts)) << line;
    EXPECT_TRUE(*level == "debug" || *level == "info" || *level == "warn" || *level == "error") << line;
    if (*kind == "listening") {
      listening = true;
      EXPECT_EQ(j.GetInt({"workers"}), 1) << line;
      EXPECT_EQ(j.GetInt({"pid"}), static_cast<int64_t>(srv.pid())) << line;
      EXPECT_EQ(j.GetString({"msg"}), "listening on 127.0.0.1:" + std::to_string(srv.port())) << line;
    } else if (*kind == "limit_body_bytes") {
      limit = true;
      EXPECT_EQ(*level, "warn") << line;
      EXPECT_EQ(j.GetString({"limit"}), "body_bytes") << line;
    } else if (*kind == "start") {
      start = true;
      EXPECT_TRUE(j.GetString({"version"}).value_or("").size() > 0) << line;
    } else if (*kind == "start_auth") {
      EXPECT_EQ(j.GetString({"clients"}), "none") << line;
    } else if (*kind == "stopped") {
      stopped = true;
    }
  }
  EXPECT_TRUE(listening && limit && start && stopped) << err;
}

TEST(LogFormat, TextLinesStartWithTimeAndLevelAndKeepTheirBody) {
  ServerProcess srv({"--workers", "1", "--max-body", "1024"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  HitTheBodyLimit(srv.port());
  ASSERT_TRUE(srv.WaitForStderr("limit hit: body_bytes", kIo)) << srv.Stderr();
  const std::string err = StopAndCollect(srv);
  const std::regex prefix(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (DEBUG|INFO|WARN|ERROR) mcpfan: .+)");
  for (const std::string& line : Lines(err)) EXPECT_TRUE(std::regex_match(line, prefix)) << line;
  // What scripts parse: the body after "mcpfan: " as before levels existed.
  EXPECT_NE(err.find(" INFO mcpfan: listening on 127.0.0.1:" + std::to_string(srv.port()) + " workers=1 pid=" +
                     std::to_string(srv.pid()) + "\n"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(" WARN mcpfan: limit hit: body_bytes (--max-body) limit=body_bytes\n"), std::string::npos) << err;
}

TEST(LogFormat, ALevelFiltersWhatIsBelowIt) {
  ServerProcess srv({"--workers", "1", "--max-body", "1024", "--log-level", "error"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  HitTheBodyLimit(srv.port());
  const std::string err = StopAndCollect(srv);
  EXPECT_EQ(err.find("limit hit"), std::string::npos) << err;
  EXPECT_EQ(err.find(" WARN "), std::string::npos) << err;
  EXPECT_EQ(err.find("authentication"), std::string::npos) << "the start-up summary is info" << err;
  // What readers wait for is written at any level.
  EXPECT_NE(err.find("listening on 127.0.0.1:"), std::string::npos) << err;
}

TEST(LogFormat, DebugShowsRoutineLimitsThatInfoHides) {
  for (const char* level : {"debug", "info"}) {
    SCOPED_TRACE(level);
    ServerProcess srv({"--workers", "1", "--idle-timeout-ms", "50", "--log-level", level});
    ASSERT_TRUE(srv.ok()) << srv.error();
    // A keep-alive connection left idle is closed by the server (a routine limit: debug).
    Conn c;
    ASSERT_TRUE(c.Connect(srv.port()));
    ASSERT_TRUE(c.Send(BuildRequest("GET", "/healthz", {})));
    ASSERT_TRUE(c.ReadResponse());
    ASSERT_TRUE(c.WaitClosed(kIo));
    ASSERT_TRUE(
        PollMetric(srv.port(), "mcpfan_limit_hits_total{limit=\"idle_timeout\"}", [](double v) { return v >= 1; }));
    const std::string err = StopAndCollect(srv);
    const bool logged = err.find(" DEBUG mcpfan: limit hit: idle_timeout") != std::string::npos;
    EXPECT_EQ(logged, std::string(level) == "debug") << err;
  }
}

TEST(LogFormat, AFloodIsRateLimitedAndEverySuppressedLineIsCounted) {
  TempDir dir;
  const std::string sock = dir.path() + "/s";
  ServerProcess srv({"--workers", "1", "--unix", sock, "--max-line-bytes", "100", "--log-format", "json"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  LineChannel c;
  std::string e;
  ASSERT_TRUE(ConnectUnix(c, sock, kIo, &e)) << e;
  constexpr int kRounds = 20, kPerRound = 100;
  const std::string bad(200, 'x');  // over --max-line-bytes: answered -32600, a limit hit, logged
  for (int round = 0; round < kRounds; ++round) {
    std::string batch;
    for (int i = 0; i < kPerRound; ++i) batch += bad + "\n";
    ASSERT_TRUE(c.Send(batch, kIo, &e)) << e;
    for (int i = 0; i < kPerRound; ++i) ASSERT_TRUE(c.NextJson(kIo, &e)) << "round " << round << ": " << e;
  }
  const std::string err = StopAndCollect(srv);
  // Each line went out, or was counted in a later record of its kind (or the summary at stop).
  std::int64_t logged = 0, suppressed = 0;
  for (const std::string& line : Lines(err)) {
    Json j(line);
    ASSERT_TRUE(j.ok()) << line;
    if (j.GetString({"kind"}) != "limit_line_bytes") continue;
    // A summary (no record of the kind came within a second, or the server stopped) only counts.
    const bool summary = j.GetString({"msg"}).value_or("").rfind("rate limit on ", 0) == 0;
    logged += summary ? 0 : 1;
    suppressed += j.GetInt({"suppressed"}).value_or(0);
  }
  EXPECT_EQ(logged + suppressed, kRounds * kPerRound) << err.substr(0, 4000);
  // 20 at once, then 10 a second: 2,000 lines take far less than the 198 s that would log them all.
  EXPECT_GT(suppressed, 0);
  EXPECT_LT(logged, kRounds * kPerRound / 2);
}

}  // namespace
}  // namespace itest

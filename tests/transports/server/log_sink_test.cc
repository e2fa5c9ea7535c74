// ServerConfig::log.sink and log_level (transport/log.h) for an embedding host: an in-process
// Server on an ephemeral loopback port. The sink gets the records, on one thread that is not
// the host's, until stop() returns; nothing goes to stderr behind the host's back; the level
// filters. And format_log_record(): one line per record whatever the message holds.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

using mcpfan::LogFormat;
using mcpfan::LogLevel;
using mcpfan::LogRecord;

// Records a sink received, and the threads it ran on.
struct Captured {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<LogRecord> records;
  std::set<std::thread::id> threads;

  mcpfan::LogSink sink() {
    return [this](const LogRecord& r) {
      std::lock_guard lock(mu);
      records.push_back(r);
      threads.insert(std::this_thread::get_id());
      cv.notify_all();
    };
  }
  bool wait_for_kind(std::string_view kind) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return count(kind) > 0; });
  }
  std::size_t count(std::string_view kind) {  // mu held
    std::size_t n = 0;
    for (const LogRecord& r : records) n += r.kind == kind;
    return n;
  }
};

// A publish over max_body (1024): answered 413 and logged (warn, limit_body_bytes).
void publish_too_large(std::uint16_t port) {
  int fd = mcpfan::testing::connect_loopback(port);
  ASSERT_GE(fd, 0);
  const std::string body(2000, 'x');
  ASSERT_TRUE(
      mcpfan::testing::send_all(fd,
                                "POST /v1/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                "Content-Length: " +
                                    std::to_string(body.size()) + "\r\n\r\n" + body));
  std::string got;
  EXPECT_TRUE(mcpfan::testing::read_until(fd, got, "\r\n\r\n"));
  EXPECT_EQ(got.rfind("HTTP/1.1 413", 0), 0u) << got;
  ::close(fd);
}

// fd 2 goes to a file for the object's lifetime; contents() reads what was written there.
class StderrCapture {
 public:
  StderrCapture() {
    (void)mcpfan::flush_stderr_log(std::chrono::seconds(2));  // what earlier tests queued goes to the real stderr
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    char path[] = "/tmp/mcpfan_log_sink_XXXXXX";
    file_ = ::mkstemp(path);
    ::unlink(path);
    ::dup2(file_, STDERR_FILENO);
  }
  ~StderrCapture() {
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    ::close(file_);
  }
  std::string contents() {
    (void)mcpfan::flush_stderr_log(std::chrono::seconds(2));
    std::fflush(stderr);
    std::string out;
    char buf[4096];
    for (off_t at = 0;;) {
      ssize_t n = ::pread(file_, buf, sizeof buf, at);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      at += n;
    }
    return out;
  }

 private:
  int saved_ = -1;
  int file_ = -1;
};

TEST(LogSink, AHostSinkGetsTheRecordsOnOneThreadAndStderrNothing) {
  Captured c;
  StderrCapture err;
  {
    mcpfan::ServerConfig cfg;
    cfg.listen.port = 0;
    cfg.workers = 2;
    cfg.http.max_body = 1024;
    cfg.log.sink = c.sink();
    mcpfan::Server server(cfg);
    auto port = server.start();
    ASSERT_TRUE(port) << port.error().message;
    publish_too_large(port.value());
    publish_too_large(port.value());
    ASSERT_TRUE(c.wait_for_kind("limit_body_bytes"));
    ASSERT_TRUE(server.stop());
    std::lock_guard lock(c.mu);
    EXPECT_EQ(c.count("limit_body_bytes"), 2u);  // stop() delivered what was queued
    for (const LogRecord& r : c.records) {
      if (r.kind != "limit_body_bytes") continue;
      EXPECT_EQ(r.level, LogLevel::Warn);
      EXPECT_NE(r.message.find("--max-body"), std::string::npos) << r.message;
      ASSERT_EQ(r.fields.size(), 1u);
      EXPECT_EQ(r.fields[0].key, "limit");
      EXPECT_EQ(r.fields[0].value, "body_bytes");
      EXPECT_LE(r.time, std::chrono::system_clock::now());
    }
    EXPECT_EQ(c.threads.size(), 1u) << "one log thread calls the sink";
    EXPECT_EQ(c.threads.count(std::this_thread::get_id()), 0u) << "never the host's thread";
  }
  EXPECT_EQ(err.contents(), "") << "the Server wrote to stderr behind the host's back";
}

TEST(LogSink, RecordsBelowTheLevelAreNotDelivered) {
  Captured c;
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.workers = 1;
  cfg.http.max_body = 1024;
  cfg.log.sink = c.sink();
  cfg.log.level = LogLevel::Error;
  mcpfan::Server server(cfg);
  auto port = server.start();
  ASSERT_TRUE(port) << port.error().message;
  publish_too_large(port.value());
  ASSERT_TRUE(server.stop());  // what was logged has been delivered by now
  std::lock_guard lock(c.mu);
  EXPECT_EQ(c.count("limit_body_bytes"), 0u);
}

TEST(LogSink, ASinkThatThrowsDoesNotStopTheServer) {
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.workers = 1;
  cfg.http.max_body = 1024;
  std::mutex mu;
  std::condition_variable cv;
  int calls = 0;
  cfg.log.sink = [&](const LogRecord&) {
    {
      std::lock_guard lock(mu);
      ++calls;
    }
    cv.notify_all();
    throw std::runtime_error("the host's bug");
  };
  mcpfan::Server server(cfg);
  auto port = server.start();
  ASSERT_TRUE(port) << port.error().message;
  publish_too_large(port.value());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return calls >= 1; }));
  }
  publish_too_large(port.value());  // still served
  ASSERT_TRUE(server.stop());
  std::lock_guard lock(mu);
  EXPECT_EQ(calls, 2);
}

LogRecord record(std::string message, std::vector<mcpfan::LogField> fields = {}) {
  LogRecord r;
  r.time =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'294'720'123));  // 2025-11-28T01:52:00.123Z
  r.level = LogLevel::Warn;
  r.kind = "test_kind";
  r.message = std::move(message);
  r.fields = std::move(fields);
  return r;
}

TEST(LogFormat, TextIsOneLineWithTimeLevelAndQuotedValues) {
  LogRecord r = record("two\nlines\tand \x01", {{"k", "a b"}, {"n", "7", true}, {"q", "say \"hi\""}, {"e", ""}});
  r.suppressed = 3;
  EXPECT_EQ(mcpfan::format_log_record(r, LogFormat::Text),
            "2025-11-28T01:52:00.123Z WARN mcpfan: two\\nlines\\tand \\x01 k=\"a b\" n=7 q=\"say \\\"hi\\\"\" e=\"\" "
            "(3 similar lines suppressed)\n");
}

TEST(LogFormat, JsonEscapesAndReplacesInvalidUtf8) {
  LogRecord r = record("q\"\\\n\x01 caf\xc3\xa9 bad\xff end", {{"n", "42", true}, {"notnum", "4x", true}, {"s", "v"}});
  EXPECT_EQ(mcpfan::format_log_record(r, LogFormat::Json),
            "{\"ts\":\"2025-11-28T01:52:00.123Z\",\"level\":\"warn\",\"kind\":\"test_kind\","
            "\"msg\":\"q\\\"\\\\\\n\\u0001 caf\xc3\xa9 bad\\ufffd end\",\"n\":42,\"notnum\":\"4x\",\"s\":\"v\"}\n");
  r.suppressed = 5;
  EXPECT_NE(mcpfan::format_log_record(r, LogFormat::Json).find(",\"suppressed\":5,"), std::string::npos);
}

TEST(LogFormat, LevelNamesRoundTrip) {
  for (LogLevel l : {LogLevel::Debug, LogLevel::Info, LogLevel::Warn, LogLevel::Error}) {
    EXPECT_EQ(mcpfan::parse_log_level(mcpfan::log_level_name(l)), l);
  }
  EXPECT_EQ(mcpfan::parse_log_level("warning"), LogLevel::Warn);
  EXPECT_FALSE(mcpfan::parse_log_level("verbose"));
}

}  // namespace

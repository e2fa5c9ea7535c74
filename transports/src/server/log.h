#pragma once
// The server's log, which never blocks a worker loop (tests/integration/log_test.cc).
//
// A Logger belongs to one Server (ServerState). A call filters by level, applies the per-kind
// rate limit (at most kBurst at once, then kPerSecond per second; what is suppressed is
// counted into the next record of that kind, or a summary a second later), and queues the
// record (bounded: a full queue drops it, counted). The Logger's own thread hands records to
// the sink: the host's (ServerConfig::log.sink) or the built-in one, which formats the line
// and queues it for the process-wide stderr writer (transport/log.h write_stderr_log).
//
// Call sites do not carry a Logger around: each thread the Server runs (its worker loops,
// the backplane's loop) binds its Server's Logger for its lifetime (Bind), and line() logs
// to the bound one. On a thread that bound none, line() uses the process default: the
// built-in stderr sink, text, level info. Threads the Server does not own (nats.c's) call
// a Logger directly.
//
// Thread-safe; callable from any thread. The Logger's thread starts with the first record
// and is joined by stop() (or the destructor) after delivering what was queued.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "mcpfan/transport/log.h"

namespace mcpfan::detail::log {

class Logger {
 public:
  /** `sink` empty: the built-in stderr sink in `format`. */
  Logger(LogSink sink, LogLevel min_level, LogFormat format);
  ~Logger();
  Logger(const Logger&) = delete;
  Logger& operator=(const Logger&) = delete;

  [[nodiscard]] bool enabled(LogLevel level) const noexcept { return level >= min_level_; }
  /** Queues a record (`kind` a string literal); never blocks on the sink. */
  void write(LogLevel level, std::string_view kind, std::string message, std::vector<LogField> fields = {}) noexcept;
  /** Delivers what is queued (and pending summaries), joins the thread; later records are dropped. Idempotent. */
  void stop() noexcept;

 private:
  struct Bucket {
    double tokens = 0;
    double last = 0;             // steady seconds, 0: never
    std::uint64_t suppressed = 0;
    double suppressed_since = 0;  // the first suppression not yet reported
    LogLevel level = LogLevel::Debug;  // the highest of the suppressed ones
  };
  void run();
  void deliver(const LogRecord& r) noexcept;
  void take_summaries(double now, bool all, std::vector<LogRecord>& out);

  const LogSink sink_;
  const LogLevel min_level_;
  const LogFormat format_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<LogRecord> queue_;
  std::unordered_map<std::string_view, Bucket> buckets_;  // kinds are string literals
  std::size_t unreported_ = 0;  // buckets with suppressed lines not yet reported
  bool started_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

/** Binds `logger` to this thread for the Bind's lifetime (nests; restores the previous). */
class Bind {
 public:
  explicit Bind(Logger* logger) noexcept;
  ~Bind();
  Bind(const Bind&) = delete;
  Bind& operator=(const Bind&) = delete;

 private:
  Logger* previous_;
};

/** The thread's bound Logger, or the process default. */
[[nodiscard]] Logger& current() noexcept;

/** Logs to current(). `kind` is a string literal naming the kind of event. */
inline void line(LogLevel level, std::string_view kind, std::string message,
                 std::vector<LogField> fields = {}) noexcept {
  current().write(level, kind, std::move(message), std::move(fields));
}
/** A warning: what the call sites logged before levels existed. */
inline void line(std::string_view kind, std::string message) noexcept {
  line(LogLevel::Warn, kind, std::move(message));
}
[[nodiscard]] inline bool enabled(LogLevel level) noexcept { return current().enabled(level); }

/** A field from a number. */
template <class N>
[[nodiscard]] LogField num(std::string_view key, N n) {
  return LogField{key, std::to_string(n), true};
}

/** Records (and stderr lines) dropped because a queue was full, and suppressed by the rate limit, in this process. */
[[nodiscard]] std::uint64_t dropped() noexcept;
[[nodiscard]] std::uint64_t suppressed() noexcept;
void count_dropped() noexcept;

}  // namespace mcpfan::detail::log

namespace mcpfan {
enum class CloseReason : std::uint8_t;  // mcpfan/shard.h
}

namespace mcpfan::detail {
/** Logs a stream the shard closed (a slow consumer: warn; a failed write: warn; Ended: nothing). On its loop. */
void log_stream_close(CloseReason reason, std::string_view transport) noexcept;
}  // namespace mcpfan::detail

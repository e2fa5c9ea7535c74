#pragma once
/**
 * The server's log records, and the sink an embedding host installs to receive them
 * (ServerConfig::log.sink, ServerConfig::log.level).
 *
 * What is logged (Server, see server.h "Logging"): NATS connect, disconnect, reconnect, the
 * outage queue's release and a first connect that fails; upstream failures; client and
 * publisher authentication failures; streams closed as slow consumers; every limit hit
 * (mcpfan_limit_hits_total); worker problems (a listener that fails, io_uring refused).
 * Each kind of record is rate-limited: at most 20 at once, then 10 a second; what is
 * suppressed is counted in the next record of that kind (LogRecord::suppressed), or, if none
 * comes within a second, in a summary record of that kind.
 *
 * Thread affinity of a sink: see LogSink. The free functions here are thread-safe.
 */
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpfan {

/** Severity; a record below ServerConfig::log.level is not built, queued or counted. */
enum class LogLevel : std::uint8_t { Debug, Info, Warn, Error };

/** "debug", "info", "warn", "error": the --log-level values and the JSON "level" key. */
[[nodiscard]] std::string_view log_level_name(LogLevel level) noexcept;
/** The inverse of log_level_name() ("warning" is accepted for "warn"); nullopt for anything else. */
[[nodiscard]] std::optional<LogLevel> parse_log_level(std::string_view name) noexcept;

/** How the built-in stderr sink writes a record: one line of text, or one JSON object per line. */
enum class LogFormat : std::uint8_t { Text, Json };

/** One key=value of a record. `key` is a string literal (static storage), never ts/level/kind/msg/suppressed. */
struct LogField {
  std::string_view key;
  std::string value;
  bool number = false;  // JSON: written unquoted (the caller made it a decimal number)
};

/**
 * One record. Owns its strings except `kind` and the fields' keys, which are string literals.
 * A sink may keep a copy; the reference it is given is valid only during the call.
 */
struct LogRecord {
  std::chrono::system_clock::time_point time;  // when the event was logged (not when the sink runs)
  LogLevel level = LogLevel::Info;
  std::string_view kind;  // what happened, snake_case ("nats_disconnected", "limit_hit", ...): the rate limit's key
  std::string message;         // one sentence for a person; may hold any bytes (formatting escapes them)
  std::vector<LogField> fields;
  std::uint64_t suppressed = 0;  // records of this kind the rate limit dropped since the last one delivered
};

/**
 * Receives the Server's records. Called on the Server's log thread, one record at a time
 * and never concurrently (in order per kind; never on a worker loop), from the first record
 * until Server::stop() (or the destructor, when start() failed) has delivered what was
 * queued and returned: then never again. It may block for a moment (a worker only queues),
 * but while it blocks records queue up (1,024 at most; past that they are dropped and
 * counted in mcpfan_log_lines_dropped_total) and stop() waits for it. An exception it throws
 * is swallowed and the record counted as dropped. It must not call the Server's stop() or
 * destroy it.
 */
using LogSink = std::function<void(const LogRecord&)>;

/**
 * One line, '\n'-terminated, as the built-in sink writes it.
 *  Text: `2026-11-28T01:52:00.123Z INFO mcpfan: MESSAGE key=value ... (N similar lines suppressed)`
 *        (control bytes escaped, values with spaces, quotes or '=' quoted).
 *  Json: {"ts":"2026-11-28T01:52:00.123Z","level":"info","kind":"...","msg":"...",
 *        ["suppressed":N,] <fields>} (invalid UTF-8 replaced by U+FFFD).
 */
[[nodiscard]] std::string format_log_record(const LogRecord& record, LogFormat format);

/**
 * The built-in sink's output: formats the record and queues the line for a writer thread
 * that writes it to stderr, so a stderr nobody drains never blocks the caller; a full queue
 * (1,024 lines) drops the line, counted in mcpfan_log_lines_dropped_total. Thread-safe. The
 * mcpfan program logs its own lines (start-up, reload, stop) through it, so that they keep
 * their order with the Server's.
 */
void write_stderr_log(const LogRecord& record, LogFormat format) noexcept;
/**
 * Waits until the writer has written every line queued before the call, or `within` has
 * passed (a stderr nobody drains); true when written. Call before exiting: the writer
 * thread is never joined, and lines still queued at exit are lost.
 */
bool flush_stderr_log(std::chrono::milliseconds within) noexcept;

}  // namespace mcpfan

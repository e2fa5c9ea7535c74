#include "server/log.h"

#include <atomic>
#include <chrono>

#include "mcpfan/shard.h"

namespace mcpfan::detail::log {

namespace {

constexpr std::size_t kQueueRecords = 1024;
constexpr double kPerSecond = 10;
constexpr double kBurst = 20;
// Suppressed records no later record of their kind reported are summarised after this long.
constexpr double kSummaryAfterS = 1.0;

std::atomic<std::uint64_t> g_dropped{0};
std::atomic<std::uint64_t> g_suppressed{0};

thread_local Logger* t_bound = nullptr;

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Logger::Logger(LogSink sink, LogLevel min_level, LogFormat format)
    : sink_(std::move(sink)), min_level_(min_level), format_(format) {}

Logger::~Logger() { stop(); }

void Logger::write(LogLevel level, std::string_view kind, std::string message, std::vector<LogField> fields) noexcept {
  if (!enabled(level)) return;
  try {
    const auto time = std::chrono::system_clock::now();
    const double now = steady_seconds();
    std::lock_guard lock(mu_);
    if (stopping_) {
      count_dropped();
      return;
    }
    Bucket& b = buckets_[kind];
    if (b.last == 0) b.tokens = kBurst;
    b.tokens = std::min(kBurst, b.tokens + (now - b.last) * kPerSecond);
    b.last = now;
    if (b.tokens < 1 || queue_.size() >= kQueueRecords) {
      if (b.tokens < 1) {
        g_suppressed.fetch_add(1, std::memory_order_relaxed);
      } else {
        count_dropped();  // the sink does not keep up: dropped, but still reported as suppressed
      }
      b.level = std::max(b.level, level);
      if (b.suppressed++ == 0) {
        b.suppressed_since = now;
        if (unreported_++ == 0 && started_) cv_.notify_one();  // the thread starts its summary clock
      }
      return;
    }
    b.tokens -= 1;
    LogRecord r{time, level, kind, std::move(message), std::move(fields), b.suppressed};
    if (b.suppressed > 0) {
      b.suppressed = 0;
      b.level = LogLevel::Debug;
      --unreported_;
    }
    queue_.push_back(std::move(r));
    if (!started_) {
      thread_ = std::thread([this] { run(); });
      started_ = true;
    }
    cv_.notify_one();
  } catch (...) {  // out of memory, or no thread: the record is lost, the caller is not
    count_dropped();
  }
}

void Logger::take_summaries(double now, bool all, std::vector<LogRecord>& out) {
  if (unreported_ == 0) return;
  const auto time = std::chrono::system_clock::now();
  for (auto& [kind, b] : buckets_) {
    if (b.suppressed == 0 || (!all && now - b.suppressed_since < kSummaryAfterS)) continue;
    out.push_back(LogRecord{time, b.level, kind, "rate limit on " + std::string(kind) + " lines", {}, b.suppressed});
    b.suppressed = 0;
    b.level = LogLevel::Debug;
    --unreported_;
  }
}

void Logger::deliver(const LogRecord& r) noexcept {
  if (!sink_) return write_stderr_log(r, format_);
  try {
    sink_(r);
  } catch (...) {  // the host's bug; the Server goes on
    count_dropped();
  }
}

void Logger::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    auto ready = [&] { return !queue_.empty() || stopping_; };
    if (unreported_ > 0) {
      cv_.wait_for(lock, std::chrono::milliseconds(250), ready);
    } else {
      cv_.wait(lock, [&] { return ready() || unreported_ > 0; });
    }
    std::deque<LogRecord> batch;
    batch.swap(queue_);
    const bool last = stopping_;  // nothing is queued after stopping_: this batch is the last
    std::vector<LogRecord> summaries;
    try {
      take_summaries(steady_seconds(), last, summaries);
    } catch (...) {
      count_dropped();
    }
    lock.unlock();
    for (const LogRecord& r : batch) deliver(r);
    for (const LogRecord& r : summaries) deliver(r);
    if (last) return;
    lock.lock();
  }
}

void Logger::stop() noexcept {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    cv_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

Bind::Bind(Logger* logger) noexcept : previous_(t_bound) { t_bound = logger; }
Bind::~Bind() { t_bound = previous_; }

Logger& current() noexcept {
  if (t_bound) return *t_bound;
  // Threads no Server runs: the built-in sink, text, info. Never destroyed, so its thread is
  // never joined: at exit, a thread blocked in a sink must not hold the process up.
  static Logger* fallback = new Logger({}, LogLevel::Info, LogFormat::Text);
  return *fallback;
}

std::uint64_t dropped() noexcept { return g_dropped.load(std::memory_order_relaxed); }
std::uint64_t suppressed() noexcept { return g_suppressed.load(std::memory_order_relaxed); }
void count_dropped() noexcept { g_dropped.fetch_add(1, std::memory_order_relaxed); }

}  // namespace mcpfan::detail::log

namespace mcpfan::detail {

void log_stream_close(CloseReason reason, std::string_view transport) noexcept {
  if (reason == CloseReason::Ended || !log::enabled(LogLevel::Warn)) return;
  try {
    if (reason == CloseReason::SlowConsumer) {
      log::line(LogLevel::Warn, "slow_consumer_close",
                "stream closed as a slow consumer: more unwritten bytes than --max-pending-bytes",
                {{"transport", std::string(transport)}});
    } else {
      log::line(LogLevel::Warn, "stream_failed", "stream closed: writing to it failed",
                {{"transport", std::string(transport)}});
    }
  } catch (...) {
    log::count_dropped();
  }
}

}  // namespace mcpfan::detail

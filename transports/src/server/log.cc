#include "server/log.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>

namespace mcpfan::detail::log {

namespace {

constexpr std::size_t kQueueLines = 1024;
constexpr double kPerSecond = 10;
constexpr double kBurst = 20;

// Never destroyed, and its thread is detached: at exit, a writer blocked on a stderr nobody
// drains must not hold the process up (lines still queued then are lost).
class Logger {
 public:
  void line(std::string_view kind, std::string text) {
    using Clock = std::chrono::steady_clock;
    std::lock_guard lock(mu_);
    Bucket& b = buckets_[kind];
    double now = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
    if (b.last == 0) b.tokens = kBurst;
    b.tokens = std::min(kBurst, b.tokens + (now - b.last) * kPerSecond);
    b.last = now;
    if (b.tokens < 1) {
      ++b.suppressed;
      suppressed_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (queue_.size() >= kQueueLines) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    b.tokens -= 1;
    std::string out = "mcpfan: " + std::move(text);
    if (b.suppressed) {
      out += " (" + std::to_string(b.suppressed) + " similar lines suppressed)";
      b.suppressed = 0;
    }
    out += '\n';
    queue_.push_back(std::move(out));
    if (!started_) {
      std::thread([this] { run(); }).detach();
      started_ = true;
    }
    cv_.notify_one();
  }

  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint64_t> suppressed_{0};

 private:
  struct Bucket {
    double tokens = 0;
    double last = 0;
    std::uint64_t suppressed = 0;
  };

  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      std::string out = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // Blocking here is this thread's whole job: the workers only queued the line.
      for (std::size_t off = 0; off < out.size();) {
        ssize_t n = ::write(STDERR_FILENO, out.data() + off, out.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_map<std::string_view, Bucket> buckets_;  // kinds are static strings
  bool started_ = false;
};

Logger& logger() {
  static Logger* instance = new Logger();
  return *instance;
}

}  // namespace

void line(std::string_view kind, std::string text) noexcept {
  try {
    logger().line(kind, std::move(text));
  } catch (...) {  // out of memory: the line is lost, the caller is not
    logger().dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::uint64_t dropped() noexcept { return logger().dropped_.load(std::memory_order_relaxed); }
std::uint64_t suppressed() noexcept { return logger().suppressed_.load(std::memory_order_relaxed); }

}  // namespace mcpfan::detail::log

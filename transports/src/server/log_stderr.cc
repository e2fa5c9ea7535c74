// The built-in sink's stderr writer (transport/log.h write_stderr_log, flush_stderr_log).
//
// stderr may be a pipe nobody drains (a supervisor, a test harness, a full terminal): a
// thread that write()s there stops. Lines go instead to a bounded queue that one thread
// writes out; a full queue drops the line (counted). tests/integration/log_test.cc.
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "server/log.h"

namespace mcpfan {

namespace {

constexpr std::size_t kQueueLines = 1024;

// Never destroyed, and its thread is detached: at exit, a writer blocked on a stderr nobody
// drains must not hold the process up (lines still queued then are lost).
class StderrWriter {
 public:
  void push(std::string line) {
    std::lock_guard lock(mu_);
    if (queue_.size() >= kQueueLines) {
      detail::log::count_dropped();
      return;
    }
    if (!started_) {
      std::thread([this] { run(); }).detach();
      started_ = true;
    }
    queue_.push_back(std::move(line));
    ++queued_;
    cv_.notify_all();
  }

  bool flush(std::chrono::milliseconds within) {
    std::unique_lock lock(mu_);
    const std::uint64_t target = queued_;
    return cv_.wait_for(lock, within, [&] { return done_ >= target; });
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      std::string out = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      // Blocking here is this thread's whole job: the callers only queued the line.
      for (std::size_t off = 0; off < out.size();) {
        ssize_t n = ::write(STDERR_FILENO, out.data() + off, out.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      lock.lock();
      ++done_;
      cv_.notify_all();  // flush() waits for it
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::uint64_t queued_ = 0;  // lines ever queued
  std::uint64_t done_ = 0;    // of them, written (or failed)
  bool started_ = false;
};

StderrWriter& writer() {
  static StderrWriter* instance = new StderrWriter();
  return *instance;
}

}  // namespace

void write_stderr_log(const LogRecord& record, LogFormat format) noexcept {
  try {
    writer().push(format_log_record(record, format));
  } catch (...) {  // out of memory, or no thread: the line is lost, the caller is not
    detail::log::count_dropped();
  }
}

bool flush_stderr_log(std::chrono::milliseconds within) noexcept {
  try {
    return writer().flush(within);
  } catch (...) {
    return false;
  }
}

}  // namespace mcpfan

// ChildProcess: one forked/exec'd child with its stderr collected by a thread.
// Every wait is bounded; the child is stopped by PID (SIGTERM, then SIGKILL).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace itest {

class ChildProcess {
 public:
  ChildProcess() = default;
  ~ChildProcess();  // Stop()
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Runs argv[0] with `argv`. The child's stdin/stdout are `child_stdin`/`child_stdout`
  // (/dev/null when -1; the caller keeps and closes its fds); stderr goes to a pipe read
  // by a thread. The child gets SIGKILL if the test binary dies. False (see error()) when
  // the pipe or fork fails.
  bool Spawn(const std::vector<std::string>& argv, int child_stdin = -1, int child_stdout = -1);
  // SIGTERM; SIGKILL if not exited within 5 s; reaps; joins the stderr reader. Idempotent.
  void Stop();

  const std::string& error() const { return error_; }
  pid_t pid() const { return pid_; }
  bool Signal(int sig);
  // Reaps the process if it exits within `timeout`. True once it has exited.
  bool WaitExit(std::chrono::milliseconds timeout);
  bool exited() const { return status_.has_value(); }
  std::optional<int> wait_status() const { return status_; }
  // "exit 0", "exit 3", "signal 9 (Killed)", "running".
  std::string DescribeStatus() const;

  std::string Stderr() const;
  bool WaitForStderr(std::string_view needle, std::chrono::milliseconds timeout) const;
  // Waits until `pred(stderr so far)` holds or stderr closes. Returns pred's last value;
  // *closed (when given) says whether stderr had closed.
  bool WaitStderrUntil(const std::function<bool(const std::string&)>& pred,
                       std::chrono::milliseconds timeout, bool* closed = nullptr) const;
  // "---- <what> stderr (pid N, <status>) ----" + the first 20,000 bytes to std::cerr.
  void PrintStderr(std::string_view what) const;

 private:
  void ReadStderrLoop();

  pid_t pid_ = -1;
  int stderr_fd_ = -1;
  std::string error_;
  std::optional<int> status_;
  std::thread reader_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::string stderr_;
  bool stderr_eof_ = false;
};

}  // namespace itest

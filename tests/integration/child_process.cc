// ChildProcess: fork/exec, stderr reader thread, signals, bounded waits, status text.
#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

namespace itest {

using Ms = std::chrono::milliseconds;

ChildProcess::~ChildProcess() { Stop(); }

bool ChildProcess::Spawn(const std::vector<std::string>& argv_s, int child_stdin, int child_stdout) {
  std::vector<std::string> args = argv_s;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error_ = std::string("pipe2: ") + std::strerror(errno);
    return false;
  }
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec. dup2 clears FD_CLOEXEC on 0, 1, 2.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = (child_stdin < 0 || child_stdout < 0) ? open("/dev/null", O_RDWR) : -1;
    int in = child_stdin >= 0 ? child_stdin : devnull;
    int out = child_stdout >= 0 ? child_stdout : devnull;
    if (in >= 0) dup2(in, 0);
    if (out >= 0) dup2(out, 1);
    dup2(fds[1], 2);
    execv(argv[0], argv.data());
    const char msg[] = "itest: execv failed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  close(fds[1]);
  stderr_fd_ = fds[0];
  reader_ = std::thread([this] { ReadStderrLoop(); });
  return true;
}

void ChildProcess::Stop() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGTERM);
    if (!WaitExit(Ms(5000))) {
      kill(pid_, SIGKILL);
      int st = 0;
      if (waitpid(pid_, &st, 0) == pid_) status_ = st;
    }
  }
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) close(stderr_fd_);
  stderr_fd_ = -1;
}

void ChildProcess::ReadStderrLoop() {
  char buf[4096];
  for (;;) {
    ssize_t n = read(stderr_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lk(mu_);
    if (n <= 0) {
      stderr_eof_ = true;
      cv_.notify_all();
      return;
    }
    stderr_.append(buf, size_t(n));
    cv_.notify_all();
  }
}

bool ChildProcess::Signal(int sig) { return pid_ > 0 && !status_ && kill(pid_, sig) == 0; }

bool ChildProcess::WaitExit(Ms timeout) {
  if (status_) return true;
  if (pid_ <= 0) return false;
  auto end = std::chrono::steady_clock::now() + timeout;
  for (;;) {  // bounded by `end`
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      // The child is gone, but its last stderr bytes may still be in the pipe, not yet read
      // by the reader thread: wait for its EOF (every writer closed), so that Stderr() is
      // complete once WaitExit() returns true. (Auth.OpenListenerNeedsAuthOrInsecure once
      // read the stderr of an exited child before its last line, under a loaded machine.)
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::seconds(10), [&] { return stderr_eof_; });
      return true;
    }
    if (r < 0 && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(Ms(2));
  }
}

std::string ChildProcess::DescribeStatus() const {
  if (!status_) return "running";
  int st = *status_;
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    return "signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  }
  return "status " + std::to_string(st);
}

std::string ChildProcess::Stderr() const {
  std::lock_guard lk(mu_);
  return stderr_;
}

bool ChildProcess::WaitStderrUntil(const std::function<bool(const std::string&)>& pred, Ms timeout,
                                   bool* closed) const {
  std::unique_lock lk(mu_);
  bool held = false;
  cv_.wait_for(lk, timeout, [&] {
    held = pred(stderr_);
    return held || stderr_eof_;
  });
  if (closed) *closed = stderr_eof_;
  return held;
}

bool ChildProcess::WaitForStderr(std::string_view needle, Ms timeout) const {
  return WaitStderrUntil([&](const std::string& s) { return s.find(needle) != std::string::npos; }, timeout);
}

void ChildProcess::PrintStderr(std::string_view what) const {
  std::cerr << "---- " << what << " stderr (pid " << pid_ << ", " << DescribeStatus() << ") ----\n"
            << Stderr().substr(0, 20000) << "---- end mcpfan stderr ----\n";
}

}  // namespace itest

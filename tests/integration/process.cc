// ServerProcess: fork/exec the real mcpfan, learn its port from stderr, stop it.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "harness.h"

#ifndef MCPFAN_BIN
#error "MCPFAN_BIN must name the mcpfan binary"
#endif

namespace itest {
namespace {

std::string BinaryPath() {
  const char* env = std::getenv("MCPFAN_BIN");
  return env && *env ? env : MCPFAN_BIN;
}

// Port from a line matching `listening on ([0-9.]+|\[[0-9a-f:]+\]):([0-9]+)`, or 0.
// (Hand-rolled: std::regex trips -Wmaybe-uninitialized under GCC 12 sanitizers.)
int PortInLine(std::string_view line) {
  constexpr std::string_view kKey = "listening on ";
  for (size_t at = line.find(kKey); at != std::string_view::npos; at = line.find(kKey, at + 1)) {
    std::string_view rest = line.substr(at + kKey.size());
    size_t i = 0;
    if (!rest.empty() && rest[0] == '[') {
      i = 1;
      while (i < rest.size() && (std::isxdigit(static_cast<unsigned char>(rest[i])) || rest[i] == ':')) ++i;
      if (i == 1 || i >= rest.size() || rest[i] != ']') continue;
      ++i;
    } else {
      while (i < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[i])) || rest[i] == '.')) ++i;
      if (i == 0) continue;
    }
    if (i >= rest.size() || rest[i] != ':') continue;
    size_t d = ++i;
    int port = 0;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && i - d < 6) {
      port = port * 10 + (rest[i] - '0');
      ++i;
    }
    if (i > d && port > 0 && port < 65536) return port;
  }
  return 0;
}

// The port from the first complete stderr line that names one, or 0.
int FindPort(const std::string& text) {
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    if (int port = PortInLine(std::string_view(text).substr(start, nl - start))) return port;
    start = nl + 1;
  }
  return 0;
}

}  // namespace

ServerProcess::ServerProcess(std::vector<std::string> args, Ms start_timeout) {
  args.insert(args.begin(), {"--listen", "127.0.0.1:0"});
  std::string bin = BinaryPath();
  std::vector<std::string> argv_s{bin};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    error_ = std::string("pipe2: ") + std::strerror(errno);
    return;
  }
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return;
  }
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
    }
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

  std::unique_lock lk(mu_);
  bool found = cv_.wait_for(lk, start_timeout, [&] {
    port_ = FindPort(stderr_);
    return port_ > 0 || stderr_eof_;
  });
  if (port_ <= 0) {
    error_ = (found ? "mcpfan exited/closed stderr before logging its port"
                    : "mcpfan did not log 'listening on 127.0.0.1:PORT' in time") +
             std::string("; binary=") + bin + "; stderr so far:\n" + stderr_;
  }
}

ServerProcess::~ServerProcess() {
  Stop();
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- mcpfan stderr (pid " << pid_ << ", " << DescribeStatus() << ") ----\n"
              << Stderr().substr(0, 20000) << "---- end mcpfan stderr ----\n";
  }
}

void ServerProcess::Stop() {
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

void ServerProcess::ReadStderrLoop() {
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

bool ServerProcess::Signal(int sig) { return pid_ > 0 && !status_ && kill(pid_, sig) == 0; }

bool ServerProcess::WaitExit(Ms timeout) {
  if (status_) return true;
  if (pid_ <= 0) return false;
  Deadline end = After(timeout);
  for (;;) {  // bounded by `end`
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      return true;
    }
    if (r < 0 && errno != EINTR) return false;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(Ms(2));
  }
}

std::string ServerProcess::DescribeStatus() const {
  if (!status_) return "running";
  int st = *status_;
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) {
    return "signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  }
  return "status " + std::to_string(st);
}

std::string ServerProcess::Stderr() const {
  std::lock_guard lk(mu_);
  return stderr_;
}

bool ServerProcess::WaitForStderr(std::string_view needle, Ms timeout) const {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] {
    return stderr_.find(needle) != std::string::npos || stderr_eof_;
  }) && stderr_.find(needle) != std::string::npos;
}

}  // namespace itest

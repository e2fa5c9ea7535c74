#include "control_signals.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcpfan::tool {
namespace {

sigset_t control_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

bool ControlSignals::block(std::string& err) {
  sigset_t set = control_set();
  if (int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    err = std::string("cannot block SIGINT/SIGTERM/SIGHUP: ") + std::strerror(rc);
    return false;
  }
  return true;
}

bool ControlSignals::start(uv_loop_t* loop, Callback cb, void* arg, std::string& err) {
  sigset_t set = control_set();
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    err = std::string("signalfd: ") + std::strerror(errno);
    return false;
  }
  cb_ = cb;
  arg_ = arg;
  if (int rc = uv_poll_init(loop, &poll_, fd_); rc != 0) {
    ::close(fd_);
    fd_ = -1;
    err = std::string("cannot watch the signalfd: ") + uv_strerror(rc);
    return false;
  }
  poll_.data = this;
  if (int rc = uv_poll_start(&poll_, UV_READABLE, &ControlSignals::on_readable); rc != 0) {
    err = std::string("cannot watch the signalfd: ") + uv_strerror(rc);
    return false;  // close() still closes the handle and the descriptor
  }
  return true;
}

void ControlSignals::on_readable(uv_poll_t* poll, int status, int) {
  auto* self = static_cast<ControlSignals*>(poll->data);
  if (status < 0) return;
  // Bounded: the kernel queues at most one of each standard signal, so three reads drain it.
  for (int i = 0; i < 8; ++i) {
    signalfd_siginfo info;
    ssize_t n = ::read(self->fd_, &info, sizeof info);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof info)) return;
    self->cb_(static_cast<int>(info.ssi_signo), self->arg_);
  }
}

void ControlSignals::close() {
  if (fd_ < 0) return;
  uv_close(reinterpret_cast<uv_handle_t*>(&poll_), [](uv_handle_t* h) {
    auto* self = static_cast<ControlSignals*>(h->data);
    ::close(self->fd_);
    self->fd_ = -1;
  });
}

}  // namespace mcpfan::tool

// Deadline-bounded reads, writes and multi-fd polling on non-blocking fds.
#include "fd_io.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace itest {

int MsLeft(Deadline d) {
  auto left = std::chrono::duration_cast<Ms>(d - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

void SetErr(std::string* err, std::string msg) {
  if (err) *err = std::move(msg);
}

void SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void IgnoreSigpipe() {
  static const bool done = [] {
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

bool WriteAll(int fd, bool socket, std::string_view data, Deadline end, std::string_view timeout_msg,
              std::string* err) {
  while (!data.empty()) {
    ssize_t n = socket ? send(fd, data.data(), data.size(), MSG_NOSIGNAL) : write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      int r = poll(&p, 1, MsLeft(end));
      if (r == 0) {
        SetErr(err, std::string(timeout_msg));
        return false;
      }
      continue;
    }
    SetErr(err, std::string("send: ") + std::strerror(errno));
    return false;
  }
  return true;
}

int ReadSomeInto(int fd, std::string& out, Deadline deadline) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, size_t(n));
      return int(n);
    }
    if (n == 0) return 0;
    if (errno == EINTR) continue;
    if (errno == ECONNRESET || errno == EPIPE) return 0;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -2;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MsLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -2;
    if (r == 0) return -1;
  }
}

bool ReadReadyInto(int fd, std::string& out) {
  char buf[65536];
  for (int i = 0; i < 64; ++i) {  // bounded: at most 4 MiB per call
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;
  }
  return true;
}

void PollEach(size_t n, const std::function<int(size_t)>& wait_fd,
              const std::function<void(size_t)>& on_ready, Deadline end) {
  std::vector<pollfd> fds;
  std::vector<size_t> waiting;
  for (;;) {
    fds.clear();
    waiting.clear();
    for (size_t i = 0; i < n; ++i) {
      int fd = wait_fd(i);
      if (fd < 0) continue;
      fds.push_back({fd, POLLIN, 0});
      waiting.push_back(i);
    }
    int left = MsLeft(end);
    if (waiting.empty() || left <= 0) break;
    int r = poll(fds.data(), fds.size(), std::min(left, 200));
    if (r < 0 && errno != EINTR) break;
    for (size_t k = 0; r > 0 && k < fds.size(); ++k) {
      if (fds[k].revents != 0) on_ready(waiting[k]);
    }
  }
}

}  // namespace itest

// Unix-domain sockets for the line-framed clients: a temp directory for the socket
// file and a bounded, retrying connect.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "fd_io.h"
#include "stdio_client.h"

namespace itest {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mcpfan-itest-XXXXXX";
  // sun_path holds 107 bytes: fall back to /tmp when $TMPDIR is deep.
  if (tmpl.size() > 70) tmpl = "/tmp/mcpfan-itest-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool ConnectUnix(LineChannel& ch, const std::string& path, Ms timeout, std::string* err) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    SetErr(err, "socket path too long: " + path);
    return false;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Deadline end = After(timeout);
  for (int attempt = 0;; ++attempt) {  // bounded by `end`
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      SetErr(err, std::string("socket: ") + std::strerror(errno));
      return false;
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ch.Attach(fd, fd);
      return true;
    }
    int e = errno;
    close(fd);
    // EAGAIN: the listener's backlog is full; ENOENT/ECONNREFUSED: not (yet) listening.
    bool retry = e == EAGAIN || e == EINTR || e == ENOENT || e == ECONNREFUSED;
    if (!retry || Clock::now() >= end) {
      SetErr(err,
             "connect " + path + ": " + std::strerror(e) + " (after " + std::to_string(attempt + 1) + " attempts)");
      return false;
    }
    std::this_thread::sleep_for(Ms(e == EAGAIN ? 1 : 10));
  }
}


}  // namespace itest

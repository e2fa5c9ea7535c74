// Deadline-bounded I/O on non-blocking fds (sockets and pipes), shared by the HTTP
// client (Conn) and the line-framed clients (LineChannel). Every wait is poll() with a
// deadline; nothing blocks without one.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "harness.h"

namespace itest {

// Milliseconds until `d` for poll(): 0 once passed.
int MsLeft(Deadline d);
void SetErr(std::string* err, std::string msg);
void SetNonBlocking(int fd);
// SIGPIPE ignored from now on (once per process; inherited by children forked later), so
// writing to a pipe whose reader died fails with EPIPE instead of killing the test binary.
void IgnoreSigpipe();

// Writes all of `data` to `fd` (send(MSG_NOSIGNAL) when `socket`, else write()),
// waiting for POLLOUT until `end`. On timeout *err = `timeout_msg`; on error "send: ...".
bool WriteAll(int fd, bool socket, std::string_view data, Deadline end, std::string_view timeout_msg,
              std::string* err);
// One read into `out`, waiting for POLLIN until `deadline`.
// >0: bytes appended; 0: peer closed (EOF, ECONNRESET, EPIPE); -1: deadline; -2: error.
int ReadSomeInto(int fd, std::string& out, Deadline deadline);
// Reads whatever is ready without waiting (at most 4 MiB). False once at EOF or error.
bool ReadReadyInto(int fd, std::string& out);

// Polls many fds for input until none is left to wait on or `end` passes (each poll()
// waits at most 200 ms). `wait_fd(i)` is the fd item i still waits on, or -1 when it is
// done; `on_ready(i)` reads item i after poll() reported its fd.
void PollEach(size_t n, const std::function<int(size_t)>& wait_fd,
              const std::function<void(size_t)>& on_ready, Deadline end);

}  // namespace itest

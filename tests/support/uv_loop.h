#pragma once
// Test helpers for unit tests that drive a libuv loop of their own over real loopback
// sockets (tests/transports): a connected pair of sockets, and running the loop until a
// condition holds, bounded in time.
#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cstdint>

#include <utility>

#include "support/loopback.h"

namespace mcpfan::testing {

/** A connected loopback TCP pair: {accepted end, connecting end}; -1 where it failed. */
inline std::pair<int, int> loopback_pair() {
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(lfd, 1) != 0 ||
      ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (lfd >= 0) ::close(lfd);
    return {-1, -1};
  }
  int peer = connect_loopback(ntohs(a.sin_port));
  int fd = peer >= 0 ? ::accept(lfd, nullptr, nullptr) : -1;
  ::close(lfd);
  return {fd, peer};
}

/** Whether `fd` has bytes (or an EOF) to read now. */
inline bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

/**
 * Runs `loop` until pred() holds; false after `bound_ms` (a timer of its own stops it). The
 * bound only ends a test that would hang: a sanitizer build on a loaded machine may be slow.
 */
template <class P>
bool run_until(uv_loop_t* loop, P pred, std::uint64_t bound_ms = 10000) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  bool timed_out = false;
  t.data = &timed_out;
  uv_timer_start(&t, [](uv_timer_t* h) { *static_cast<bool*>(h->data) = true; }, bound_ms, 0);
  while (!pred() && !timed_out) uv_run(loop, UV_RUN_ONCE);
  uv_close(reinterpret_cast<uv_handle_t*>(&t), nullptr);
  uv_run(loop, UV_RUN_NOWAIT);
  return pred();
}

}  // namespace mcpfan::testing

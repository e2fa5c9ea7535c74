// ControlSignals: SIGINT, SIGTERM and SIGHUP, read from a signalfd on the controlling loop.
//
// Why not uv_signal_t: its handler runs asynchronously on whichever thread the kernel picks.
// Under ThreadSanitizer, which defers such handlers to the thread's next intercepted call, a
// SIGTERM sent right after start-up was now and then never handed to libuv at all (the signal
// no longer pending, libuv's pipe empty, every thread idle in epoll_wait), and CI failed twice
// on it; Shutdown.SignalAtStartUpIsNeverLost reproduced it against that handler. With a
// signalfd there is no handler at all: a signal stays pending in the kernel until the loop
// reads it.
//
// Thread affinity: block() on the main thread before any other thread starts (threads inherit
// the mask; one that did not block these signals would take them with their default action).
// start() and close() on the thread that runs `loop`; the callback runs there too.
// Lifetime: the object must outlive the loop's run after close() (the poll handle's close
// callback closes the descriptor).
#pragma once

#include <uv.h>

#include <string>

namespace mcpfan::tool {

class ControlSignals {
 public:
  using Callback = void (*)(int signo, void* arg);

  // Blocks SIGINT, SIGTERM and SIGHUP on the calling thread (and so in every thread it starts).
  static bool block(std::string& err);

  bool start(uv_loop_t* loop, Callback cb, void* arg, std::string& err);
  void close();

 private:
  static void on_readable(uv_poll_t* poll, int status, int events);

  uv_poll_t poll_{};
  int fd_ = -1;
  Callback cb_ = nullptr;
  void* arg_ = nullptr;
};

}  // namespace mcpfan::tool

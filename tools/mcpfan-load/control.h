// The barrier protocol of the controlled scenarios (--scenario receive|publish): a driver
// (bench/cluster/run.py) starts several load processes, waits for each one's "READY {...}"
// line on stdout, then sends commands on stdin, one per line, and reads one answer line per
// command ("WORD {json}"). Commands are read on the load generator's libuv loop, so the
// streams keep being read while a command waits; stdout is flushed after every line.
#pragma once

#include <uv.h>

#include <functional>
#include <string>

namespace mcpload {

class StdinCommands {
 public:
  // on_line gets each complete line (without the newline); at stdin's end it gets "quit".
  StdinCommands(uv_loop_t* loop, std::function<void(std::string)> on_line);
  StdinCommands(const StdinCommands&) = delete;
  StdinCommands& operator=(const StdinCommands&) = delete;
  // False when fd 0 cannot be read through libuv.
  bool Start();
  // Stops reading and closes the handle (run the loop afterwards so the close completes).
  void Close();

  // One answer line on stdout, flushed.
  static void Emit(const std::string& line);

 private:
  static void OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf);

  uv_loop_t* loop_;
  uv_pipe_t pipe_{};
  bool open_ = false;
  bool eof_sent_ = false;
  std::function<void(std::string)> on_line_;
  std::string carry_;
  char buf_[4096];
};

}  // namespace mcpload

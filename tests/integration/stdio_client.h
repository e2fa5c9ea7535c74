// Line-framed (stdio) MCP clients for the integration tests: a child `mcpfan --stdio`
// with its stdin/stdout on pipes, and Unix-domain socket connections to `--unix PATH`.
// Every read and write is poll() with a deadline; child processes are stopped by PID.
// Implemented in line_channel.cc, stdio_child.cc, unix_socket.cc, stdio_messages.cc.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace itest {

// A newline-delimited byte stream in both directions over non-blocking fds (a pipe
// pair or one socket). Keeps a transcript of every complete line received.
class LineChannel {
 public:
  LineChannel() = default;
  ~LineChannel();
  LineChannel(LineChannel&& o) noexcept;
  LineChannel& operator=(LineChannel&& o) noexcept;
  LineChannel(const LineChannel&) = delete;
  LineChannel& operator=(const LineChannel&) = delete;

  // Takes ownership; `read_fd` may equal `write_fd` (a socket). Both are made non-blocking.
  void Attach(int read_fd, int write_fd);

  bool Send(std::string_view bytes, Ms timeout = kIo, std::string* err = nullptr);
  bool SendLine(std::string_view json, Ms timeout = kIo, std::string* err = nullptr);

  // Next complete line (without its '\n'); nullopt on timeout or EOF.
  std::optional<std::string> NextLine(Ms timeout = kIo);
  // Next line, which must parse as JSON. `err` says why not (timeout, EOF, parse).
  std::optional<Json> NextJson(Ms timeout = kIo, std::string* err = nullptr);
  // Waits (bounded) until nothing more arrives for `quiet`; returns the lines that did.
  std::vector<std::string> DrainFor(Ms quiet);
  // Reads whatever is ready without waiting. False once at EOF (or error).
  bool ReadAvailable();
  // Reads until the peer closes its side. True if EOF came within `timeout`.
  bool WaitEof(Ms timeout);

  // Ends our sending direction: closes the pipe's write end / shutdown(SHUT_WR).
  void CloseWrite();
  void Close();

  bool eof() const { return eof_; }
  bool open() const { return rfd_ >= 0; }
  int read_fd() const { return rfd_; }
  std::deque<std::string>& lines() { return lines_; }             // received, not yet taken
  const std::vector<std::string>& transcript() const { return transcript_; }  // every line received
  const std::string& partial() const { return buf_; }             // bytes after the last '\n'

 private:
  int ReadSome(Deadline deadline);  // >0 bytes, 0 EOF, -1 timeout, -2 error
  void Split();

  int rfd_ = -1;
  int wfd_ = -1;
  bool eof_ = false;
  std::string buf_;
  std::deque<std::string> lines_;
  std::vector<std::string> transcript_;
};

// Reads from all channels (one poll() over their fds) until `done` holds for each one
// or the deadline passes. Returns how many satisfy `done`.
size_t PumpLines(const std::vector<LineChannel*>& chans, const std::function<bool(LineChannel&)>& done,
                 Ms timeout);

// `mcpfan --stdio --listen 127.0.0.1:0 <args>` with stdin/stdout on pipes held by the
// test and stderr collected by a thread (the HTTP port comes from its log line).
class StdioChild : private ChildProcess {
 public:
  explicit StdioChild(std::vector<std::string> args = {}, Ms start_timeout = kStart);
  ~StdioChild();  // SIGTERM, then SIGKILL after 5 s, by PID; reaps; prints stderr on failure
  StdioChild(const StdioChild&) = delete;
  StdioChild& operator=(const StdioChild&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  LineChannel& io() { return io_; }

  using ChildProcess::DescribeStatus;
  using ChildProcess::exited;
  using ChildProcess::pid;
  using ChildProcess::Signal;
  using ChildProcess::Stderr;
  using ChildProcess::wait_status;
  using ChildProcess::WaitExit;

 private:
  int port_ = 0;
  std::string error_;
  LineChannel io_;
};

// A fresh, empty directory under $TMPDIR (or /tmp), removed (with its files) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Connects a LineChannel to a Unix-domain stream socket at `path` (retrying, bounded,
// while the listener's backlog is full or the socket does not exist yet).
bool ConnectUnix(LineChannel& ch, const std::string& path, Ms timeout = kIo, std::string* err = nullptr);

// ---- stdio-framed MCP messages

// An enveloped 2026-07-28 subscriptions/listen request as one JSON text (no newline).
std::string StdioListen(std::string_view id_json, std::string_view notifications_json,
                        std::string_view version = kV2026);
// notifications/cancelled {requestId} with the envelope.
std::string StdioCancel(std::string_view id_json);
// A 2025 initialize request.
std::string StdioInitialize(std::string_view id_json, std::string_view version = "2025-11-25");

// The acknowledgement of listen `id_json` (and its agreed filter when given).
::testing::AssertionResult IsAck(const Json& msg, std::string_view id_json,
                                 std::string_view expected_notifications = {});
// The shutdown result {"resultType":"complete","_meta":{subscriptionId}} for `id_json`.
::testing::AssertionResult IsCompleteResult(const Json& msg, std::string_view id_json);
// A JSON-RPC success reply with id `id_json` whose result equals `result_json`.
::testing::AssertionResult IsResult(const Json& msg, std::string_view id_json, std::string_view result_json);
// A JSON-RPC error reply: id (JSON text, "a|b" alternatives allowed) and code.
::testing::AssertionResult IsError(const Json& msg, std::string_view id_json, int64_t code);
// A notification WITHOUT any subscriptionId (2025 sessions): params equal `params_json`.
::testing::AssertionResult IsPlainNotification(const Json& msg, std::string_view method,
                                               std::string_view params_json);

}  // namespace itest

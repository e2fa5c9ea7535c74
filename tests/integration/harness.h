// Integration-test harness: starts the real mcpfan binary and talks to it over
// loopback sockets. Every blocking operation has a deadline; nothing sleeps and
// hopes. See SERVER_CONTRACT.md for what the tests rely on.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "child_process.h"
#include "json_util.h"

namespace itest {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;
using Deadline = Clock::time_point;

inline constexpr Ms kIo{5000};        // default bound for one request/response
inline constexpr Ms kStart{10000};    // bound for the server to log its port
// Bound for a process to exit after SIGTERM or EOF: it catches a hang, not slowness (a TSan
// build alone sleeps 1 s at exit, its atexit_sleep_ms, and a loaded machine adds more).
inline constexpr Ms kExitBound{10000};
inline constexpr std::string_view kV2026 = "2026-07-28";
inline constexpr std::string_view kDraft = "DRAFT-2026-v1";
inline constexpr std::string_view kSubId = "io.modelcontextprotocol/subscriptionId";

inline Deadline After(Ms d) { return Clock::now() + d; }

// ---------------------------------------------------------------- process

// Starts `mcpfan <args>` in `proc` (stdin/stdout as ChildProcess::Spawn) and waits
// (bounded) for its "listening on HOST:PORT" log line. Returns the port, or 0 with
// *error naming `what`, the binary and the stderr so far.
int LaunchMcpfan(ChildProcess& proc, const std::vector<std::string>& args, Ms start_timeout,
                 std::string_view what, std::string* error, int child_stdin = -1, int child_stdout = -1);

// The real mcpfan binary, started with `args` plus `--listen 127.0.0.1:0`.
// stderr is collected by a thread for the whole life of the process.
class ServerProcess : private ChildProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args = {}, Ms start_timeout = kStart);
  ~ServerProcess();  // SIGTERM, then SIGKILL after 5 s, by PID; prints stderr on failure
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  bool ok() const { return port_ > 0; }
  const std::string& error() const { return error_; }
  int port() const { return port_; }

  using ChildProcess::DescribeStatus;  // "exit 0", "exit 3", "signal 9 (Killed)", "running"
  using ChildProcess::exited;
  using ChildProcess::pid;
  using ChildProcess::Signal;
  using ChildProcess::Stderr;
  using ChildProcess::wait_status;
  using ChildProcess::WaitExit;  // reaps if it exits within the timeout; true once exited
  using ChildProcess::WaitForStderr;
  using ChildProcess::WaitStderrUntil;

 private:
  int port_ = 0;
  std::string error_;
};

// ---------------------------------------------------------------- HTTP

struct Header {
  std::string name;
  std::string value;
};

struct HttpResponse {
  int status = 0;
  std::string reason;
  std::vector<Header> headers;  // names lower-cased
  std::string body;             // de-chunked
  bool chunked = false;

  std::optional<std::string> Get(std::string_view name) const;  // case-insensitive
  bool ContentTypeIs(std::string_view mime) const;               // ignores parameters
};

// Raw request bytes. Adds `Host` and, unless `headers` has Transfer-Encoding,
// `Content-Length` (for any non-empty body, and for POST).
std::string BuildRequest(std::string_view method, std::string_view path,
                         const std::vector<Header>& headers, std::string_view body = {});
// Encodes `body` as chunked transfer-encoding, split into pieces of `piece` bytes.
std::string Chunked(std::string_view body, size_t piece);

// Parses "HTTP/1.1 200 OK\r\n...\r\n\r\n" from the front of `buf`. Returns true and
// erases the head when complete; false when more bytes are needed or on a
// malformed head (then *err is set).
bool ParseResponseHead(std::string& buf, HttpResponse& out, std::string* err);

// Incremental chunked-transfer decoder.
class ChunkDecoder {
 public:
  // Consumes what it can from the front of `in`, appending payload to `out`.
  void Feed(std::string& in, std::string& out);
  bool done() const { return state_ == State::kDone; }
  bool failed() const { return state_ == State::kError; }
  const std::string& error() const { return error_; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone, kError };
  State state_ = State::kSize;
  size_t remaining_ = 0;
  std::string error_;
};

// A non-blocking loopback TCP connection; every wait is poll() with a deadline.
class Conn {
 public:
  Conn() = default;
  ~Conn();
  Conn(Conn&& o) noexcept;
  Conn& operator=(Conn&& o) noexcept;
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // SO_RCVBUF for the next Connect() (0 = kernel default). A small buffer makes
  // a client that stops reading look slow to the server sooner.
  void set_rcvbuf(int bytes) { rcvbuf_ = bytes; }
  bool Connect(int port, Ms timeout = kIo, std::string* err = nullptr);
  bool Send(std::string_view data, Ms timeout = kIo, std::string* err = nullptr);
  // One byte per TCP segment (TCP_NODELAY, `gap` between bytes). `data` is
  // capped at 4096 bytes so the loop stays bounded.
  bool SendBytewise(std::string_view data, Ms gap, std::string* err = nullptr);

  // >0: bytes appended to in(); 0: peer closed (or reset); -1: deadline; -2: error.
  int ReadSome(Deadline deadline);
  // Reads whatever is ready without waiting. Returns false once EOF/error.
  bool ReadAvailable();

  bool ReadHead(HttpResponse& out, Deadline deadline, std::string* err = nullptr);
  bool ReadBody(HttpResponse& resp, Deadline deadline, std::string* err = nullptr);
  std::optional<HttpResponse> ReadResponse(Ms timeout = kIo, std::string* err = nullptr);
  // Discards incoming bytes until the peer closes. True if it closed in time.
  bool WaitClosed(Ms timeout);

  void Close();
  void Reset();  // close with SO_LINGER{1,0}: the peer sees an RST
  void ShutdownWrite();

  int fd() const { return fd_; }
  bool open() const { return fd_ >= 0; }
  bool eof() const { return eof_; }
  std::string& in() { return in_; }

 private:
  int fd_ = -1;
  int rcvbuf_ = 0;
  bool eof_ = false;
  std::string in_;
};

// One request on a fresh connection.
std::optional<HttpResponse> Roundtrip(int port, const std::string& request, Ms timeout = kIo,
                                      std::string* err = nullptr);

// ---------------------------------------------------------------- MCP

// The params._meta envelope of a 2026 request.
std::string Envelope(std::string_view version);
// {"jsonrpc":"2.0","id":<id_json>,"method":..,"params":{"_meta":<env>[,<fields>]}}
std::string RpcBody(std::string_view id_json, std::string_view method,
                    std::string_view extra_params_fields = {}, std::string_view version = kV2026);
// Content-Type, Accept, MCP-Protocol-Version and Mcp-Method (the latter two
// only when non-empty).
std::vector<Header> McpHeaders(std::string_view version, std::string_view method);
// The same with Mcp-Name (SEP-2243: what tools/call, prompts/get, resources/read and tasks/*
// mirror from their params), when non-empty.
std::vector<Header> McpHeaders(std::string_view version, std::string_view method, std::string_view name);
std::string McpPost(std::string_view body, std::vector<Header> headers);
// A 2026-07-28 subscriptions/listen request with headers.
std::string ListenRequest(std::string_view id_json, std::string_view notifications_json,
                          std::string_view version = kV2026);

// ---------------------------------------------------------------- SSE

struct SseEvent {
  std::string event = "message";
  std::string data;
  std::string id;  // this event's own `id:` field (empty: none)
};

// Incremental text/event-stream parser.
class SseParser {
 public:
  void Feed(std::string_view text);
  std::deque<SseEvent> events;
  std::vector<std::string> comments;  // text after ':' with one leading space removed
  std::vector<std::string> id_lines;  // any `id:` field (forbidden on these streams)

 private:
  void Line(std::string_view line);
  std::string partial_;
  SseEvent cur_;
  bool have_data_ = false;
};

// A POST whose response may be an SSE stream: sends the request, reads the
// head, and then either decodes the stream incrementally or (for any other
// response) reads the whole body into head().body.
class SseStream {
 public:
  // Connect and send only (for the multiplexer); Pump() does the rest.
  bool Start(int port, std::string_view request, std::string* err = nullptr);
  // Start + wait for the head (+ the body if it is not an event stream).
  bool Open(int port, std::string_view request, Ms timeout = kIo, std::string* err = nullptr);

  bool head_done() const { return head_done_; }
  bool is_sse() const;
  const HttpResponse& head() const { return head_; }

  // Parses whatever the connection has buffered.
  void Pump();
  // Non-blocking read + Pump. Returns false once the socket is at EOF/error.
  bool ReadAvailable();

  // Next event (comments are collected, not returned). nullopt on timeout/end.
  std::optional<SseEvent> Next(Ms timeout = kIo);
  // Next event, which must be `event: message` with JSON data; fails (nullopt)
  // once any SSE `id:` field has appeared on the stream.
  std::optional<Json> NextMessage(Ms timeout = kIo, std::string* err = nullptr);
  // A 2025 session's GET stream carries event ids (resumable): NextMessage() accepts them.
  void AllowIds() { allow_ids_ = true; }
  // The id of the last event returned that had one (what a client sends as Last-Event-ID).
  const std::string& last_event_id() const { return last_event_id_; }
  // Waits until the chunked terminator arrived and the socket closed.
  bool WaitEnd(Ms timeout);
  bool WaitComments(size_t n, Ms timeout);

  bool ended() const { return ended_; }  // stream body complete
  bool eof() const { return conn_.eof(); }
  std::deque<SseEvent>& events() { return sse_.events; }
  const std::vector<std::string>& comments() const { return sse_.comments; }
  const std::vector<std::string>& id_lines() const { return sse_.id_lines; }
  const std::string& protocol_error() const { return protocol_error_; }
  Conn& conn() { return conn_; }

 private:
  bool ReadFor(Deadline deadline);
  Conn conn_;
  bool head_done_ = false;
  bool ended_ = false;
  bool allow_ids_ = false;
  std::string last_event_id_;
  HttpResponse head_;
  ChunkDecoder chunks_;
  std::string decoded_;
  SseParser sse_;
  std::string protocol_error_;
};

// Reads from all streams (poll() over their sockets) until `done` holds for
// each one or the deadline passes. Returns how many satisfy `done`.
size_t PumpAll(const std::vector<SseStream*>& streams,
               const std::function<bool(SseStream&)>& done, Ms timeout);

// Result of a JSON-RPC POST /mcp: the HTTP response and the one JSON-RPC
// message it carried (as application/json, or as the first SSE event).
struct RpcReply {
  HttpResponse http;
  Json msg;
  bool via_sse = false;
  std::string err;  // transport/parse problem, empty when fine
};
RpcReply McpCall(int port, const std::string& request, Ms timeout = kIo);

// Checks a JSON-RPC error reply: HTTP status, JSON content type, error.code,
// id (as JSON text, e.g. "1" or "null"), and that the message contains one of
// `message_words` (case-insensitive; empty list = any non-empty message).
::testing::AssertionResult IsRpcError(const RpcReply& r, int http_status, int64_t code,
                                      std::string_view id_json,
                                      std::vector<std::string_view> message_words = {});

// ---------------------------------------------------------------- helpers

// Opens a 2026 listen and reads its acknowledgement (checked: method, subscription
// id, and the agreed filter when `expected_ack_notifications` is non-empty).
::testing::AssertionResult OpenListen(SseStream& s, int port, std::string_view id_json,
                                      std::string_view notifications_json,
                                      std::string_view expected_ack_notifications = {});

// A delivered notification: jsonrpc 2.0, no id, `method`, the subscription id
// (JSON-type exact) in params._meta, and params otherwise equal to
// `expected_params` (whose _meta, if any, must also be present verbatim).
::testing::AssertionResult IsNotification(const Json& msg, std::string_view method,
                                          std::string_view sid_json,
                                          std::string_view expected_params = "{}");

// POST /v1/publish. Returns the response (nullopt on transport failure).
std::optional<HttpResponse> Publish(int port, std::string_view body,
                                    std::vector<Header> extra = {});
// Publish that must be answered 202 {"accepted": n}.
::testing::AssertionResult PublishOk(int port, std::string_view body, int64_t accepted = 1);

std::optional<double> ReadMetric(int port, std::string_view name);
// Polls GET /metrics (bounded) until pred(value) holds. Returns the last value seen.
::testing::AssertionResult PollMetric(int port, std::string_view name,
                                      const std::function<bool(double)>& pred,
                                      Ms timeout = Ms(10000));
::testing::AssertionResult PollMetricEq(int port, std::string_view name, double want,
                                        Ms timeout = Ms(10000));

// Task status (the Tasks extension): a listen body / request whose params._meta declares
// the extension in its clientCapabilities (or not), a task's params in `status` (terminal
// ones with their result or error, input_required with its inputRequests; `extra` is appended
// as more members), and the publish body of one.
std::string TaskListenBody(std::string_view id_json, std::string_view notifications_json, bool declare = true);
std::string TaskListen(std::string_view id_json, std::string_view notifications_json, bool declare = true);
std::string TaskParams(std::string_view id, std::string_view status, std::string_view extra = {});
std::string TaskPublish(std::string_view id, std::string_view status, std::string_view tenant = {});
// Opens a task listen (the extension declared) and checks its acknowledgement's notifications.
::testing::AssertionResult OpenTaskListen(SseStream& s, int port, std::string_view id_json,
                                          std::string_view notifications_json, std::string_view expected_ack);
// The next event is the task `id` in `status` (TaskParams) for subscription `sid`.
::testing::AssertionResult NextTask(SseStream& s, std::string_view sid, std::string_view id, std::string_view status);

// A fresh listen on a unique URI receives a publish for that URI.
::testing::AssertionResult ServesListenAndPublish(int port);

// Events formatted for failure messages.
std::string DescribeEvents(const std::deque<SseEvent>& evs);

// A process's resident set in KiB, from /proc/PID/status (0 if unreadable).
long ProcessRssKib(int pid);

// Raises RLIMIT_NOFILE's soft limit to at least `want` (bounded by the hard limit).
// Returns the resulting soft limit.
uint64_t RaiseFdLimit(uint64_t want);

}  // namespace itest

// A scripted loopback HTTP/1.1 server standing in for an MCP server behind mcpfan's front
// proxy (--upstream). Each accepted connection runs on a thread of its own: requests are
// read one at a time (head, then a Content-Length body) and handed to the test's handler,
// which writes whatever the scenario needs — a proper answer, half of one, garbage, or
// nothing at all — and says whether to read the next request. Every request is recorded,
// so a test can assert what mcpfan forwarded (and what it did not).
//
// Bounded: a handler that holds a connection waits on `released()` (set when the upstream
// is destroyed) or on a Gate, never forever; reads time out after a few seconds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "harness.h"

namespace itest {

struct UpstreamRequest {
  std::string method, target;
  std::vector<Header> headers;  // names as sent
  std::string body;
  std::optional<std::string> Get(std::string_view name) const;  // case-insensitive
};

// A one-shot signal between the test thread and a handler thread, with a bounded wait.
class Gate {
 public:
  void Open();
  bool Wait(Ms timeout);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

class FakeUpstream {
 public:
  enum class Next { Read, Close };
  using Handler = std::function<Next(int fd, const UpstreamRequest& req)>;

  // `port` 0: an ephemeral one; else that port (an upstream restarted where it was).
  explicit FakeUpstream(Handler handler, int port = 0);
  ~FakeUpstream();
  FakeUpstream(const FakeUpstream&) = delete;
  FakeUpstream& operator=(const FakeUpstream&) = delete;

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/mcp"; }
  std::vector<UpstreamRequest> requests() const;
  // Requests whose body contains `needle`.
  int CountBodies(std::string_view needle) const;
  // Waits (bounded) until `n` requests have arrived.
  bool WaitRequests(size_t n, Ms timeout = kIo) const;
  bool released() const { return release_.load(); }
  // Handlers that hold a connection wait on this: true once the upstream is being destroyed.
  bool WaitReleased(Ms timeout) const;

  // Writes all of `s` (blocking socket); false on error.
  static bool Write(int fd, std::string_view s);
  // A complete answer: status, headers ("Name: value\r\n" lines), Content-Length body.
  static std::string Answer(int status, std::string_view headers, std::string_view body);
  // One chunk of a chunked body ("" = the terminator).
  static std::string Chunk(std::string_view data);

 private:
  void Serve(int fd);

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> release_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<UpstreamRequest> requests_;
  std::vector<int> open_fds_;
  std::thread accept_;
  std::vector<std::thread> conns_;
};

// The id of a JSON-RPC request body, as JSON text ("7"), for an upstream that echoes it.
std::string IdOf(const UpstreamRequest& r);
// A 2025-11-25 initialize result for `r` with session id `sid` and the upstream's `capabilities`.
std::string InitializeAnswer(const UpstreamRequest& r, std::string_view sid, std::string_view capabilities);

// A 2025-era upstream with sessions: initialize answered (session "up-s"), other POSTs 202,
// and a GET stream that sends one event with id "up-<n>" per GET, records each GET's
// Last-Event-ID and holds the stream open; its answer to a GET waits for `head_gate` when set.
struct ResumableUpstream {
  ResumableUpstream();
  std::vector<std::string> ids();  // per GET, "" when none
  std::mutex mu;
  std::vector<std::string> last_event_ids;
  std::atomic<int> gets{0};
  Gate* head_gate = nullptr;
  std::unique_ptr<FakeUpstream> up;
};

// A loopback port nothing listens on (bound, then closed).
int UnusedPort();

}  // namespace itest

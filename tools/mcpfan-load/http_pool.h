// A small pool of keep-alive HTTP/1.1 client connections on a libuv loop with a FIFO job
// queue; each connection pipelines up to `depth` requests (answers arrive in order).
//
// Publishing uses ONE connection with a deep pipeline: requests reach the server in
// sequence order and none waits for the previous answer, so the publish rate does not
// depend on how fast an overloaded server answers, and per-stream delivery order can be
// checked against sequence order (several connections would let publishes overtake each
// other). The 2025-era session requests (initialize, notifications/initialized,
// resources/subscribe) use several connections with depth 1.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "wire.h"

namespace mcpload {

uint64_t NowNs();  // CLOCK_MONOTONIC, ns

// Queues `data` on a stream, trying a direct write first; the remainder (if any) is owned
// by the write request until libuv is done with it. Returns a libuv error code or 0.
int WriteOwned(uv_stream_t* s, std::string data);

struct Reply {
  int status = 0;        // 0: no HTTP reply (see error)
  HttpHead head;
  std::string body;
  std::string error;
};

struct Job {
  // Called when the request is written; called again when it has to be resent on a new
  // connection (the server closed the old one before answering it).
  std::function<std::string()> build;
  std::function<void(Reply&)> done;
  int tries = 0;
};

class HttpPool {
 public:
  HttpPool(uv_loop_t* loop, const sockaddr_in& addr, int connections, int depth);
  ~HttpPool();
  HttpPool(const HttpPool&) = delete;
  HttpPool& operator=(const HttpPool&) = delete;

  void Submit(Job job);
  size_t outstanding() const { return pending_.size() + size_t(inflight_); }
  // Closes every connection; jobs not yet answered are dropped. Run the loop afterwards
  // until the handles are closed, before destroying the pool.
  void Close();

 private:
  struct Client {
    enum class St : uint8_t { Closed, Connecting, Ready, Closing };
    uv_tcp_t tcp;
    uv_connect_t creq;
    HttpPool* pool = nullptr;
    St st = St::Closed;
    std::deque<Job> jobs;  // assigned, in request order; the first `sent` are written
    size_t sent = 0;
    bool have_head = false;   // of the answer to jobs.front()
    bool got_bytes = false;   // of the answer to jobs.front()
    std::string head_buf;
    Reply reply;
    BodyDecoder body;
  };

  void Pump();
  void Connect(Client* c);
  void SendQueued(Client* c);
  void Complete(Client* c);
  void Lost(Client* c, const std::string& why);
  void CloseClient(Client* c);
  enum class Count : uint8_t { None, Sent, All };  // which requeued jobs use up a try
  void Requeue(Client* c, Count count);
  void OnData(Client* c, const char* p, size_t n);

  static void OnConnect(uv_connect_t* req, int status);
  static void OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf);
  static void OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnClosed(uv_handle_t* h);

  uv_loop_t* loop_;
  sockaddr_in addr_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::deque<Job> pending_;
  size_t depth_;
  int inflight_ = 0;
  bool closing_ = false;
  std::string last_error_ = "the server closed the connection";
};

}  // namespace mcpload

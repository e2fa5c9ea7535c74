// MultiPublisher: publishes over several publish URLs (e.g. the nodes of a cluster), one
// pipelined keep-alive connection per URL (HttpPool), each publish either to a shared URI or
// addressed to one stream's own URI (<base><index>, a random index in [first, first+n)).
//
// A run has a fixed rate (publishes issued on a 1 ms timer) or the maximum rate (rate <= 0:
// every connection keeps `depth` publishes in flight and sends the next one when an answer
// arrives, for `duration_ns`). `depth` is the window per connection: at a fixed rate a due
// publish goes out through a connection with room (the chosen one, else the next), and when
// every window is full it waits in the client; what is still waiting 100 ms after the
// schedule's end is never sent (`unsent`: the server did not keep up with the rate).
//
// With set_tasks(), every publish is a notifications/tasks (the Tasks extension) for the task id
// `uri` (a run's own_base + index: "task-<i>"), status working, instead of a resources/updated.
//
// Every body carries "bench/seq" (unique per process: wall-clock ms x 1000 + a counter,
// below 2^53) and "bench/ts_ns" (CLOCK_MONOTONIC when the request was first written), so a
// receiver in another process can tell the publish and its latency. Order: publishes through
// one URL reach that server in sequence order; publishes through different URLs may overtake
// each other, so receivers must not assume a per-stream order across URLs.
#pragma once

#include <netinet/in.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "http_pool.h"

namespace mcpload {

struct Endpoint {
  sockaddr_in addr{};
  std::string hostport;  // Host header
  std::string path;      // /v1/publish
};

class MultiPublisher {
 public:
  // How a scheduled run picks the URL of each publish.
  static constexpr int kViaRandom = -1;
  static constexpr int kViaRotate = -2;

  struct RunSpec {
    double rate = 100;        // publishes per second, on a 1 ms timer; <= 0: the maximum rate
    uint64_t count = 0;       // publishes in all (fixed rate; maximum rate: at most, 0 = no bound)
    uint64_t duration_ns = 0; // maximum rate: no new publish after this long
    int via = kViaRandom;     // an endpoint index, kViaRandom or kViaRotate
    bool own = false;         // true: each publish to own_base + a random index
    bool each = false;        // true: publish i of the run to uri + i (distinct URIs)
                              // neither: every publish to `uri`
    std::string uri;
    std::string own_base;
    uint64_t own_first = 0, own_n = 0;
    // own only: when not empty, publish i goes to own_base + indices[i % size] instead of a
    // random index (a warm-up that reaches every stream once)
    std::vector<uint64_t> indices;
    // own only: the endpoint's path gets the chosen index appended (nchan: one publisher
    // location per channel, /pub/s/<index>)
    bool path_per_target = false;
    // own only: keep every answered publish's (seq, index, ts) in RunStats::sent, so a receiver
    // can say which ones it never got (and when they were published)
    bool keep_sent = false;
    uint64_t seed = 1;        // for the random choices (reproducible)
    // maximum rate, own, no path_per_target: notifications per POST, sent as one JSON array
    // (mcpfan's /v1/publish takes arrays; each has its own seq and random stream). 1: one object.
    int batch = 1;
  };
  struct RunStats {
    uint64_t published = 0, acked = 0, errors = 0;
    uint64_t first_seq = 0, last_seq = 0;
    uint64_t first_ts_ns = 0, last_ts_ns = 0;
    double publish_lag_ms = 0;  // how late the last publish was written against its schedule
    uint64_t unsent = 0;        // fixed rate: due but never written (every window full until the end)
    uint64_t last_ack_ns = 0;   // when the last answer arrived
    std::vector<uint64_t> per_endpoint;
    std::string first_error;
    struct Sent {
      uint64_t seq, index, ts_ns;
    };
    std::vector<Sent> sent;  // with keep_sent: answered (2xx) publishes
  };

  static constexpr int kUnbounded = 1 << 20;  // written when due, never held back waiting for answers

  // depth: publishes in flight per connection (the window).
  MultiPublisher(uv_loop_t* loop, std::vector<Endpoint> endpoints, int pad_bytes, int depth = kUnbounded);
  ~MultiPublisher();
  MultiPublisher(const MultiPublisher&) = delete;
  MultiPublisher& operator=(const MultiPublisher&) = delete;

  // Before the first publish. set_tasks(): publishes become notifications/tasks whose "URI" is
  // the task id. set_params_bytes(B), B > 0: every publish's params padded to B bytes as sent
  // (a task's statusMessage, a resource update's "bench/pad" in _meta; none when the fields
  // alone take more).
  void set_tasks() { tasks_ = true; }
  void set_params_bytes(int bytes) { params_bytes_ = bytes; }

  size_t endpoints() const { return eps_.size(); }
  uint64_t seq_base() const { return seq_offset_; }
  uint64_t next_seq() const { return seq_offset_ + next_; }  // the seq of the next publish

  // One publish of `uri` through endpoint `via`; done(seq, ts_ns, http_status, error) when answered.
  using OneDone = std::function<void(uint64_t, uint64_t, int, const std::string&)>;
  void PublishOne(size_t via, const std::string& uri, OneDone done);

  // A scheduled run (one at a time); on_done once every publish of it was answered.
  void StartRun(RunSpec spec, std::function<void()> on_done);
  bool running() const { return run_active_; }
  const RunStats& run_stats() const { return stats_; }

  // Closes every connection (run the loop afterwards until the handles are closed).
  void Close();

 private:
  uint64_t Submit(size_t via, std::string uri, std::string path, std::function<void(uint64_t, uint64_t, Reply&)> done);
  std::string Body(const std::string& uri, uint64_t seq, uint64_t ts) const;
  std::string Request(size_t via, const std::string& path, const std::string& uri, uint64_t seq, uint64_t ts) const;
  static void OnTick(uv_timer_t* t);
  // Issues the run's next publish through `via` (a run's choice of URI, path and accounting).
  void IssueOne(size_t via, bool last);
  // A connection for the next publish with room in its window, -1 when all are full.
  int PickVia();
  uint64_t DueNow() const;  // fixed rate: publishes due by now
  void OnRunAnswer(size_t via, bool last, uint64_t index, uint64_t seq, uint64_t ts, const Reply& r);
  // --batch: one POST of spec_.batch notifications (maximum rate only), answered as one.
  void IssueBatch(size_t via);
  void OnBatchAnswer(size_t via, const std::vector<uint64_t>& indices, uint64_t first_seq, uint64_t ts, const Reply& r);
  bool max_rate() const { return spec_.rate <= 0; }
  void MaybeFinish();

  uv_loop_t* loop_;
  std::vector<Endpoint> eps_;
  std::vector<std::unique_ptr<HttpPool>> pools_;
  std::vector<int> inflight_;  // per connection: this run's publishes not yet answered
  int pad_bytes_;
  bool tasks_ = false;    // set_tasks(): notifications/tasks
  int params_bytes_ = 0;  // set_params_bytes(): the params' size as sent (0: not padded to a size)
  int depth_;
  uint64_t seq_offset_ = 0;
  uint64_t next_ = 0;
  uv_timer_t tick_{};
  bool closed_ = false;

  // the scheduled run
  bool run_active_ = false;
  RunSpec spec_;
  RunStats stats_;
  uint64_t run_start_ns_ = 0, done_ = 0, rotate_ = 0;
  bool issuing_ = false;  // the run may still issue publishes
  std::mt19937_64 rng_;
  std::function<void()> on_done_;
};

}  // namespace mcpload

#include "publisher.h"

#include <sys/time.h>

#include <algorithm>
#include <cmath>
#include <string_view>

namespace mcpload {

namespace {

constexpr uint64_t kSec = 1000000000;

// The padding characters that make `text` + the padding + `tail` `total` bytes long, where the
// padding member takes `extra` bytes of JSON around its characters; -1 when it does not fit.
long PadTo(int total, size_t text, size_t tail, size_t extra) {
  return long(total) - long(text + tail + extra);
}

// The receivers hash a delivery's URI as raw bytes (wire.h UriIn), so a URI is sent as is;
// main.cc refuses URIs that would need JSON escapes. params_bytes > 0: a "bench/pad" in _meta
// makes params that many bytes long as sent when it fits (instead of `pad` bytes of padding).
std::string ResourceBody(const std::string& uri, uint64_t seq, uint64_t ts, int pad, int params_bytes) {
  std::string p = R"({"uri":")" + uri + R"(","_meta":{"bench/seq":)" + std::to_string(seq) + R"(,"bench/ts_ns":)" +
                  std::to_string(ts);
  constexpr std::string_view kPad = R"(,"bench/pad":"")";
  long n = params_bytes > 0 ? PadTo(params_bytes, p.size(), 2, kPad.size()) : (pad > 0 ? pad : -1);
  if (n >= 0) p += R"(,"bench/pad":")" + std::string(size_t(n), 'x') + "\"";
  return R"({"method":"notifications/resources/updated","params":)" + p + "}}}";
}

// A task's status (the Tasks extension): task `task_id` working, with the fields mcpfan
// requires (about 195 bytes of params with the bench _meta); params_bytes > 0: a statusMessage
// makes params that many bytes long as sent, when it fits.
std::string TaskBody(const std::string& task_id, uint64_t seq, uint64_t ts, int pad, int params_bytes) {
  std::string p = R"({"taskId":")" + task_id +
                  R"(","status":"working","createdAt":"2026-11-28T00:00:00Z","lastUpdatedAt":"2026-11-28T00:00:00Z",)"
                  R"("ttlMs":60000,"_meta":{"bench/seq":)" +
                  std::to_string(seq) + R"(,"bench/ts_ns":)" + std::to_string(ts);
  if (pad > 0) p += R"(,"bench/pad":")" + std::string(size_t(pad), 'x') + "\"";
  p += "}";
  constexpr std::string_view kMessage = R"(,"statusMessage":"")";
  long n = params_bytes > 0 ? PadTo(params_bytes, p.size(), 1, kMessage.size()) : -1;
  if (n >= 0) p += R"(,"statusMessage":")" + std::string(size_t(n), 'x') + "\"";
  return R"({"method":"notifications/tasks","params":)" + p + "}}";
}

}  // namespace

MultiPublisher::MultiPublisher(uv_loop_t* loop, std::vector<Endpoint> endpoints, int pad_bytes, int depth)
    : loop_(loop), eps_(std::move(endpoints)), pad_bytes_(pad_bytes), depth_(depth > 0 ? depth : 1) {
  for (const Endpoint& e : eps_) pools_.push_back(std::make_unique<HttpPool>(loop_, e.addr, 1, depth_));
  inflight_.assign(eps_.size(), 0);
  timeval tv{};
  gettimeofday(&tv, nullptr);
  seq_offset_ = (uint64_t(tv.tv_sec) * 1000 + uint64_t(tv.tv_usec) / 1000) * 1000;  // unique per run, < 2^53
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
}

MultiPublisher::~MultiPublisher() = default;

std::string MultiPublisher::Body(const std::string& uri, uint64_t seq, uint64_t ts) const {
  if (tasks_) return TaskBody(uri, seq, ts, pad_bytes_, params_bytes_);
  return ResourceBody(uri, seq, ts, pad_bytes_, params_bytes_);
}

std::string MultiPublisher::Request(size_t via, const std::string& path, const std::string& uri, uint64_t seq,
                                    uint64_t ts) const {
  std::string body = Body(uri, seq, ts);
  const Endpoint& e = eps_[via];
  return "POST " + path + " HTTP/1.1\r\nHost: " + e.hostport +
         "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

uint64_t MultiPublisher::Submit(size_t via, std::string uri, std::string path,
                                std::function<void(uint64_t, uint64_t, Reply&)> done) {
  uint64_t seq = seq_offset_ + next_++;
  // Shared between build (first write; again on a resend, which keeps the first time) and done.
  auto ts = std::make_shared<uint64_t>(0);
  Job j;
  j.build = [this, via, uri = std::move(uri), path = std::move(path), seq, ts] {
    if (*ts == 0) *ts = NowNs();
    return Request(via, path, uri, seq, *ts);
  };
  j.done = [seq, ts, done = std::move(done)](Reply& r) { done(seq, *ts, r); };
  pools_[via]->Submit(std::move(j));
  return seq;
}

void MultiPublisher::PublishOne(size_t via, const std::string& uri, OneDone done) {
  Submit(via, uri, eps_[via].path,
         [done = std::move(done)](uint64_t seq, uint64_t ts, Reply& r) { done(seq, ts, r.status, r.error); });
}

void MultiPublisher::StartRun(RunSpec spec, std::function<void()> on_done) {
  spec_ = std::move(spec);
  stats_ = RunStats{};
  stats_.per_endpoint.assign(eps_.size(), 0);
  inflight_.assign(eps_.size(), 0);
  rng_.seed(spec_.seed);
  done_ = 0;
  rotate_ = 0;
  on_done_ = std::move(on_done);
  run_active_ = true;
  issuing_ = true;
  run_start_ns_ = NowNs();
  if (max_rate()) {
    // Fill every connection's window; each answer then issues the next publish on its
    // connection (OnRunAnswer), so P connections x `depth` publishes stay in flight.
    if (spec_.duration_ns == 0 || eps_.empty()) {
      issuing_ = false;
      return MaybeFinish();
    }
    for (size_t via = 0; via < eps_.size(); ++via) {
      for (int k = 0; k < depth_ && (spec_.count == 0 || done_ < spec_.count); ++k) {
        if (spec_.batch > 1) IssueBatch(via);
        else IssueOne(via, false);
      }
    }
    return;
  }
  if (spec_.count == 0) {
    issuing_ = false;
    return MaybeFinish();
  }
  uv_timer_start(&tick_, &MultiPublisher::OnTick, 0, 1);
}

void MultiPublisher::IssueOne(size_t via, bool last) {
  const RunSpec& s = spec_;
  std::string uri, path = eps_[via].path;
  uint64_t index = 0;
  if (s.own) {
    index = s.indices.empty() ? s.own_first + rng_() % s.own_n : s.indices[done_ % s.indices.size()];
    uri = s.own_base + std::to_string(index);
    if (s.path_per_target) path += std::to_string(index);
  } else {
    uri = s.each ? s.uri + std::to_string(done_) : s.uri;
  }
  ++stats_.per_endpoint[via];
  ++stats_.published;
  ++inflight_[via];
  ++done_;
  uint64_t seq = Submit(
      via, std::move(uri), std::move(path),
      [this, via, last, index](uint64_t sq, uint64_t ts, Reply& r) { OnRunAnswer(via, last, index, sq, ts, r); });
  if (!stats_.first_seq) stats_.first_seq = seq;
  stats_.last_seq = seq;
}

void MultiPublisher::IssueBatch(size_t via) {
  const RunSpec& s = spec_;
  const auto k = uint64_t(s.batch);
  const uint64_t first = seq_offset_ + next_;
  next_ += k;
  std::vector<uint64_t> indices(k);
  for (uint64_t& i : indices) i = s.own_first + rng_() % s.own_n;
  stats_.per_endpoint[via] += k;
  stats_.published += k;
  ++inflight_[via];  // the window counts POSTs
  done_ += k;
  if (!stats_.first_seq) stats_.first_seq = first;
  stats_.last_seq = first + k - 1;
  auto ts = std::make_shared<uint64_t>(0);
  Job j;
  j.build = [this, via, indices, first, ts] {
    if (*ts == 0) *ts = NowNs();
    std::string body = "[";
    for (size_t i = 0; i < indices.size(); ++i) {
      if (i) body += ',';
      body += Body(spec_.own_base + std::to_string(indices[i]), first + i, *ts);
    }
    body += ']';
    const Endpoint& e = eps_[via];
    return "POST " + e.path + " HTTP/1.1\r\nHost: " + e.hostport +
           "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  };
  j.done = [this, via, indices, first, ts](Reply& r) { OnBatchAnswer(via, indices, first, *ts, r); };
  pools_[via]->Submit(std::move(j));
}

void MultiPublisher::OnBatchAnswer(size_t via, const std::vector<uint64_t>& indices, uint64_t first_seq, uint64_t ts,
                                   const Reply& r) {
  if (!run_active_) return;
  uint64_t now = NowNs();
  --inflight_[via];
  stats_.acked += indices.size();
  stats_.last_ack_ns = now;
  if (ts && (!stats_.first_ts_ns || ts < stats_.first_ts_ns)) stats_.first_ts_ns = ts;
  stats_.last_ts_ns = std::max(stats_.last_ts_ns, ts);
  if (r.status / 100 == 2 && spec_.keep_sent) {
    for (size_t i = 0; i < indices.size(); ++i) stats_.sent.push_back({first_seq + i, indices[i], ts});
  }
  if (r.status / 100 != 2) {
    stats_.errors += indices.size();
    if (stats_.first_error.empty()) {
      stats_.first_error = "seqs from " + std::to_string(first_seq) + ": " +
                           (r.status ? "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error);
    }
  }
  if (issuing_) {
    if (now - run_start_ns_ < spec_.duration_ns && (spec_.count == 0 || done_ < spec_.count)) IssueBatch(via);
    else issuing_ = false;
  }
  MaybeFinish();
}

uint64_t MultiPublisher::DueNow() const {
  uint64_t el = NowNs() - run_start_ns_;
  return std::min<uint64_t>(spec_.count, uint64_t(double(el) / kSec * spec_.rate) + 1);
}

int MultiPublisher::PickVia() {
  const RunSpec& s = spec_;
  size_t k = eps_.size();
  if (s.via >= 0) return inflight_[size_t(s.via)] < depth_ ? s.via : -1;
  size_t first = s.via == kViaRotate ? size_t(rotate_++ % k) : size_t(rng_() % k);
  for (size_t i = 0; i < k; ++i) {  // the chosen connection, else the next one with room
    size_t via = (first + i) % k;
    if (inflight_[via] < depth_) return int(via);
  }
  return -1;
}

void MultiPublisher::OnTick(uv_timer_t* t) {
  auto* self = static_cast<MultiPublisher*>(t->data);
  const RunSpec& s = self->spec_;
  uint64_t due = self->DueNow();
  while (self->done_ < due) {
    int via = self->PickVia();
    if (via < 0) break;  // every window is full: the answers issue the backlog (OnRunAnswer)
    self->IssueOne(size_t(via), self->done_ + 1 == s.count);
  }
  // The schedule is over when all are sent, or 100 ms after its end with some still waiting.
  uint64_t end_ns = uint64_t(double(s.count) / s.rate * kSec) + 100 * 1000000ull;
  if (self->done_ < s.count && NowNs() - self->run_start_ns_ >= end_ns) self->stats_.unsent = s.count - self->done_;
  if (self->done_ >= s.count || self->stats_.unsent) {
    self->issuing_ = false;
    uv_timer_stop(t);
    self->MaybeFinish();  // in case every answer is already in (a refused connection fails jobs at once)
  }
}

void MultiPublisher::OnRunAnswer(size_t via, bool last, uint64_t index, uint64_t seq, uint64_t ts, const Reply& r) {
  if (!run_active_) return;
  uint64_t now = NowNs();
  --inflight_[via];
  ++stats_.acked;
  stats_.last_ack_ns = now;
  if (ts && (!stats_.first_ts_ns || ts < stats_.first_ts_ns)) stats_.first_ts_ns = ts;
  stats_.last_ts_ns = std::max(stats_.last_ts_ns, ts);
  if (last && ts) {
    double planned = double(run_start_ns_) + double(spec_.count - 1) / spec_.rate * kSec;
    stats_.publish_lag_ms = (double(ts) - planned) / 1e6;
  }
  if (r.status / 100 == 2 && spec_.keep_sent) stats_.sent.push_back({seq, index, ts});
  if (r.status / 100 != 2) {
    ++stats_.errors;
    if (stats_.first_error.empty()) {
      stats_.first_error = "seq " + std::to_string(seq) + ": " +
                           (r.status ? "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error);
    }
  }
  if (max_rate() && issuing_) {
    if (now - run_start_ns_ < spec_.duration_ns && (spec_.count == 0 || done_ < spec_.count)) {
      IssueOne(via, false);  // the freed slot of this connection's window
    } else {
      issuing_ = false;
    }
  } else if (issuing_ && done_ < DueNow()) {
    IssueOne(via, done_ + 1 == spec_.count);  // a backlog waits for a window: this one has room now
  }
  MaybeFinish();
}

void MultiPublisher::MaybeFinish() {
  if (!run_active_ || issuing_ || stats_.acked < stats_.published) return;
  run_active_ = false;
  uv_timer_stop(&tick_);
  if (on_done_) {
    auto cb = std::move(on_done_);
    on_done_ = nullptr;
    cb();
  }
}

void MultiPublisher::Close() {
  if (closed_) return;
  closed_ = true;
  uv_timer_stop(&tick_);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  for (auto& p : pools_) p->Close();
}

}  // namespace mcpload

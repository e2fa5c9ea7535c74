#include "publisher.h"

#include <sys/time.h>

#include <algorithm>
#include <cmath>

namespace mcpload {

namespace {

constexpr int kDepth = 1 << 20;  // written when due, never held back waiting for answers
constexpr uint64_t kSec = 1000000000;

// The receivers hash a delivery's URI as raw bytes (wire.h UriIn), so a URI is sent as is;
// main.cc refuses URIs that would need JSON escapes.
std::string Body(const std::string& uri, uint64_t seq, uint64_t ts, int pad) {
  std::string b = R"({"method":"notifications/resources/updated","params":{"uri":")" + uri + R"(","_meta":{"bench/seq":)" +
                  std::to_string(seq) + R"(,"bench/ts_ns":)" + std::to_string(ts);
  if (pad > 0) b += R"(,"bench/pad":")" + std::string(size_t(pad), 'x') + "\"";
  return b + "}}}";
}

}  // namespace

MultiPublisher::MultiPublisher(uv_loop_t* loop, std::vector<Endpoint> endpoints, int pad_bytes)
    : loop_(loop), eps_(std::move(endpoints)), pad_bytes_(pad_bytes) {
  for (const Endpoint& e : eps_) pools_.push_back(std::make_unique<HttpPool>(loop_, e.addr, 1, kDepth));
  timeval tv{};
  gettimeofday(&tv, nullptr);
  seq_offset_ = (uint64_t(tv.tv_sec) * 1000 + uint64_t(tv.tv_usec) / 1000) * 1000;  // unique per run, < 2^53
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
}

MultiPublisher::~MultiPublisher() = default;

std::string MultiPublisher::Request(size_t via, const std::string& uri, uint64_t seq, uint64_t ts) const {
  std::string body = Body(uri, seq, ts, pad_bytes_);
  const Endpoint& e = eps_[via];
  return "POST " + e.path + " HTTP/1.1\r\nHost: " + e.hostport +
         "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

uint64_t MultiPublisher::Submit(size_t via, std::string uri, std::function<void(uint64_t, uint64_t, Reply&)> done) {
  uint64_t seq = seq_offset_ + next_++;
  // Shared between build (first write; again on a resend, which keeps the first time) and done.
  auto ts = std::make_shared<uint64_t>(0);
  Job j;
  j.build = [this, via, uri = std::move(uri), seq, ts] {
    if (*ts == 0) *ts = NowNs();
    return Request(via, uri, seq, *ts);
  };
  j.done = [seq, ts, done = std::move(done)](Reply& r) { done(seq, *ts, r); };
  pools_[via]->Submit(std::move(j));
  return seq;
}

void MultiPublisher::PublishOne(size_t via, const std::string& uri, OneDone done) {
  Submit(via, uri, [done = std::move(done)](uint64_t seq, uint64_t ts, Reply& r) { done(seq, ts, r.status, r.error); });
}

void MultiPublisher::StartRun(RunSpec spec, std::function<void()> on_done) {
  spec_ = std::move(spec);
  stats_ = RunStats{};
  stats_.per_endpoint.assign(eps_.size(), 0);
  rng_.seed(spec_.seed);
  done_ = 0;
  rotate_ = 0;
  on_done_ = std::move(on_done);
  run_active_ = true;
  run_start_ns_ = NowNs();
  if (spec_.count == 0) return MaybeFinish();
  uv_timer_start(&tick_, &MultiPublisher::OnTick, 0, 1);
}

void MultiPublisher::OnTick(uv_timer_t* t) {
  auto* self = static_cast<MultiPublisher*>(t->data);
  const RunSpec& s = self->spec_;
  uint64_t el = NowNs() - self->run_start_ns_;
  uint64_t due = std::min<uint64_t>(s.count, uint64_t(double(el) / kSec * s.rate) + 1);
  while (self->done_ < due) {
    size_t via = s.via >= 0 ? size_t(s.via)
                 : s.via == kViaRotate ? size_t(self->rotate_++ % self->eps_.size())
                                       : size_t(self->rng_() % self->eps_.size());
    std::string uri = s.own    ? s.own_base + std::to_string(s.own_first + self->rng_() % s.own_n)
                      : s.each ? s.uri + std::to_string(self->done_)
                               : s.uri;
    ++self->stats_.per_endpoint[via];
    ++self->stats_.published;
    bool last = ++self->done_ == s.count;
    uint64_t seq = self->Submit(via, std::move(uri), [self, last](uint64_t seq, uint64_t ts, Reply& r) {
      ++self->stats_.acked;
      if (ts && (!self->stats_.first_ts_ns || ts < self->stats_.first_ts_ns)) self->stats_.first_ts_ns = ts;
      self->stats_.last_ts_ns = std::max(self->stats_.last_ts_ns, ts);
      if (last && ts) {
        double planned = double(self->run_start_ns_) + double(self->spec_.count - 1) / self->spec_.rate * kSec;
        self->stats_.publish_lag_ms = (double(ts) - planned) / 1e6;
      }
      if (r.status / 100 != 2) {
        ++self->stats_.errors;
        if (self->stats_.first_error.empty()) {
          self->stats_.first_error = "seq " + std::to_string(seq) + ": " +
                                     (r.status ? "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error);
        }
      }
      self->MaybeFinish();
    });
    if (!self->stats_.first_seq) self->stats_.first_seq = seq;
    self->stats_.last_seq = seq;
  }
  if (self->done_ >= s.count) uv_timer_stop(t);
}

void MultiPublisher::MaybeFinish() {
  if (!run_active_ || done_ < spec_.count || stats_.acked < stats_.published) return;
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

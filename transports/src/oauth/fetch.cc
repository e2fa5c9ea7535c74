#include "oauth/fetch.h"

#include <algorithm>
#include <exception>

#include "server/log.h"

namespace mcpfan::detail::oauth {

namespace {
// Deadlines are checked this often while a call is in flight (no timer handle per call: a
// call then frees at once, without waiting for libuv to close a handle).
constexpr std::uint64_t kTickMs = 25;

std::string origin_of(const proxy::UpstreamTarget& t) {
  return (t.https ? "https://" : "http://") + t.authority;
}
}  // namespace

struct Fetcher::Call final : proxy::UpstreamSink {
  Fetcher* owner = nullptr;
  proxy::UpstreamPool* pool = nullptr;
  proxy::UpstreamCall* call = nullptr;
  std::uint64_t deadline_ms = 0;
  FetchDone done;
  Fetched answer;

  void on_head(int status, const proxy::HeaderList& headers) override {
    answer.status = status;
    answer.headers = headers;
  }
  void on_body(std::string_view bytes) override {
    if (answer.body.size() + bytes.size() > owner->limits_.max_body_bytes) {
      pool->cancel(call);
      call = nullptr;
      Fetched f;
      f.error = "answer larger than " + std::to_string(owner->limits_.max_body_bytes) + " bytes";
      owner->finish(this, std::move(f));
      return;
    }
    answer.body.append(bytes);
  }
  void on_end() override {
    call = nullptr;
    answer.ok = true;
    owner->finish(this, std::move(answer));
  }
  void on_failure(proxy::UpstreamFailure kind, const std::string& what) override {
    call = nullptr;
    Fetched f;
    f.error = std::string(proxy::failure_name(kind)) + ": " + what;
    owner->finish(this, std::move(f));
  }
};

Fetcher::Fetcher(uv_loop_t* loop, std::shared_ptr<tls::ClientContext> tls, FetchLimits limits)
    : loop_(loop), tls_(std::move(tls)), limits_(limits) {
  uv_timer_init(loop_, &tick_);
  tick_.data = this;
}

Fetcher::~Fetcher() = default;

Result<proxy::UpstreamTarget> parse_fetch_url(std::string_view url) {
  auto t = proxy::parse_upstream_url(url);
  if (!t) {
    std::string m = t.error().message;
    // The proxy's parser names its own flag; these URLs are others'.
    if (m.rfind("--upstream ", 0) == 0) m.erase(0, 11);
    return Error{rpc_code::kInvalidParams, std::move(m)};
  }
  return std::move(t.value());
}

bool is_loopback_url(std::string_view url) {
  auto t = parse_fetch_url(url);
  if (!t) return false;
  const std::string& h = t.value().host;
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

proxy::UpstreamPool* Fetcher::pool_for(const proxy::UpstreamTarget& t) {
  std::string key = origin_of(t);
  auto it = pools_.find(key);
  if (it != pools_.end()) return it->second.get();
  proxy::UpstreamLimits l;
  l.connect_ms = limits_.timeout_ms;
  l.first_byte_ms = limits_.timeout_ms;
  l.idle_ms = limits_.timeout_ms;
  l.max_idle = 2;
  auto pool = std::make_unique<proxy::UpstreamPool>(loop_, t, l);
  proxy::UpstreamPool* p = pool.get();
  pools_.emplace(std::move(key), std::move(pool));
  return p;
}

void Fetcher::request(const std::string& url, std::string content_type, std::string body,
                      std::vector<std::pair<std::string, std::string>> headers, FetchDone done) {
  auto fail_later = [&](std::string why) {
    // Never from inside this call: the caller may hold a lock or be mid-update.
    auto c = std::make_unique<Call>();
    c->owner = this;
    c->done = std::move(done);
    c->answer.error = std::move(why);
    c->deadline_ms = 0;  // the next tick finishes it
    calls_.push_back(std::move(c));
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&tick_))) uv_timer_start(&tick_, on_tick, 0, kTickMs);
  };
  if (closing_) return fail_later("shutting down");
  auto target = parse_fetch_url(url);
  if (!target) return fail_later(target.error().message);
  proxy::UpstreamTarget t = std::move(target.value());
  if (t.https) {
    if (!tls_) return fail_later(url + ": https is not configured");
    t.tls = tls_;
  }
  std::string bytes = (content_type.empty() ? "GET " : "POST ") + t.path + " HTTP/1.1\r\nHost: " + t.authority +
                      "\r\nAccept: application/json\r\nUser-Agent: mcpfan\r\n";
  for (auto& [name, value] : headers) bytes += name + ": " + value + "\r\n";
  if (!content_type.empty()) {
    bytes += "Content-Type: " + content_type + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  bytes += "\r\n";
  bytes += body;
  auto c = std::make_unique<Call>();
  c->owner = this;
  c->done = std::move(done);
  c->deadline_ms = uv_now(loop_) + limits_.timeout_ms;
  c->pool = pool_for(t);
  Call* raw = c.get();
  calls_.push_back(std::move(c));
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&tick_))) uv_timer_start(&tick_, on_tick, kTickMs, kTickMs);
  proxy::ForwardedRequest fr;
  fr.bytes = std::move(bytes);
  fr.idempotent = content_type.empty();
  raw->call = raw->pool->start(std::move(fr), raw);  // may fail at once: finish() then ran
}

void Fetcher::finish(Call* c, Fetched f) {
  auto it = std::find_if(calls_.begin(), calls_.end(), [c](const auto& p) { return p.get() == c; });
  if (it == calls_.end()) return;
  std::unique_ptr<Call> owned = std::move(*it);
  calls_.erase(it);
  if (owned->call) owned->pool->cancel(owned->call);
  FetchDone done = std::move(owned->done);
  // Freed after the pool's callback returns: finish() may run inside one of its sink calls.
  retired_.push_back(std::move(owned));
  if (!done) return;
  try {  // inside a pool's libuv callback: nothing may leave it
    done(std::move(f));
  } catch (const std::exception& e) {
    log::line(LogLevel::Error, "oauth_fetch_exception", std::string("an answer's handler failed: ") + e.what());
  }
}

void Fetcher::on_tick(uv_timer_t* t) {
  auto* self = static_cast<Fetcher*>(t->data);
  self->retired_.clear();
  std::uint64_t now = uv_now(self->loop_);
  std::vector<Call*> due;
  for (auto& c : self->calls_) {
    if (c->deadline_ms <= now) due.push_back(c.get());
  }
  for (Call* c : due) {
    Fetched f;
    f.error = c->answer.error.empty() ? "no answer within " + std::to_string(self->limits_.timeout_ms) + " ms"
                                      : c->answer.error;
    self->finish(c, std::move(f));
  }
  if (self->calls_.empty()) uv_timer_stop(&self->tick_);
}

void Fetcher::close() {
  if (closing_) return;
  closing_ = true;
  while (!calls_.empty()) {
    Fetched f;
    f.error = "shutting down";
    finish(calls_.front().get(), std::move(f));
  }
  for (auto& [origin, pool] : pools_) pool->close();
  uv_timer_stop(&tick_);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
}

bool Fetcher::closed() const noexcept {
  if (!closing_ || !uv_is_closing(reinterpret_cast<const uv_handle_t*>(&tick_))) return false;
  return std::all_of(pools_.begin(), pools_.end(), [](const auto& p) { return p.second->closed(); });
}

}  // namespace mcpfan::detail::oauth

#pragma once
// Small HTTP(S) exchanges with the services around an OAuth resource server (an authorization
// server's discovery documents and JWKS, its introspection endpoint, the application's
// --authorize-url): one request, one whole answer read up to a byte bound, within a deadline.
// It rides on the front proxy's client (proxy/upstream.h: keep-alive pools, host names looked
// up off the loop, TLS with the certificate checked), one pool per origin.
//
// Thread affinity: loop-affine (the loop given to the constructor; in mcpfan, the OAuth
// agent's own thread: oauth/agent.h). Lifetime: close() before the loop stops; every
// callback not yet called is then called with a failure, on the loop, from close().
#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/result.h"
#include "proxy/upstream.h"

namespace mcpfan::detail::oauth {

/** A whole answer, or why there is none. */
struct Fetched {
  bool ok = false;  // an answer came back whole (any status)
  int status = 0;
  proxy::HeaderList headers{};
  std::string body{};
  std::string error{};  // !ok: what failed ("timed out after 5000 ms", "answer larger than 262144 bytes", ...)
};
using FetchDone = std::function<void(Fetched)>;

struct FetchLimits {
  std::uint64_t timeout_ms = 5000;  // the whole exchange, connect to the last byte
  std::size_t max_body_bytes = 256 * 1024;
};

class Fetcher {
 public:
  /** `tls`: the trust roots for https URLs (null: https is refused). */
  Fetcher(uv_loop_t* loop, std::shared_ptr<tls::ClientContext> tls, FetchLimits limits);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  /**
   * GET `url` (or POST `body` with `content_type` when it is non-empty); `headers` are added
   * ("Name: value" pairs). `done` runs once, on the loop, never from inside this call.
   */
  void request(const std::string& url, std::string content_type, std::string body,
               std::vector<std::pair<std::string, std::string>> headers, FetchDone done);
  /** Fails what is in flight (their callbacks run now) and closes the pools. */
  void close();
  /** The pools' handles are all closed (after close() and a loop turn or two). */
  [[nodiscard]] bool closed() const noexcept;

 private:
  struct Call;
  proxy::UpstreamPool* pool_for(const proxy::UpstreamTarget& t);
  void finish(Call* c, Fetched f);
  static void on_tick(uv_timer_t* t);

  uv_loop_t* loop_;
  std::shared_ptr<tls::ClientContext> tls_;
  FetchLimits limits_;
  std::map<std::string, std::unique_ptr<proxy::UpstreamPool>> pools_;  // by scheme://authority
  std::vector<std::unique_ptr<Call>> calls_;    // in flight (bounded by the agent's waiting bound)
  std::vector<std::unique_ptr<Call>> retired_;  // finished inside a pool's callback: freed at the next tick
  uv_timer_t tick_{};                           // deadlines, while calls are in flight
  bool closing_ = false;
};

/** The URL as a pool target: http(s) only; the error names the URL and the problem. */
[[nodiscard]] Result<proxy::UpstreamTarget> parse_fetch_url(std::string_view url);
/** Whether `url`'s host is a loopback address or "localhost" (plain http is allowed only there). */
[[nodiscard]] bool is_loopback_url(std::string_view url);

}  // namespace mcpfan::detail::oauth

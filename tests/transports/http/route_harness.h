#pragma once
// Route unit tests without sockets: a real worker's parts (a ServerState and a LoopContext whose
// loop never runs: its hub, shard, sessions, limits, client core and decoders; no Worker) and an Exchange that
// records what a route did with the request instead of writing it anywhere.
#include <gtest/gtest.h>
#include <uv.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "http/exchange.h"
#include "http/request.h"
#include "http/router.h"
#include "server/preflight.h"
#include "server/server_state.h"
#include "server/loop_context.h"

namespace mcpfan::detail::testing {

/** What a route did with its request. */
class RecordingExchange final : public Exchange {
 public:
  explicit RecordingExchange(LoopContext& w, bool loopback_peer = true, bool operator_listener = false)
      : w_(w), binding_(w.limits()), loopback_(loopback_peer), operator_(operator_listener) {}

  std::optional<Response> response;
  struct Listen {
    Filter filter;
    std::string id;
    std::string ack_event;
  };
  std::optional<Listen> listen;
  bool usage_held = false;
  int answers = 0;  // respond, begin_listen, begin_session_stream or forward: exactly one per request

  /** The value of the answer's field `name` (empty: none). */
  [[nodiscard]] std::string field(std::string_view name) const {
    if (response) {
      for (const Field& f : response->headers) {
        if (f.name == name) return f.value;
      }
    }
    return {};
  }

  LoopContext& context() noexcept override { return w_; }
  bool peer_is_loopback() override { return loopback_; }
  bool on_operator_listener() const noexcept override { return operator_; }
  TenantBinding& binding() noexcept override { return binding_; }
  void respond(Response r) override {
    ++answers;
    response = std::move(r);
  }
  using Exchange::respond;
  void hold_stream_usage(StreamUsage usage) noexcept override {
    usage_held = true;
    usage_ = std::move(usage);
  }
  void begin_listen(const Filter& filter, std::string id, std::string ack_event) override {
    ++answers;
    listen = Listen{filter, std::move(id), std::move(ack_event)};
  }
  SessionRegistry::Claim begin_session_stream(std::shared_ptr<Session>, const std::string*,
                                              std::optional<std::string>) override {
    ++answers;
    return SessionRegistry::Claim::Ok;
  }
  void hold_head() noexcept override {}
  void release_head() override {}
  bool streams_session() const noexcept override { return false; }
  void start_upstream_leg(proxy::ForwardedRequest) override {}
  void forward(proxy::UpstreamPool&, proxy::ForwardedRequest, std::string, AnswerRewrite,
               std::unique_ptr<AnswerObserver>) override {
    ++answers;
  }
  /** A suspended request counts as answered (later); the test may call the Resume itself. */
  Resume suspend(const HttpRequest&) override {
    ++answers;
    suspended = true;
    return [](std::shared_ptr<const AuthWait>) {};
  }
  bool suspended = false;

 private:
  LoopContext& w_;
  TenantBinding binding_;
  StreamUsage usage_;
  bool loopback_;
  bool operator_;
};

/** A server's shared state and one loop's context built from `config`; the loop never runs. */
class RouteHarness {
 public:
  explicit RouteHarness(ServerConfig config) : state_(std::move(config)) {
    auto loaded = load_reloadable(state_.config, false);
    EXPECT_TRUE(loaded) << (loaded ? "" : loaded.error().message);
    if (loaded) install_reloadable(state_, std::move(loaded.value()));
    context_ = std::make_unique<LoopContext>(0, state_, [] { return StatsSnapshot{}; });
  }
  ~RouteHarness() {
    // The loop never ran: its handles are closed here so that it can be closed whole.
    uv_loop_t* loop = context_->loop();
    uv_walk(loop, [](uv_handle_t* h, void*) { if (!uv_is_closing(h)) uv_close(h, nullptr); }, nullptr);
    uv_run(loop, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(loop), 0);
    context_.reset();
    state_.hub->close();
  }
  RouteHarness(const RouteHarness&) = delete;
  RouteHarness& operator=(const RouteHarness&) = delete;

  [[nodiscard]] LoopContext& context() noexcept { return *context_; }
  [[nodiscard]] ServerState& state() noexcept { return state_; }

  /** Routes `req` as a connection would, and returns what the route did. */
  std::unique_ptr<RecordingExchange> route(HttpRequest req, bool loopback_peer = true) {
    auto ex = std::make_unique<RecordingExchange>(*context_, loopback_peer);
    route_request(*ex, req);
    EXPECT_EQ(ex->answers, 1) << "a request gets exactly one answer";
    return ex;
  }

 private:
  ServerState state_;
  std::unique_ptr<LoopContext> context_;
};

}  // namespace mcpfan::detail::testing

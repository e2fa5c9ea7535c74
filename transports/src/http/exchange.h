#pragma once
// The seam between the wire and the meaning of HTTP (docs/design.md "The rooms of transports/"): one
// request being answered, as the routes (http/router.h) see it. A route reads the request
// value (http/request.h) and then does one of four things through its Exchange: answers with
// a Response value, turns the exchange into a listen's event stream, into a 2025 session's
// GET stream, or hands it to the upstream (--upstream). It never sees bytes, sockets or the
// HTTP version: the HTTP/1.1 connection (http1/connection.h) implements this, an HTTP/2
// stream will too, and the route unit tests implement it without a socket.
//
// Thread affinity: loop-affine (the worker whose loop reads the request). Lifetime: valid for
// the route call; what outlives it (a stream, a proxied answer) is the implementation's.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/request.h"
#include "http/response.h"
#include "mcp/sessions.h"
#include "mcp/usage.h"
#include "mcpfan/shard.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

class LoopContext;

/** An upstream's answer read whole (the answers whose capabilities mcpfan merges). */
struct UpstreamAnswer {
  int status = 0;
  proxy::HeaderList headers;
  std::string body;
};
/** Sees a whole upstream answer before it is written; may change it. */
using AnswerRewrite = std::function<void(UpstreamAnswer&)>;
/**
 * Sees an upstream answer stream by as the client gets it, unchanged (poll-to-push's capture of
 * a task handle: http/task_capture.h). Told nothing of a failure: it is simply dropped.
 * Loop-affine; owned by the answer, destroyed with it.
 */
class AnswerObserver {
 public:
  virtual ~AnswerObserver() = default;
  virtual void answer_head(int status, const proxy::HeaderList& headers) = 0;
  virtual void answer_body(std::string_view bytes) = 0;
  /** The answer is whole (and was written whole to the client's carrier). */
  virtual void answer_end() = 0;
};

class Exchange {
 public:
  virtual ~Exchange() = default;

  /** The loop's context (server/loop_context.h: hub, shard, sessions, limits, clients, config) the route works with. */
  [[nodiscard]] virtual LoopContext& context() noexcept = 0;
  [[nodiscard]] virtual bool peer_is_loopback() = 0;
  /** Accepted on --publish-listen's listener (router.cc serves the operator paths there). */
  [[nodiscard]] virtual bool on_operator_listener() const noexcept = 0;
  /** The common name of the client's TLS certificate, verified against --tls-client-ca; empty: none. */
  [[nodiscard]] virtual std::string client_certificate() const { return {}; }
  /** The binding of the connection to the tenant it is counted against (TenantBinding::bind moves it). */
  [[nodiscard]] virtual TenantBinding& binding() noexcept = 0;

  // ---- answers: exactly one of these per request ----
  /** A complete answer. */
  virtual void respond(Response r) = 0;
  /** `content_type`: a literal or empty (Response::content_type keeps the view, not a copy). */
  void respond(int status, std::string_view content_type, std::string body, std::vector<Field> headers = {}) {
    respond(Response{status, content_type, std::move(body), std::move(headers)});
  }
  /** The listen about to begin holds this (one stream and its subscriptions) until it closes. */
  virtual void hold_stream_usage(StreamUsage usage) noexcept = 0;
  /** Turns the exchange into the event stream of one listen; `ack` is its first event. */
  virtual void begin_listen(const Filter& filter, std::string id, std::string ack_event) = 0;
  /**
   * Claims the 2025-era session's GET stream and turns the exchange into it: it records itself
   * as the session's stream, ends the parked or taken-over previous one, and starts with the
   * priming event and, for a `last_event_id`, the replay or re-read hints. `upstream_cursor`
   * (front proxy) becomes the session's upstream event id once the claim holds. Ended or Busy:
   * nothing happened, the caller answers.
   */
  [[nodiscard]] virtual SessionRegistry::Claim begin_session_stream(
      std::shared_ptr<Session> session, const std::string* last_event_id,
      std::optional<std::string> upstream_cursor = std::nullopt) = 0;
  /**
   * The next stream's 200 waits for release_head(): a proxied session's GET answers once the
   * upstream's own GET for the session has answered (what the upstream sends right after is
   * then not lost). Its notifications wait with it.
   */
  virtual void hold_head() noexcept = 0;
  virtual void release_head() = 0;
  /** A session stream (begin_session_stream) that is open. */
  [[nodiscard]] virtual bool streams_session() const noexcept = 0;
  /** Holds the upstream's GET stream for this session stream (front proxy). */
  virtual void start_upstream_leg(proxy::ForwardedRequest request) = 0;
  /**
   * Answers the request from the upstream: `request` goes out over `pool`, the answer comes
   * back as it arrives, or read whole and passed to `rewrite` first when one is given.
   * `id_json`: the request's JSON-RPC id, for an error answer (empty: none). `observer`
   * (optional) sees a streamed answer go by.
   */
  virtual void forward(proxy::UpstreamPool& pool, proxy::ForwardedRequest request, std::string id_json,
                       AnswerRewrite rewrite, std::unique_ptr<AnswerObserver> observer) = 0;

  /** Routes the suspended request again, with what it waited for; loop-affine; nothing once the exchange ended. */
  using Resume = std::function<void(std::shared_ptr<const AuthWait>)>;
  /**
   * The request cannot be answered on this loop turn: it waits for something off the loop (the
   * OAuth agent: keys, an introspection, the application's --authorize-url answer). The
   * exchange keeps a copy of `req` (later pipelined requests wait behind it, bounded) and
   * answers nothing now. Calling the Resume (on this loop, once) routes the copy again with
   * `waited` set; if the client went away meanwhile it does nothing. Not answered at all, the
   * exchange ends at its request timeout (503).
   */
  [[nodiscard]] virtual Resume suspend(const HttpRequest& req) = 0;
};

}  // namespace mcpfan::detail

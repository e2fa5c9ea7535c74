#pragma once
// One client request answered by the --upstream MCP server (docs/protocol.md "Front proxy"),
// whatever HTTP version the client speaks. The request goes out over the loop's UpstreamPool;
// the answer comes back as it arrives (status, end-to-end fields, body), the upstream paused
// while the client reads slower than it writes; or, for the answers whose capabilities mcpfan
// merges (initialize, server/discover), it is read whole up to a bound and rewritten first.
// An upstream that cannot be reached or answers nothing in time gets the client a 502 or 504
// (a JSON-RPC error when the request had an id); one that fails after its answer began cuts
// the client's answer short. How the answer is framed (HTTP/1.1: Content-Length or chunks,
// Connection: close) is its AnswerCarrier's business.
//
// Loop-affine (its carrier's worker). Owned by the carrier from Exchange::forward() on; the
// carrier cancels it when it closes, and it ends with exactly one AnswerCarrier::answer_done().
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/exchange.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

class LoopContext;

/** What carries a proxied answer to the client. Loop-affine. */
class AnswerCarrier {
 public:
  /**
   * The answer's head: its status and end-to-end fields (already filtered), and the body's
   * length when the upstream gave it (nullopt: the body streams). `no_body`: the client gets
   * none (a HEAD request, a 204 or a 304), whatever the upstream sends.
   */
  virtual void answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                           bool no_body) = 0;
  /** Body bytes as they come; not called for a `no_body` answer. */
  virtual void answer_body(std::string_view bytes) = 0;
  /** The body is whole. */
  virtual void answer_end() = 0;
  /** The client reads slower than the upstream writes: the upstream waits for ProxiedAnswer::drained(). */
  [[nodiscard]] virtual bool answer_backlogged() const noexcept = 0;
  /** An error answer instead of the upstream's (nothing was written yet). */
  virtual void answer_error(Response r) = 0;
  /** Over: written whole (`complete`) or cut short. Called last: the answer may be destroyed. */
  virtual void answer_done(bool complete) = 0;

 protected:
  ~AnswerCarrier() = default;
};

class ProxiedAnswer final : public proxy::UpstreamSink {
 public:
  /** `id_json`: the request's JSON-RPC id (empty for a notification or an undecoded body). */
  ProxiedAnswer(LoopContext& ctx, AnswerCarrier& carrier, std::string id_json, bool head_request);
  ~ProxiedAnswer() override;
  ProxiedAnswer(const ProxiedAnswer&) = delete;
  ProxiedAnswer& operator=(const ProxiedAnswer&) = delete;

  /** Read the answer whole (bounded by --upstream-max-answer-bytes) and pass it to `rewrite` first. */
  void rewrite_with(AnswerRewrite rewrite) { rewrite_ = std::move(rewrite); }
  /** Shows a streamed answer (not a rewritten one) to `observer` as it goes by. */
  void observe_with(std::unique_ptr<AnswerObserver> observer) { observer_ = std::move(observer); }
  /** Sends `request` (http/upstream_request.h). Sink calls may come before it returns. */
  void start(proxy::UpstreamPool& pool, proxy::ForwardedRequest request);
  /** The client went away: the upstream call ends and nothing more is written. */
  void cancel() noexcept;
  /** The client caught up with the answer: read the upstream again. */
  void drained();

  // proxy::UpstreamSink
  void on_head(int status, const proxy::HeaderList& headers) override;
  void on_body(std::string_view bytes) override;
  void on_end() override;
  void on_failure(proxy::UpstreamFailure kind, const std::string& what) override;

 private:
  void write_head(int status, const proxy::HeaderList& headers, std::optional<std::size_t> length);
  void fail_before_head(int status, std::string message);
  // Logs an upstream failure (warn, kind upstream_failed); status 0: the answer had begun and is cut.
  void log_failure(std::string_view failure, const std::string& what, int status) noexcept;

  LoopContext& ctx_;
  AnswerCarrier& carrier_;
  std::string id_json_;
  bool head_request_;
  proxy::UpstreamPool* pool_ = nullptr;
  proxy::UpstreamCall* call_ = nullptr;
  bool done_ = false;
  bool head_written_ = false;
  bool no_body_ = false;  // HEAD, 204, 304: the client gets no body
  AnswerRewrite rewrite_;
  std::unique_ptr<AnswerObserver> observer_;  // dropped when the answer fails
  UpstreamAnswer buffered_;  // rewrite_ set: the answer so far
};

}  // namespace mcpfan::detail

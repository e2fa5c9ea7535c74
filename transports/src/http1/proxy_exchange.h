#pragma once
// One client request answered by the --upstream MCP server (docs/protocol.md "Front proxy"). The
// request goes out over the worker's UpstreamPool; the answer comes back to the client as it
// arrives — status, end-to-end headers, body re-framed (chunked unless the upstream gave a
// length), the upstream paused while the client reads slower than it writes — or, for the
// answers whose capabilities mcpfan merges (initialize, server/discover), read whole up to a
// bound and rewritten first. An upstream that cannot be reached or answers nothing in time
// gets the client a 502 or 504 (a JSON-RPC error when the request had an id); one that fails
// after its answer began cuts the client's answer short (the connection closes).
//
// Loop-affine (its connection's worker). Owned by the Http1Conn from begin_proxy() on; the
// connection cancels it when it closes, and it ends with exactly one proxy_done().
#include <functional>
#include <string>
#include <string_view>

#include "http/exchange.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

class Http1Conn;

class ProxyExchange final : public proxy::UpstreamSink {
 public:
  using Answer = UpstreamAnswer;
  using Rewrite = AnswerRewrite;

  /** `id_json`: the request's JSON-RPC id (empty for a notification or an undecoded body). */
  ProxyExchange(Http1Conn& conn, std::string id_json, bool head_request);
  ~ProxyExchange() override;
  ProxyExchange(const ProxyExchange&) = delete;
  ProxyExchange& operator=(const ProxyExchange&) = delete;

  /** Read the answer whole (bounded by --upstream-max-answer-bytes) and pass it to `rewrite` first. */
  void rewrite_with(Rewrite rewrite) { rewrite_ = std::move(rewrite); }
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
  void write_head(int status, const proxy::HeaderList& headers, std::size_t content_length, bool length_known);
  void fail_before_head(int status, std::string message);
  // Logs an upstream failure (warn, kind upstream_failed); status 0: the answer had begun and is cut.
  void log_failure(std::string_view failure, const std::string& what, int status) noexcept;

  Http1Conn& conn_;
  std::string id_json_;
  bool head_request_;
  proxy::UpstreamPool* pool_ = nullptr;
  proxy::UpstreamCall* call_ = nullptr;
  bool done_ = false;
  bool head_written_ = false;
  bool chunked_ = false;
  bool no_body_ = false;  // HEAD, 204, 304: the client gets no body
  Rewrite rewrite_;
  Answer buffered_;  // rewrite_ set: the answer so far
};

}  // namespace mcpfan::detail

#pragma once
// One stdio-framed MCP client (design §2.3): newline-delimited JSON-RPC in both directions
// on a pipe pair (the process's own stdin/stdout) or one socket (a --unix connection, or
// any fd an embedding host attaches). The connection is its own 2025-era session
// (initialize, resources/subscribe) and may hold many 2026 listens, demultiplexed by
// subscriptionId. Loop-affine; freed once libuv has closed its handles.
#include <uv.h>

#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <string>
#include <utility>
#include <vector>

#include "mcp/auth.h"
#include "server/conn.h"
#include "mcp/limits.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/shard.h"

namespace mcpfan::detail {

class Worker;

class StdioConn final : public Conn, public StreamSink {
 public:
  /**
   * Adopts the fds (in_fd == out_fd for a socket) and starts reading. On failure returns
   * nullptr with `err` set, and the fds are closed.
   */
  static StdioConn* open(Worker& w, int in_fd, int out_fd, bool exit_on_eof, bool from_unix_listener, std::string& err);

  // Conn
  void begin_shutdown() override;
  void force_close() override { close(); }
  void sweep(std::uint64_t now_ms) override;

  // StreamSink
  void write_batch(OutBatch&& batch) override;
  void close_requested(CloseReason reason) override;

 private:
  union Handle {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_pipe_t pipe;
    uv_tty_t tty;
    uv_tcp_t tcp;
  };

  struct Listen {
    SubId sub;
    std::int64_t subscriptions;  // counted against the tenant until the listen ends
  };

  StdioConn(Worker& w, bool exit_on_eof);
  /** Takes the connection slot of the tenant it is bound to; false (and replies) when refused. */
  bool authenticate(RpcRequest& r);
  void end_listen_usage(const Listen& l);
  /** Answers a request refused by the tenant's ceiling for `r` (-32032 naming it). */
  void reply_limited(std::string_view id, Resource r);
  /** Answers and returns true when the client's token does not cover `uri` (-32602). */
  bool refuse_uri(std::string_view id, const std::string& uri);
  int init_handle(Handle& h, int fd, bool readable);
  uv_stream_t* out() noexcept { return separate_out_ ? &out_.stream : &in_.stream; }
  void on_read(ssize_t nread, const uv_buf_t* buf);
  void handle_line(std::string_view line);
  void handle_request(RpcRequest& r);
  void start_listen(RpcRequest& r);
  void reply(std::string json);
  void reply_error(std::string_view id, int code, std::string message, std::string_view data = {});
  void close();
  void maybe_finish();
  struct FileWrite;
  void write_file(FileWrite* fw);
  void file_written(FileWrite* fw, ssize_t result);
  /** Frees this connection once it is closing and nothing (handle, file write) still uses it. */
  void maybe_free();

  Worker& w_;
  Handle in_{};
  Handle out_{};
  bool separate_out_ = false;
  int out_file_fd_ = -1;    // stdout redirected to a regular file: written in libuv's threadpool
  bool file_write_in_flight_ = false;
  bool exit_on_eof_ = false;
  bool closing_ = false;
  bool ending_ = false;     // shutdown: closes once the final results are written
  bool skipping_ = false;   // discarding the rest of an over-long line
  int open_handles_ = 0;
  int writes_in_flight_ = 0;
  std::uint64_t write_progress_ms_ = 0;  // when a write last completed (or the first was queued)
  std::string line_;        // a partial line carried between reads
  StreamId stream_{};
  bool stream_open_ = false;
  bool session_ = false;    // a 2025-era initialize created the session subscription
  SubId session_sub_{};
  TenantId tenant_ = kDefaultTenant;
  TenantRef tenant_ref_;         // keeps tenant_'s entry alive (none for the default tenant)
  bool tenant_bound_ = false;    // counted against tenant_'s connections
  bool needs_auth_ = false;      // a --unix client with client auth on and no --unix-tenant
  std::optional<ClientIdentity> identity_;  // from its token: which URIs it may subscribe to
  std::unordered_set<std::string> session_uris_;   // resources/subscribe, counted against the tenant
  std::unordered_map<std::string, Listen> listens_; // by request id as JSON text
};

}  // namespace mcpfan::detail

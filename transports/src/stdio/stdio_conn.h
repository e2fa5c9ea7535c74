#pragma once
// One stdio-framed MCP client (design §2.3): newline-delimited JSON-RPC in both directions
// on a pipe pair (the process's own stdin/stdout) or one socket (a --unix connection, or
// any fd an embedding host attaches). The connection is its own 2025-era session
// (initialize, resources/subscribe) and may hold many 2026 listens, demultiplexed by
// subscriptionId. Loop-affine; freed once libuv has closed its handles.
// Its code is in three files: stdio_conn.cc (descriptors, line framing, writing, closing),
// stdio_files.cc (stdin or stdout redirected to a regular file, through libuv's threadpool)
// and stdio_requests.cc (the MCP requests, admitted by the client core like HTTP's).
// At the end of its input it still answers every complete line received, ends its listens
// with their final results, and closes once all of that is written.
#include <uv.h>

#include <optional>
#include <unordered_map>
#include <string>
#include <utility>
#include <vector>

#include "mcp/client.h"
#include "mcp/limits.h"
#include "mcp/usage.h"
#include "mcpfan/rpc_decoder.h"
#include "mcpfan/shard.h"
#include "net/socket.h"
#include "server/conn.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

class LoopContext;
struct McpMethod;

class StdioConn final : public Conn, public StreamSink, private net::SocketEvents {
 public:
  /**
   * Adopts the fds (in_fd == out_fd for a socket) and starts reading. `number` is the host's
   * StdioClient handle (0: none); on success `on_end` is moved in and called once when the
   * connection is freed. On failure returns nullptr with `err` set, the fds are closed and
   * `on_end` is left to the caller.
   */
  static StdioConn* open(LoopContext& w, int in_fd, int out_fd, bool from_unix_listener, std::uint64_t number,
                         StdioEndFn& on_end, std::string& err);
  /** Server::detach_stdio(): ends the client as at the end of its input. */
  void detach() override;

  // Conn
  void begin_shutdown() override;
  void force_close() override { close(); }
  void sweep(std::uint64_t now_ms) override;

  // StreamSink
  void write_batch(OutBatch&& batch) override;
  void close_requested(CloseReason reason) override;

 private:
  struct Listen {
    SubId sub;
    StreamUsage usage;  // counted against the tenant until the listen ends
  };

  explicit StdioConn(LoopContext& w);
  /** Records why it ends; the first reason given wins (an EOF during a stop is InputEnded). */
  void note_end(StdioEnd why) noexcept {
    if (!end_reason_) end_reason_ = why;
  }
  /** Takes the connection slot of the tenant it is bound to; false (and replies) when refused. */
  bool authenticate(RpcRequest& r);
  /** Answers a request the client core refused (a notification gets nothing). */
  void reply_refusal(const RpcRequest& r, const Refusal& refusal);
  void handle_session_request(const McpMethod& method, RpcRequest& r);
  /** Opens `sock` on `fd`, counting its handle once it exists (only a close may end it then). */
  int open_socket(net::Socket& sock, int fd, bool readable);
  // net::SocketEvents: input arrives on in_, output is written to out() (in_ itself for one socket)
  void on_data(net::Socket& s, const char* data, std::size_t len) override;
  void on_read_end(net::Socket&, int) override { on_eof(); }
  void on_written(net::Socket& s, std::uint32_t tag, int status) override;
  void on_shutdown_failed(net::Socket&) override {}
  void on_closed(net::Socket&) override { handle_closed(); }
  void on_failure(net::Socket&) override { close(); }
  void handle_closed();
  void on_eof();
  // stdio_files.cc
  void write_batch_to_file(OutBatch&& batch);
  void read_file();
  void file_read(ssize_t result);
  net::Socket& out() noexcept { return separate_out_ ? out_ : in_; }
  void on_input(std::string_view data);
  void handle_line(std::string_view line);
  void handle_request(RpcRequest& r);
  /** --authorize-url: narrows `spec`; false when refused (answered), or being asked (the client is told to retry). */
  [[nodiscard]] bool authorized(const RpcRequest& r, ListenSpec& spec);
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

  LoopContext& w_;
  net::Socket in_;
  net::Socket out_;            // with separate_out_ (and stdout not a file)
  // stdin redirected from a regular file: read in libuv's threadpool (stdio_files.cc)
  struct FileInput {
    bool used = false;       // stdin is a file (even once its descriptor is closed)
    int fd = -1;
    bool reading = false;    // a read is in the threadpool
    bool paused = false;     // its answers backed up: the next read waits for them to drain
    uv_fs_t req{};
    std::string buf;
    uv_timer_t anchor{};     // never started: it only anchors the close callback
    bool anchor_open = false;
  } in_file_;
  // stdout redirected to a regular file: written in libuv's threadpool (stdio_files.cc)
  struct FileOutput {
    int fd = -1;
    bool writing = false;           // a write is in the threadpool
    int writes = 0;                 // batches being written (socket writes: the socket counts them)
    std::uint64_t progress_ms = 0;  // when a write last completed (or the first was queued)
  } out_file_;
  bool separate_out_ = false;
  std::uint64_t number_ = 0;          // the host's StdioClient handle, 0 for none
  StdioEndFn on_end_;                 // the host's, called once when freed
  std::optional<StdioEnd> end_reason_;  // unset when it closes: a failure (StdioEnd::Failed)
  bool closing_ = false;
  bool ending_ = false;     // shutdown: closes once the final results are written
  bool skipping_ = false;   // discarding the rest of an over-long line
  bool eof_ = false;        // the input ended
  int open_handles_ = 0;
  std::string line_;        // a partial line carried between reads
  StreamId stream_{};
  bool stream_open_ = false;
  Caller caller_;                // its tenant and, once it sent a token, the token's identity
  TenantRef tenant_ref_;         // keeps caller_.tenant's entry alive until binding_ holds it
  TenantBinding binding_;        // counted against its tenant's connections (from the first request)
  bool needs_auth_ =
      false;  // a --unix client with client auth on and no --unix-tenant; any client with the host's authenticator
  ClientTransport transport_ = ClientTransport::Stdio;  // what the host's authenticator is told
  // The 2025-era session an initialize creates: one stream, the list_changed subscription,
  // and the resources/subscribe URIs, counted against the tenant (`uris` set: it exists).
  struct Session2025 {
    SubId sub{};
    StreamUsage usage;
    std::optional<SessionUris> uris;
  } session_;
  std::unordered_map<std::string, Listen> listens_; // by request id as JSON text
};

}  // namespace mcpfan::detail

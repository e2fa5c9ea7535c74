#pragma once
// One connected byte stream of a worker loop (an accepted TCP connection, a Unix-domain
// socket, a pipe or a tty) and the only thing that writes to it (docs/design.md "The rooms of
// transports/"). Its connection reads through it and hands it whole answers or shard batches; the
// socket picks the road of each (uv_try_write now, the loop's io_uring SendRing, or libuv's
// write queue) and keeps them in the order they were written, whatever the road. A shutdown
// or close waits for the writes before it. A TLS socket (start_tls) decrypts what it reads
// before its connection sees it and encrypts every write: its connection never knows.
//
// Order, the one rule: a batch queued in the SendRing is not in libuv's queue yet, so what is
// written after it (an answer, the chunked terminator, a shutdown, the close) waits in this
// socket's own list until the ring hands the batch over, and then follows it into libuv's
// queue. Nothing flushes the ring on a connection's behalf, and no flush re-enters a
// connection from inside its own call.
//
// Thread affinity: loop-affine (its connection's worker loop). Lifetime: a member of its
// connection. After close() the connection stays alive until on_closed(), its last event
// (the connection may free itself there, the socket with it). A socket opened must be closed.
#include <uv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/shard.h"

namespace mcpfan::detail {

class SendRing;
struct QueuedBatch;
struct BatchRoute;

namespace tls {
class Channel;
}

namespace net {

/** What the sockets of one loop share. Filled by the worker on its own thread; outlives the loop's sockets. */
struct LoopIo {
  uv_loop_t* loop = nullptr;
  SendRing* ring = nullptr;  // null: no io_uring (every write goes through libuv)
  char* read_buffer = nullptr;  // shared by the loop's reads: each is consumed before the next
  std::size_t read_buffer_size = 0;
  std::atomic<std::uint64_t>* callback_exceptions = nullptr;  // an event that threw is counted here
};

class Socket;

/** What a socket tells its connection. Called on the loop; an exception thrown is counted and then on_failure() is
 * called. */
class SocketEvents {
 public:
  virtual ~SocketEvents() = default;
  /** Bytes read; valid until the call returns. */
  virtual void on_data(Socket& s, const char* data, std::size_t len) = 0;
  /** The peer's EOF (UV_EOF) or a read error. */
  virtual void on_read_end(Socket& s, int status) = 0;
  /** A write that write() or write_batch() answered Queued is done: 0, or a libuv error (UV_ECANCELED after close()).
   */
  virtual void on_written(Socket& s, std::uint32_t tag, int status) = 0;
  /** A shutdown() failed in the kernel (not: cancelled by a close). */
  virtual void on_shutdown_failed(Socket& s) = 0;
  /** The handle is closed and no callback of the socket's is left. The last event. */
  virtual void on_closed(Socket& s) = 0;
  /** One of the events above threw (counted): the connection should close. */
  virtual void on_failure(Socket& s) = 0;
};

class Socket {
 public:
  enum class Sent : std::uint8_t {
    Done,    // all of it went out now
    Queued,  // the rest waits (libuv's queue, the ring or this socket's list): on_written(tag) follows
    Failed,  // the stream is broken: the connection closes
  };

  Socket(LoopIo& io, SocketEvents& events) noexcept;
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  /** An empty TCP handle to uv_accept() into (stream()). 0 or a libuv error; once opened() it must be closed. */
  [[nodiscard]] int init_tcp();
  /**
   * Adopts `fd`: a pipe or Unix-domain socket, a tty or a TCP socket (a regular file is
   * UV_EINVAL). 0, or a libuv error; then the fd is still the caller's unless opened() holds.
   */
  [[nodiscard]] int open(int fd, bool readable);
  /** A handle exists (close() must be called, and on_closed() awaited). */
  [[nodiscard]] bool opened() const noexcept { return state_ != State::Unopened; }
  [[nodiscard]] bool closing() const noexcept { return state_ == State::Closing || state_ == State::Closed; }
  [[nodiscard]] uv_stream_t* stream() noexcept { return &handle_.stream; }
  /**
   * Hands the socket's events to another connection (an HTTP/1.1 connection that finds the
   * HTTP/2 preface gives its socket to the HTTP/2 one). From the next event on, even one of
   * the read being delivered now.
   */
  void set_events(SocketEvents& events) noexcept { events_ = &events; }

  // ---- TCP options (no-ops on other streams) ----
  /** Keep-alive probes every `keepalive_s` when idle, and TCP_USER_TIMEOUT for unacknowledged data. */
  void set_keepalive(unsigned keepalive_s, std::uint64_t user_timeout_ms);
  /** Bounds the bytes the kernel holds unsent (TCP_NOTSENT_LOWAT): a slow reader's backlog stays in mcpfan. */
  void limit_unsent(int bytes);
  [[nodiscard]] bool peer_is_loopback();

  // ---- TLS ----
  /**
   * Makes this a TLS socket, before read_start(): what is read is decrypted before on_data()
   * (handshake records are answered here), and every write is encrypted, in order. A TLS
   * failure is on_read_end(UV_EPROTO) after the alert is written; the peer's close_notify is
   * on_read_end(UV_EOF). Batches' records go through the loop's ring when it has one (as
   * plaintext batches do); answers' records, as answers, through libuv's queue.
   */
  void start_tls(std::unique_ptr<tls::Channel> channel);
  /** The TLS channel (ALPN, client certificate), or null for a plaintext socket. */
  [[nodiscard]] const tls::Channel* tls() const noexcept { return tls_.get(); }
  /** The common name of the client's TLS certificate, verified against the listener's client CAs; empty: none. */
  [[nodiscard]] std::string client_certificate() const;
  /** A TLS socket whose handshake is not done yet. */
  [[nodiscard]] bool tls_handshaking() const noexcept;

  // ---- reading ----
  [[nodiscard]] int read_start();
  void read_stop();

  // ---- writing, in the order called ----
  /** Writes `bytes` (always through libuv's queue, as answers always were). */
  [[nodiscard]] Sent write(std::string bytes, std::uint32_t tag);
  /**
   * Writes a shard batch. `frame` fills its framing slot (bufs[0]); empty: the slot is skipped.
   * At most 24 bytes. Done means the batch's references are released already.
   */
  [[nodiscard]] Sent write_batch(OutBatch&& batch, std::string_view frame, std::uint32_t tag);
  /** Shuts the write side down once every write before it is out. False: it failed at once. */
  [[nodiscard]] bool shutdown();
  /** Stops reading and closes once the ring has handed over this socket's batch; on_closed() follows. Idempotent. */
  void close();

  /** Bytes written and not yet taken by the kernel (libuv's queue and this socket's list; not the ring). */
  [[nodiscard]] std::size_t queued_bytes() const noexcept;
  /** Whether a write answered Queued is not done yet. */
  [[nodiscard]] bool writes_pending() const noexcept { return writes_in_flight_ > 0; }
  /** A write has been pending and none completed for `timeout_ms`: the peer stopped reading. */
  [[nodiscard]] bool write_stalled(std::uint64_t now_ms, std::uint64_t timeout_ms) const noexcept {
    return writes_in_flight_ > 0 && now_ms - write_progress_ms_ >= timeout_ms;
  }

 private:
  enum class State : std::uint8_t { Unopened, Open, Closing, Closed };
  struct BytesWrite;
  /** Something written while a batch of this socket's sat in the ring: issued when the ring hands it over. */
  struct Deferred {
    enum class Kind : std::uint8_t { Bytes, Batch, Shutdown, Close } kind;
    void* item = nullptr;  // BytesWrite* or QueuedBatch*
  };

  template <class F>
  void guard(F&& f) noexcept;
  [[nodiscard]] bool must_wait() const noexcept { return in_ring_ > 0 || !deferred_.empty(); }
  int issue_bytes(BytesWrite* w);
  Sent queue_bytes(std::string bytes, std::uint32_t tag);  // behind what waits, else to libuv now
  void read_tls(const char* data, std::size_t len);
  /** Writes the records the channel made so far (in tls_out_): tagged, or untagged (kNoTag: no on_written). */
  Sent send_records(std::uint32_t tag);
  [[nodiscard]] static BatchRoute ring_route(std::uint32_t tag) noexcept;  // a batch of this socket's, in the ring
  int issue_batch(QueuedBatch* q);
  [[nodiscard]] bool issue_shutdown();
  void issue_close();
  void handed_over();  // the ring gave this socket's batch to the kernel or libuv
  void write_queued() noexcept;
  void write_completed() noexcept;
  static void bytes_written(uv_write_t* req, int status);
  static void batch_written(uv_write_t* req, int status);

  LoopIo& io_;
  SocketEvents* events_;
  union Handle {
    uv_handle_t handle;
    uv_stream_t stream;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    uv_tty_t tty;
  } handle_{};
  State state_ = State::Unopened;
  bool is_tcp_ = false;
  bool ring_ok_ = false;  // a socket: the ring's sendmsg may carry it
  bool close_issued_ = false;  // uv_close was called (once only)
  unsigned in_ring_ = 0;  // batches of this socket's queued in the ring
  std::vector<Deferred> deferred_;  // bounded by the connection: its answers and one batch at a time
  std::size_t deferred_bytes_ = 0;
  std::uint32_t writes_in_flight_ = 0;   // writes answered Queued, not yet done
  std::uint64_t write_progress_ms_ = 0;  // when a write last completed (or the first was queued)
  uv_shutdown_t shutdown_req_{};
  std::unique_ptr<tls::Channel> tls_;
  std::string tls_out_;  // records the channel made and not yet written (one string: they leave in order)
};

}  // namespace net
}  // namespace mcpfan::detail

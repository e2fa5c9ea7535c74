#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdio>

#include "http/http_conn.h"
#include "mcp/client.h"
#include "mcp/messages.h"
#include "mcp/sessions.h"
#include "server/batch_write.h"
#include "server/worker.h"

// The SSE half of an HTTP connection: a listen's stream, or a 2025 session's GET stream,
// written by the worker's Shard in chunked batches.
namespace mcpfan::detail {

namespace {
constexpr char kChunkEnd[] = "\r\n";
// Unsent bytes a stream may leave in the kernel. Past this the socket refuses more, so a
// slow reader's backlog stays in mcpfan, where newer updates coalesce with older ones,
// instead of megabytes of stale frames queueing in an auto-tuned send buffer.
constexpr int kNotSentLowat = 128 * 1024;
}  // namespace

void HttpConn::start_sse() {
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(&tcp_), &fd) == 0) {
    ::setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &kNotSentLowat, sizeof kNotSentLowat);
  }
  mode_ = Mode::Listen;
  deadline_ = Deadline::None;  // a stream is idle by nature; its writes are what is timed
  pause_parser();
  stream_ = w_.shard().open_stream(this, Framing::Sse);
  stream_open_ = true;
  // A stream reads no more requests: drop what parsing them needed.
  req_.clear();
  req_.body.shrink_to_fit();
  field_.shrink_to_fit();
  value_.shrink_to_fit();
}

void HttpConn::send_sse_head() {
  // Written once the stream's subscription exists: a client that publishes as soon as it sees
  // the 200 must find its stream in the index (and in the routing table, which posts a
  // publish only to the loops that hold a match), not race this loop to it.
  write_raw(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n",
      false);
}

void HttpConn::begin_listen(const Filter& filter, std::string id, std::string ack_event) {
  start_sse();
  listen_id_ = std::move(id);
  Shard& shard = w_.shard();
  // First on the stream: nothing is drained before it. An ack past the pending-bytes bound
  // (thousands of long URIs echoed back) ends the stream before it starts.
  if (shard.send(stream_, std::move(ack_event)) != SendStatus::Ok) {
    stream_open_ = false;
    send_sse_head();  // a 200 stream that ends at once, as before
    close();
    return;
  }
  (void)shard.subscribe(stream_, filter, listen_id_);
  send_sse_head();  // now; the ack goes out at the shard's flush, after it
}

void HttpConn::begin_session_stream(std::shared_ptr<Session> session) {
  start_sse();
  Session& s = *session;
  bool ended;
  {
    // Only this session is locked while its filter is built (up to --max-uris-per-listen
    // URIs): a URI change either lands in the filter or, once `owner` is set, is posted here.
    std::lock_guard lock(s.mu);
    s.sub = w_.shard().subscribe(stream_, ClientCore::session_filter(s.tenant, s.uris), {});  // 2025 notifications carry no id
    s.owner = static_cast<int>(w_.index());
    s.conn = this;
    // A DELETE that read `owner` before it was set posted nothing here: it set `ended`
    // first, so it is seen now (both may happen; finish_stream() is idempotent).
    ended = s.ended.load();
  }
  session_ = std::move(session);
  send_sse_head();
  if (ended) finish_stream();
}

void HttpConn::release_session() {
  if (!session_) return;
  bool mine;
  {
    std::lock_guard lock(session_->mu);
    mine = session_->conn == this;
    if (mine) {
      session_->conn = nullptr;
      session_->owner = -1;
    }
  }
  // Idle again (counted, last in the idle list) until it expires or ends.
  if (mine) w_.sessions().stream_closed(*session_, uv_now(w_.loop()));
  session_.reset();
}

void HttpConn::end_listen() {
  if (!stream_open_ || ending_) return;
  ending_ = true;
  if (w_.shard().send(stream_, sse_event(listen_complete_result(listen_id_))) != SendStatus::Ok) {
    stream_open_ = false;  // over the bound: the shard closed the stream, no final result
    close();
  }
}

void HttpConn::begin_shutdown() {
  if (stream_open_ && !listen_id_.empty()) end_listen();
  else if (stream_open_) finish_stream();
  else close();
}

void HttpConn::finish_stream() {
  if (!stream_open_) return;
  stream_open_ = false;
  w_.shard().close_stream(stream_);
  release_session();
  write_raw("0\r\n\r\n", true);
}

void HttpConn::write_batch(OutBatch&& batch) {
  char chunk_header[24];
  int hn = std::snprintf(chunk_header, sizeof chunk_header, "%zx\r\n", batch.bytes);
  batch.bufs.push_back(iovec{const_cast<char*>(kChunkEnd), 2});
  auto result = write_batch_to(reinterpret_cast<uv_stream_t*>(&tcp_), std::move(batch),
                               std::string_view(chunk_header, static_cast<std::size_t>(hn)), this,
                               [](uv_write_t* req, int status) {
                                 auto* c = static_cast<HttpConn*>(req->data);
                                 QueuedBatch::release(req);
                                 c->write_progressed();
                                 if (status < 0) return c->close();
                                 if (c->stream_open_) c->stream_written();
                               });
  switch (result) {
    case BatchWrite::Written: return stream_written();
    case BatchWrite::Queued: return write_queued();
    case BatchWrite::Failed:
      w_.shard().write_done(stream_);
      return close();
  }
}

void HttpConn::stream_written() {
  Shard& shard = w_.shard();
  shard.write_done(stream_);
  if (ending_ && shard.pending_bytes(stream_) == 0) finish_stream();
}

void HttpConn::close_requested(CloseReason) {
  // The shard already closed our stream; end the connection without the final result,
  // which would only add to the backlog that got it closed.
  stream_open_ = false;
  close();
}

}  // namespace mcpfan::detail

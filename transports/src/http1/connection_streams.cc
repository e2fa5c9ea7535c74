#include "http1/connection.h"
#include "http1/response_writer.h"

// An HTTP/1.1 connection as the carrier of an EventStream (http/event_stream.h): the 200 with
// chunked transfer coding, each batch of events one chunk, the terminator, then the close.
namespace mcpfan::detail {

namespace {
constexpr char kChunkEnd[] = "\r\n";
// Unsent bytes a stream may leave in the kernel. Past this the socket refuses more, so a
// slow reader's backlog stays in mcpfan, where newer updates coalesce with older ones,
// instead of megabytes of stale frames queueing in an auto-tuned send buffer.
constexpr int kNotSentLowat = 128 * 1024;
}  // namespace

void Http1Conn::stream_started() {
  sock_->limit_unsent(kNotSentLowat);
  mode_ = Mode::Listen;
  deadline_ = Deadline::None;  // a stream is idle by nature; its writes are what is timed
  pause_parser();
  // A stream reads no more requests: drop what parsing them needed.
  parser_.release_memory();
}

void Http1Conn::write_head() {
  write_raw(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n",
      false);
}

StreamCarrier::Wrote Http1Conn::write_events(OutBatch&& batch) {
  ChunkSizeBuffer buf;
  std::string_view size = chunk_size_line(batch.bytes, buf);
  batch.bufs.push_back(iovec{const_cast<char*>(kChunkEnd), 2});
  switch (sock_->write_batch(std::move(batch), size, kBatch)) {
    case net::Socket::Sent::Done: return Wrote::Done;
    case net::Socket::Sent::Queued: return Wrote::Queued;
    case net::Socket::Sent::Failed: break;
  }
  return Wrote::Failed;
}

void Http1Conn::write_end() { write_raw("0\r\n\r\n", true); }

void Http1Conn::begin_shutdown() {
  if (events_.open()) events_.shutdown();
  else close();
}

}  // namespace mcpfan::detail

#include <cstdio>

#include "http1/connection.h"
#include "http/session_park.h"
#include "mcp/client.h"
#include "mcp/messages.h"
#include "mcp/sessions.h"
#include "server/log.h"
#include "server/worker.h"
#include "mcpfan/hub.h"
#include "mcpfan/json_text.h"

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

void Http1Conn::start_sse(StreamJournal* journal) {
  sock_.limit_unsent(kNotSentLowat);
  mode_ = Mode::Listen;
  deadline_ = Deadline::None;  // a stream is idle by nature; its writes are what is timed
  pause_parser();
  stream_ = w_.shard().open_stream(this, Framing::Sse, journal);
  stream_open_ = true;
  // A stream reads no more requests: drop what parsing them needed.
  parser_.release_memory();
}

void Http1Conn::release_head() {
  hold_head_ = false;
  if (!head_held_ || mode_ == Mode::Closing) return;
  head_held_ = false;
  send_sse_head();
  if (held_batch_) {
    OutBatch batch = std::move(*held_batch_);
    held_batch_.reset();
    write_batch(std::move(batch));
  }
}

void Http1Conn::send_sse_head() {
  if (hold_head_) {  // written by release_head()
    head_held_ = true;
    return;
  }
  // Written once the stream's subscription exists: a client that publishes as soon as it sees
  // the 200 must find its stream in the index (and in the routing table, which posts a
  // publish only to the loops that hold a match), not race this loop to it.
  write_raw(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "X-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n",
      false);
}

void Http1Conn::begin_listen(const Filter& filter, std::string id, std::string ack_event) {
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

namespace {
// What a resuming client is told when its Last-Event-ID cannot be resumed exactly (older than
// the journal's floor, not this session's, malformed): every notification it could have
// missed, in the idempotent form "this changed, re-read it", each under a fresh id.
void append_reread_hints(std::string& out, Session& s) {
  auto hint = [&](Kind kind, std::string_view uri) {
    NotificationParts parts;
    parts.tenant = s.tenant;
    parts.kind = kind;
    parts.uri = uri;
    std::string raw_uri;
    if (kind == Kind::ResourceUpdated) {
      append_json_string(raw_uri, uri);
      parts.params.emplace_back("uri", raw_uri);
    }
    PayloadRef p = encode_notification(parts);
    out += SessionTap::id_line(s.journal.tag(), s.journal.next(), s.upstream_event_id);
    out += p->plain(Framing::Sse);
  };
  for (const std::string& uri : s.uris.set()) hint(Kind::ResourceUpdated, uri);
  for (const KindInfo& k : kKinds) {
    if (!k.keyed_by_uri) hint(k.kind, {});
  }
}

// Under s.mu: the stream of tap `epoch` becomes the session's live one. Returns what it starts
// with: the priming event (2025-11-25 on: older clients would choke on its empty data), then
// the replay after `cursor` or, when that cannot be resumed exactly, the re-read hints.
std::string go_live_locked(Session& s, std::uint64_t epoch, const std::optional<std::string>& cursor) {
  // A stream that waited for the one it took over (pending_epoch) and has no cursor of the
  // client's gets what was journaled since it subscribed: live to the client, only late.
  std::optional<std::string> since;
  if (!cursor && s.pending_epoch == epoch) since = format_cursor(Cursor{s.journal.tag(), s.pending_from});
  s.live_epoch = epoch;
  s.pending_epoch = 0;
  const std::optional<std::string>& from = cursor ? cursor : since;
  SessionJournal::Resume resume = s.journal.start_live(from ? &*from : nullptr);
  std::string first;
  if (s.version >= "2025-11-25") first = SessionTap::id_line(s.journal.tag(), resume.prime, s.upstream_event_id) + "data: \n\n";
  if (resume.reread) append_reread_hints(first, s);
  for (const auto& [seq, p] : resume.events) {
    first += SessionTap::id_line(s.journal.tag(), seq, s.upstream_event_id);
    first += p->plain(Framing::Sse);
  }
  if (resume.reread) s.counters.rereads.fetch_add(1, std::memory_order_relaxed);
  if (!resume.events.empty()) s.counters.replayed.fetch_add(resume.events.size(), std::memory_order_relaxed);
  return first;
}
}  // namespace

SessionRegistry::Claim Http1Conn::begin_session_stream(std::shared_ptr<Session> session, const std::string* last_event_id,
                                                      std::optional<std::string> upstream_cursor) {
  Session& s = *session;
  // A copy: the request it may point into is cleared when the stream starts (start_sse).
  std::optional<std::string> cursor;
  if (last_event_id) cursor = *last_event_id;
  std::string first;
  int old_owner;
  StreamId old_stream;
  std::uint64_t epoch;
  bool ended;
  {
    // Only this session is locked while its filter is built (up to --max-uris-per-listen
    // URIs): a URI change either lands in the filter or, once `owner` is set, is posted here.
    // The claim is made under it too, ordered with the previous stream's release.
    std::lock_guard lock(s.mu);
    auto claim = w_.sessions().claim_stream(s, /*take_over=*/cursor.has_value());
    if (claim != SessionRegistry::Claim::Ok) return claim;
    if (upstream_cursor) s.upstream_event_id = std::move(*upstream_cursor);
    epoch = ++s.epochs;
    tap_ = std::make_unique<SessionTap>(session, epoch);
    start_sse(tap_.get());
    s.sub = w_.shard().subscribe(stream_, ClientCore::session_filter(s.tenant, s.uris), {});  // 2025 notifications carry no id
    old_owner = s.owner;
    old_stream = s.stream;
    s.owner = static_cast<int>(w_.index());
    s.stream = stream_;
    s.conn = this;
    if (old_owner < 0) {
      first = go_live_locked(s, epoch, cursor);  // nothing to take over
    } else {
      // A parked stream, or a GET stream this one takes over, is still subscribed on its
      // worker, and a publish routed there before this stream subscribed may not have reached
      // it yet. Until that worker has ended it (its inbox is in order), both streams only
      // journal; then this one goes live from the journal (go_live), so nothing falls between.
      s.live_epoch = 0;
      s.pending_epoch = epoch;
      s.pending_from = s.journal.last();
    }
    // A DELETE that read `owner` before it was set posted nothing here: it set `ended`
    // first, so it is seen now (both may happen; finish_stream() is idempotent).
    ended = s.ended.load();
  }
  session_ = std::move(session);
  send_sse_head();
  if (old_owner >= 0) {
    Shard& old = w_.hub().shard(static_cast<std::size_t>(old_owner));
    Shard& mine = w_.shard();
    old.post_task([&old, &mine, old_stream, s = session_, epoch, conn = this, cursor = std::move(cursor)] {
      old.end_stream(old_stream, CloseReason::Ended);
      mine.post_task([s, epoch, conn, cursor] {
        bool same;
        {
          // While the session names this connection under tap `epoch`, the connection is alive
          // (it clears `conn` under this lock before it is freed) and is on this loop.
          std::lock_guard lock(s->mu);
          same = s->pending_epoch == epoch && s->conn == conn;
        }
        if (same) conn->go_live(epoch, cursor);
      });
    });
  } else if (!first.empty()) {
    send_session_start(std::move(first));
    if (!stream_open_) return SessionRegistry::Claim::Ok;
  }
  if (ended) finish_stream();
  return SessionRegistry::Claim::Ok;
}

void Http1Conn::go_live(std::uint64_t epoch, const std::optional<std::string>& cursor) {
  if (!session_ || !stream_open_) return;
  std::string first;
  {
    std::lock_guard lock(session_->mu);
    if (session_->pending_epoch != epoch || session_->conn != this) return;  // superseded
    first = go_live_locked(*session_, epoch, cursor);
  }
  if (!first.empty()) send_session_start(std::move(first));
}

void Http1Conn::send_session_start(std::string first) {
  if (w_.shard().send(stream_, std::move(first)) != SendStatus::Ok) {
    stream_open_ = false;  // the replay alone went past the stream's bound: the shard closed it
    close();
  }
}

void Http1Conn::release_session() {
  if (!session_) return;
  Session& s = *session_;
  {
    std::lock_guard lock(s.mu);
    if (s.conn == this) {  // else a new GET took the session over
      s.conn = nullptr;
      s.live_epoch = 0;
      s.pending_epoch = 0;
      bool parked = false;
      if (!s.ended.load() && !w_.stopping()) {
        // The client went away (or was closed as a slow consumer): keep journaling for its
        // resume. Subscribed before this connection's stream closes: no publish is missed.
        try {
          ParkedStream::park(w_, session_);
          parked = true;
        } catch (...) {  // out of memory: the session just stops receiving, as before resumable sessions
          w_.stats().callback_exceptions.fetch_add(1, std::memory_order_relaxed);
        }
      }
      if (!parked) {
        s.owner = -1;
        s.stream = StreamId{};
        s.sub = SubId{};
      }
      // Idle again (counted, last in the idle list) until it expires, ends or resumes. Under
      // s.mu, so a GET taking over (which claims under it) is ordered with this.
      w_.sessions().stream_closed(s, uv_now(w_.loop()));
    }
  }
  session_.reset();
}

void Http1Conn::end_listen() {
  if (!stream_open_ || ending_) return;
  ending_ = true;
  if (w_.shard().send(stream_, sse_event(listen_complete_result(listen_id_))) != SendStatus::Ok) {
    stream_open_ = false;  // over the bound: the shard closed the stream, no final result
    close();
  }
}

void Http1Conn::begin_shutdown() {
  if (stream_open_ && !listen_id_.empty()) end_listen();
  else if (stream_open_) finish_stream();
  else close();
}

void Http1Conn::finish_stream() {
  if (!stream_open_) return;
  release_head();  // a stream ended before its upstream answered still gets its 200 first
  stream_open_ = false;
  w_.shard().close_stream(stream_);
  release_session();
  write_raw("0\r\n\r\n", true);
}

void Http1Conn::write_batch(OutBatch&& batch) {
  if (head_held_) {  // nothing before the 200: the shard waits for write_done() meanwhile
    held_batch_.emplace(std::move(batch));
    return;
  }
  char chunk_header[24];
  int hn = std::snprintf(chunk_header, sizeof chunk_header, "%zx\r\n", batch.bytes);
  batch.bufs.push_back(iovec{const_cast<char*>(kChunkEnd), 2});
  switch (sock_.write_batch(std::move(batch), std::string_view(chunk_header, static_cast<std::size_t>(hn)), kBatch)) {
    case net::Socket::Sent::Done: return stream_written();
    case net::Socket::Sent::Queued: return;
    case net::Socket::Sent::Failed:
      w_.shard().write_done(stream_);
      return close();
  }
}

void Http1Conn::batch_written(int status) {
  if (status < 0) return close();
  if (stream_open_) stream_written();
}

void Http1Conn::stream_written() {
  Shard& shard = w_.shard();
  shard.write_done(stream_);
  if (ending_ && shard.pending_bytes(stream_) == 0) finish_stream();
}

void Http1Conn::close_requested(CloseReason reason) {
  // A session's stream ended by its owner (DELETE, expiry, a GET that took over): the
  // chunked terminator, then close. The shard has closed the stream already.
  if (reason == CloseReason::Ended) return finish_stream();
  log_stream_close(reason, "http");
  // The shard already closed our stream; end the connection without the final result,
  // which would only add to the backlog that got it closed.
  stream_open_ = false;
  close();
}

}  // namespace mcpfan::detail

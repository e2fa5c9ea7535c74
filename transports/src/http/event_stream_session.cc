#include "http/event_stream.h"
#include "http/session_park.h"
#include "mcp/client.h"
#include "mcp/messages.h"
#include "mcp/sessions.h"
#include "mcpfan/hub.h"
#include "mcpfan/json_text.h"
#include "server/loop_context.h"

// What only a 2025 session's GET stream does: claim the session, replay what the client
// missed (or send re-read hints), take over from the session's previous stream on any worker,
// and park the session's subscription when the client goes away (http/session_park.h).
namespace mcpfan::detail {

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
    if (!k.keyed() && k.in_2025_sessions) hint(k.kind, {});
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
  if (s.version >= "2025-11-25")
    first = SessionTap::id_line(s.journal.tag(), resume.prime, s.upstream_event_id) + "data: \n\n";
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

SessionRegistry::Claim EventStream::begin_session(std::shared_ptr<Session> session, const std::string* last_event_id,
                                                      std::optional<std::string> upstream_cursor) {
  Session& s = *session;
  // A copy: the request it may point into is cleared when the stream starts (start()).
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
    start(tap_.get());
    s.sub = w_.shard().subscribe(stream_, ClientCore::session_filter(s.tenant, s.uris),
                                 {});  // 2025 notifications carry no id
    old_owner = s.owner;
    old_stream = s.stream;
    s.owner = static_cast<int>(w_.index());
    s.stream = stream_;
    s.live = this;
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
    // first, so it is seen now (both may happen; finish() is idempotent).
    ended = s.ended.load();
  }
  session_ = std::move(session);
  send_head();
  if (old_owner >= 0) {
    Shard& old = w_.hub().shard(static_cast<std::size_t>(old_owner));
    Shard& mine = w_.shard();
    old.post_task([&old, &mine, old_stream, s = session_, epoch, self = this, cursor = std::move(cursor)] {
      old.end_stream(old_stream, CloseReason::Ended);
      mine.post_task([s, epoch, self, cursor] {
        bool same;
        {
          // While the session names this stream under tap `epoch`, the stream is alive (it
          // clears `live` under this lock before it is freed) and is on this loop.
          std::lock_guard lock(s->mu);
          same = s->pending_epoch == epoch && s->live == self;
        }
        if (same) self->go_live(epoch, cursor);
      });
    });
  } else if (!first.empty()) {
    // The replay alone may go past the stream's bound: the shard closed it then.
    if (!send(std::move(first))) return SessionRegistry::Claim::Ok;
  }
  if (ended) finish();
  return SessionRegistry::Claim::Ok;
}

void EventStream::go_live(std::uint64_t epoch, const std::optional<std::string>& cursor) {
  if (!session_ || !open_) return;
  std::string first;
  {
    std::lock_guard lock(session_->mu);
    if (session_->pending_epoch != epoch || session_->live != this) return;  // superseded
    first = go_live_locked(*session_, epoch, cursor);
  }
  if (!first.empty()) (void)send(std::move(first));  // past the stream's bound: the shard closed it
}

void EventStream::release_session() {
  if (!session_) return;
  Session& s = *session_;
  {
    std::lock_guard lock(s.mu);
    if (s.live == this) {  // else a new GET took the session over
      s.live = nullptr;
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

}  // namespace mcpfan::detail

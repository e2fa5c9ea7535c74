#include "http2/connection.h"

#include <algorithm>

#include "http2/stream.h"
#include "server/log.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {

// Serializing stops while the socket holds this many unwritten bytes: the streams keep their
// batches, and their shards coalesce behind them, as behind a slow HTTP/1.1 reader.
constexpr std::size_t kFlushPauseBytes = 256 * 1024;
// Request bodies buffered on one connection at once, in max bodies: a client opening 1,000
// streams with half-sent bodies holds this much, not 1,000 of them.
constexpr std::size_t kBodyBudget = 4;
// Frames a well-behaved client sends rarely, each a token bucket per connection (burst, then
// a rate a second). RST_STREAM's is the rapid-reset guard: cancelling is normal, cancelling
// faster than streams can be served is the attack. nghttp2's own guards sit above ours, so
// ours fire first and name the reason.
constexpr double kResetBurst = 1000, kResetRate = 100;
constexpr double kPingBurst = 50, kPingRate = 10;
constexpr double kSettingsBurst = 50, kSettingsRate = 10;
constexpr double kPriorityBurst = 1000, kPriorityRate = 200;
// A connection whose streams keep breaking limits is ended: after this many refused header
// lists or refused streams, GOAWAY.
constexpr unsigned kMaxHeaderRefusals = 16;
constexpr unsigned kMaxRefusedStreams = 100;
// A connection that said GOAWAY reads (and drops) what still comes until the peer's EOF, for at
// most this long and this much, then closes.
constexpr std::uint64_t kGoAwayLingerMs = 5000;
constexpr std::size_t kLingerMaxBytes = 16u << 20;

enum WriteTag : std::uint32_t { kFrames, kLastFrames };

}  // namespace

bool Http2Conn::Bucket::take(std::uint64_t now_ms, double burst, double per_s) noexcept {
  if (at_ms == 0)
    tokens = burst;
  else
    tokens = std::min(burst, tokens + static_cast<double>(now_ms - at_ms) * per_s / 1000.0);
  at_ms = now_ms;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

/** nghttp2's callbacks: each finds its connection in user_data and its stream by the stream's user data. */
struct H2Callbacks {
  static Http2Conn& conn(void* user) { return *static_cast<Http2Conn*>(user); }
  static H2Stream* stream(nghttp2_session* s, std::int32_t id) {
    return static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(s, id));
  }

  static ssize_t send(nghttp2_session*, const std::uint8_t* data, std::size_t len, int, void* user) {
    conn(user).out_.append(reinterpret_cast<const char*>(data), len);
    return static_cast<ssize_t>(len);
  }

  static int send_data(nghttp2_session*, nghttp2_frame* frame, const std::uint8_t* framehd, std::size_t length,
                       nghttp2_data_source* source, void* user) {
    std::string& out = conn(user).out_;
    static_cast<H2Stream*>(source->ptr)->emit_frame(framehd, length, out);
    if (frame->data.padlen > 0) out.append(frame->data.padlen, '\0');  // never asked for: no padding callback
    return 0;
  }

  static int begin_headers(nghttp2_session* s, const nghttp2_frame* f, void* user) {
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Http2Conn& c = conn(user);
    auto st = std::make_unique<H2Stream>(c, f->hd.stream_id);
    nghttp2_session_set_stream_user_data(s, f->hd.stream_id, st.get());
    c.streams_.emplace(f->hd.stream_id, std::move(st));
    c.idle_since_ms_ = 0;
    return 0;
  }

  static int header(nghttp2_session* s, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                    const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
    // Trailers (a second HEADERS) are read and dropped, as HTTP/1.1's are.
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    H2Stream* st = stream(s, f->hd.stream_id);
    if (!st) return 0;
    if (!st->on_header({reinterpret_cast<const char*>(name), namelen},
                       {reinterpret_cast<const char*>(value), valuelen})) {
      Http2Conn& c = conn(user);
      c.hit(Limit::H2HeaderList);
      if (++c.header_refusals_ > kMaxHeaderRefusals) {
        c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2HeaderList, "header lists past the bound, again and again");
      }
    }
    return 0;
  }

  static int data_chunk(nghttp2_session* s, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                        void* user) {
    H2Stream* st = stream(s, id);
    if (!st) return 0;
    Http2Conn& c = conn(user);
    st->on_body(data, len);  // counted in body_bytes_ by the stream itself
    if (c.body_bytes_ > kBodyBudget * c.w_.config().http.max_body) {
      c.w_.limits().hit(Limit::BodyBytes);
      st->reset(NGHTTP2_REFUSED_STREAM);  // its request, body and all, goes
    }
    return 0;
  }

  static int frame_recv(nghttp2_session* s, const nghttp2_frame* f, void* user) {
    Http2Conn& c = conn(user);
    const std::uint64_t now = uv_now(c.w_.loop());
    switch (f->hd.type) {
      case NGHTTP2_HEADERS:
      case NGHTTP2_DATA:
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) {
          if (H2Stream* st = stream(s, f->hd.stream_id)) st->on_request_end();
        }
        break;
      case NGHTTP2_RST_STREAM:
        if (!c.resets_.take(now, kResetBurst, kResetRate)) {
          c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2RapidReset, "rapid reset: streams cancelled too fast");
        }
        break;
      case NGHTTP2_PING:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK) && !c.pings_.take(now, kPingBurst, kPingRate)) {
          c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2PingFlood, "PING flood");
        }
        break;
      case NGHTTP2_SETTINGS:
        if (!(f->hd.flags & NGHTTP2_FLAG_ACK) && !c.settings_.take(now, kSettingsBurst, kSettingsRate)) {
          c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2SettingsFlood, "SETTINGS flood");
        }
        break;
      default:
        break;
    }
    return 0;
  }

  // Every frame's header, before nghttp2 decides what to do with it: PRIORITY frames are
  // ignored without RFC 7540 priorities (no callback after this one), yet each costs a parse.
  static int begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
    Http2Conn& c = conn(user);
    if (hd->type == NGHTTP2_PRIORITY && !c.priorities_.take(uv_now(c.w_.loop()), kPriorityBurst, kPriorityRate)) {
      c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2PriorityFlood, "PRIORITY flood");
    }
    return 0;
  }

  static int invalid_frame(nghttp2_session*, const nghttp2_frame* f, int lib_error, void* user) {
    Http2Conn& c = conn(user);
    // Past the limit the client acknowledged, nghttp2 ends the connection itself (GOAWAY
    // PROTOCOL_ERROR "request HEADERS: max concurrent streams exceeded"); before the
    // acknowledgement, it refuses the stream alone.
    if (lib_error == NGHTTP2_ERR_PROTO && f->hd.type == NGHTTP2_HEADERS &&
        c.streams_.size() >= c.w_.config().http2.max_concurrent_streams) {
      c.hit(Limit::H2Streams);
    } else if (lib_error == NGHTTP2_ERR_REFUSED_STREAM) {
      c.hit(Limit::H2Streams);
      if (++c.refused_streams_ > kMaxRefusedStreams) {
        c.go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2Streams, "streams past SETTINGS_MAX_CONCURRENT_STREAMS");
      }
    }
    return 0;
  }

  static int frame_sent(nghttp2_session*, const nghttp2_frame* f, void* user) {
    Http2Conn& c = conn(user);
    // Ours (go_away) are marked already; a shutdown notice (NO_ERROR) ends nothing.
    if (f->hd.type != NGHTTP2_GOAWAY || c.going_away_ || f->goaway.error_code == NGHTTP2_NO_ERROR) return 0;
    // nghttp2 ended the connection itself (a broken header block, a flood it caught first).
    c.going_away_ = true;
    c.goaway_ms_ = uv_now(c.w_.loop());
    if (f->goaway.error_code == NGHTTP2_COMPRESSION_ERROR) c.hit(Limit::H2HeaderList);
    return 0;
  }

  static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t, void* user) {
    Http2Conn& c = conn(user);
    auto it = c.streams_.find(id);
    if (it == c.streams_.end()) return 0;
    H2Stream* st = it->second.get();
    st->on_closed();
    c.closed_.push_back(std::move(it->second));  // freed after this nghttp2 call: it may still name it
    c.streams_.erase(it);
    if (c.streams_.empty()) c.idle_since_ms_ = std::max<std::uint64_t>(1, uv_now(c.w_.loop()));
    if (c.going_away_) c.want_flush();  // the last answer may have been what the GOAWAY waited for
    return 0;
  }

  static const nghttp2_session_callbacks* table() {
    static nghttp2_session_callbacks* cbs = [] {
      nghttp2_session_callbacks* t = nullptr;
      nghttp2_session_callbacks_new(&t);
      nghttp2_session_callbacks_set_send_callback(t, send);
      nghttp2_session_callbacks_set_send_data_callback(t, send_data);
      nghttp2_session_callbacks_set_on_begin_headers_callback(t, begin_headers);
      nghttp2_session_callbacks_set_on_header_callback(t, header);
      nghttp2_session_callbacks_set_on_data_chunk_recv_callback(t, data_chunk);
      nghttp2_session_callbacks_set_on_frame_recv_callback(t, frame_recv);
      nghttp2_session_callbacks_set_on_begin_frame_callback(t, begin_frame);
      nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(t, invalid_frame);
      nghttp2_session_callbacks_set_on_stream_close_callback(t, stream_close);
      nghttp2_session_callbacks_set_on_frame_send_callback(t, frame_sent);
      return t;
    }();
    return cbs;
  }

  static nghttp2_option* options() {
    static nghttp2_option* opt = [] {
      nghttp2_option* o = nullptr;
      nghttp2_option_new(&o);
      // Closed streams are forgotten at once: no priority tree to keep them for.
      nghttp2_option_set_no_closed_streams(o, 1);
      // Above our own buckets (kResetBurst, kResetRate): ours name the reason first.
      nghttp2_option_set_stream_reset_rate_limit(o, 2 * kResetBurst, 2 * kResetRate);
      nghttp2_option_set_max_continuations(o, 8);
      nghttp2_option_set_max_settings(o, 32);
      nghttp2_option_set_max_outbound_ack(o, 1000);
      nghttp2_option_set_max_deflate_dynamic_table_size(o, 4096);
      return o;
    }();
    return opt;
  }
};

void Http2Conn::adopt(LoopContext& w, std::unique_ptr<net::Socket> sock, bool operator_listener,
                      std::string_view first) {
  auto* c = new Http2Conn(w, std::move(sock), operator_listener);
  c->start(first);
}

Http2Conn::Http2Conn(LoopContext& w, std::unique_ptr<net::Socket> sock, bool operator_listener)
    : w_(w), sock_(std::move(sock)), operator_listener_(operator_listener), binding_(w.limits()) {
  sock_->set_events(*this);
  handles_open_ = 1;  // the socket
  w_.link(this);
  w_.stats().connections.fetch_add(1, std::memory_order_relaxed);
  w_.stats().h2_connections.fetch_add(1, std::memory_order_relaxed);
  uv_check_init(w_.loop(), &flush_check_);
  flush_check_.data = this;
  ++handles_open_;
  uv_idle_init(w_.loop(), &flush_idle_);
  flush_idle_.data = this;
  ++handles_open_;
  if (nghttp2_session_server_new2(&session_, H2Callbacks::table(), this, H2Callbacks::options()) != 0) {
    session_ = nullptr;
  }
}

Http2Conn::~Http2Conn() {
  streams_.clear();
  closed_.clear();
  if (session_) nghttp2_session_del(session_);
}

void Http2Conn::start(std::string_view first) {
  if (!session_) return close();
  const ServerConfig& cfg = w_.config();
  nghttp2_settings_entry settings[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, cfg.http2.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, cfg.http2.initial_window},
      {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(cfg.http.max_header_bytes)},
      {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
  };
  if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, std::size(settings)) != 0) return close();
  idle_since_ms_ = std::max<std::uint64_t>(1, uv_now(w_.loop()));
  want_flush();
  if (!first.empty()) receive(first.data(), first.size());
}

void Http2Conn::receive(const char* data, std::size_t len) {
  if (closing_) return;
  if (going_away_) {
    // Read and dropped until the peer's EOF: closing with unread input would reset the
    // connection, and the peer would lose the GOAWAY that says why (a lingering close).
    discarded_ += len;
    if (discarded_ > kLingerMaxBytes) close();
    return;
  }
  ssize_t rv = nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(data), len);
  if (rv < 0) return failed(static_cast<int>(rv));
  free_closed();
  want_flush();
}

void Http2Conn::failed(int error) {
  switch (error) {
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
      return go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2Continuation, "CONTINUATION flood");
    case NGHTTP2_ERR_TOO_MANY_SETTINGS:
      return go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2SettingsFlood, "too many SETTINGS entries");
    case NGHTTP2_ERR_FLOODED:
      return go_away(NGHTTP2_ENHANCE_YOUR_CALM, Limit::H2PingFlood, "control frames flood: acks owed pile up");
    case NGHTTP2_ERR_HEADER_COMP:
      return go_away(NGHTTP2_COMPRESSION_ERROR, Limit::H2HeaderList, "HPACK block cannot be decoded");
    default:
      break;
  }
  // Not a flood: a protocol error (a bad preface, a frame out of place) or a callback that failed.
  go_away(NGHTTP2_PROTOCOL_ERROR, std::nullopt, nghttp2_strerror(error));
}

void Http2Conn::hit(Limit l) {
  w_.limits().hit(l, binding_.tenant());
}

void Http2Conn::go_away(std::uint32_t error_code, std::optional<Limit> why, std::string_view reason) {
  if (going_away_ || closing_) return;
  going_away_ = true;
  goaway_ms_ = uv_now(w_.loop());
  if (why) hit(*why);
  if (error_code != NGHTTP2_NO_ERROR) {
    log::line(LogLevel::Debug, "h2_goaway", "HTTP/2 connection ended: " + std::string(reason));
  }
  // The streams begun are answered no more: GOAWAY names the last one processed.
  nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_), error_code,
                        reinterpret_cast<const std::uint8_t*>(reason.data()), reason.size());
  want_flush();
}

void Http2Conn::want_flush() {
  if (closing_) return;
  if (in_flush_) {
    flush_again_ = true;
    return;
  }
  if (flush_pending_) return;
  flush_pending_ = true;
  uv_idle_start(&flush_idle_, [](uv_idle_t*) {});  // the loop does not block before the check runs
  uv_check_start(&flush_check_, [](uv_check_t* h) {
    auto* c = static_cast<Http2Conn*>(h->data);
    guarded(
        c->w_.stats(), [&] { c->flush(); }, [&] { c->close(); });
  });
}

void Http2Conn::flush() {
  flush_pending_ = false;
  uv_check_stop(&flush_check_);
  uv_idle_stop(&flush_idle_);
  if (closing_) return;
  in_flush_ = true;
  // At most a few rounds: what a stream does once its batch is out (the shard's next batch
  // comes later; a listen's end, an answer's rest) may give nghttp2 more to send.
  for (int round = 0; round < 4; ++round) {
    flush_again_ = false;
    if (sock_->queued_bytes() > kFlushPauseBytes) break;  // on_written() resumes
    int rv = nghttp2_session_send(session_);
    std::vector<H2Stream*> sent = std::move(sent_);
    sent_.clear();
    for (H2Stream* s : sent) s->after_send();
    if (rv != 0) {
      in_flush_ = false;
      return failed(rv);
    }
    if (!flush_again_) break;
  }
  in_flush_ = false;
  free_closed();
  const bool last = going_away_ && !nghttp2_session_want_write(session_) && !answers_pending();
  if (!out_.empty() || last) {
    w_.stats().h2_flushes.fetch_add(1, std::memory_order_relaxed);
    std::string bytes = std::move(out_);
    out_.clear();
    if (sock_->write(std::move(bytes), last ? kLastFrames : kFrames) == net::Socket::Sent::Failed) return close();
    if (last) return;
  }
  if (flush_again_) want_flush();
  maybe_finish();
}

void Http2Conn::maybe_finish() {
  if (closing_ || going_away_ || !shutting_down_ || !streams_.empty()) return;
  go_away(NGHTTP2_NO_ERROR, std::nullopt, "server shutting down");
}

void Http2Conn::free_closed() {
  if (!in_flush_ && !closed_.empty()) closed_.clear();
}

void Http2Conn::on_written(net::Socket&, std::uint32_t tag, int status) {
  if (status < 0) return close();
  if (tag == kLastFrames) {
    // The GOAWAY is out: the write side ends, and the peer's EOF (or the sweep) closes.
    last_written_ = true;
    if (peer_eof_) {
      if (sock_->queued_bytes() == 0) close();  // else once the writes behind it are out (below)
      return;
    }
    if (!sock_->shutdown()) close();
    return;
  }
  if (peer_eof_ && last_written_ && sock_->queued_bytes() == 0) return close();
  if (sock_->queued_bytes() <= kFlushPauseBytes && nghttp2_session_want_write(session_)) want_flush();
  // Proxied answers waiting for the connection to drain; only those (a write's completion is
  // no business of the listens, which may be thousands).
  std::vector<H2Stream*> proxied = proxied_;  // after_send() may end one, which leaves the list
  for (H2Stream* s : proxied) s->after_send();
}

void Http2Conn::proxy_started(H2Stream* s) {
  proxied_.push_back(s);
}

void Http2Conn::proxy_ended(H2Stream* s) noexcept {
  proxied_.erase(std::remove(proxied_.begin(), proxied_.end(), s), proxied_.end());
}

bool Http2Conn::answers_pending() const noexcept {
  // A GOAWAY of ours ends what is in flight; a client's FIN does not.
  return peer_eof_ && !proxied_.empty();
}

void Http2Conn::on_read_end(net::Socket&, int status) {
  if (status != UV_EOF || last_written_) return close();
  // The peer's FIN ends its requests, not what was answered: this turn's frames (answers, a
  // GOAWAY already submitted) are still in out_ until the flush. Closing now would drop them;
  // instead GOAWAY after them, then the close once that is written (on_written). An answer the
  // upstream is still writing is written first, as an HTTP/1.1 half-close allows (RFC 9112 §9.6).
  peer_eof_ = true;
  sock_->read_stop();
  for (auto& [id, s] : streams_) {
    (void)id;
    if (s->streaming()) s->reset(NGHTTP2_CANCEL);  // a FIN cancels a listen, as on HTTP/1.1
  }
  if (!going_away_) return go_away(NGHTTP2_NO_ERROR, std::nullopt, "the client closed its side");
  want_flush();
}

void Http2Conn::begin_shutdown() {
  if (closing_) return;
  shutting_down_ = true;
  nghttp2_submit_shutdown_notice(session_);
  for (auto& [id, s] : streams_) {
    (void)id;
    s->begin_shutdown();
  }
  want_flush();
}

void Http2Conn::sweep(std::uint64_t now) {
  if (closing_) return;
  const ServerConfig& cfg = w_.config();
  if (sock_->write_stalled(now, cfg.http.write_timeout_ms)) {
    hit(Limit::WriteTimeout);
    return close();
  }
  if (going_away_) {
    // Answers the upstream still writes are bounded by its own timeouts, not by the linger.
    if (now - goaway_ms_ >= kGoAwayLingerMs && !answers_pending()) close();
    return;
  }
  if (streams_.empty() && idle_since_ms_ != 0 && now - idle_since_ms_ >= cfg.http.idle_timeout_ms) {
    return go_away(NGHTTP2_NO_ERROR, Limit::IdleTimeout, "idle");
  }
  for (auto& [id, s] : streams_) {
    (void)id;
    std::uint64_t since = 0;
    if (s->waiting_since(since) && now - since >= cfg.http.request_timeout_ms) {
      hit(Limit::RequestTimeout);
      s->wait_timed_out(cfg.http.request_timeout_ms);
    } else if (s->receiving() && now - s->begun_ms() >= cfg.http.request_timeout_ms) {
      hit(Limit::RequestTimeout);
      s->reset(NGHTTP2_CANCEL);
    } else if (s->stalled(now, cfg.http.write_timeout_ms)) {
      // Its window stayed shut with bytes waiting: the peer stopped reading this stream.
      hit(Limit::H2ZeroWindow);
      s->reset(NGHTTP2_CANCEL);
    }
  }
}

void Http2Conn::close() {
  if (closing_) return;
  closing_ = true;
  for (auto& [id, s] : streams_) {
    (void)id;
    s->on_closed();
  }
  binding_.release();
  uv_check_stop(&flush_check_);
  uv_idle_stop(&flush_idle_);
  auto closed = [](uv_handle_t* h) {
    auto* c = static_cast<Http2Conn*>(h->data);
    if (--c->handles_open_ == 0) c->freed();
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_check_), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_idle_), closed);
  sock_->close();  // on_closed() follows
}

void Http2Conn::on_closed(net::Socket&) {
  if (--handles_open_ == 0) freed();
}

void Http2Conn::freed() {
  w_.unlink(this);
  w_.stats().connections.fetch_sub(1, std::memory_order_relaxed);
  w_.stats().h2_connections.fetch_sub(1, std::memory_order_relaxed);
  delete this;
}

}  // namespace mcpfan::detail

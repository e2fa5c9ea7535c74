#include "stdio/stdio_conn.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include "server/log.h"
#include "mcp/limits.h"
#include "mcp/messages.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

void StdioConn::maybe_free() {
  if (!closing_ || open_handles_ > 0 || out_file_.writing || in_file_.reading) return;
  w_.unlink(this);
  w_.unregister_stdio(number_);
  StdioEndFn on_end = std::move(on_end_);
  StdioEnd why = end_reason_.value_or(StdioEnd::Failed);
  LoopContext& w = w_;
  delete this;
  // After the delete: the host may attach another client (or stop) as soon as it hears.
  if (on_end) guarded(w.stats(), [&] { on_end(why); });
}

StdioConn::StdioConn(LoopContext& w) : w_(w), in_(w.io(), *this), out_(w.io(), *this), binding_(w.limits()) {}

void StdioConn::detach() {
  note_end(StdioEnd::Detached);
  on_eof();  // answers what it sent, ends its listens with their final results, then closes
}

int StdioConn::open_socket(net::Socket& sock, int fd, bool readable) {
  int rc = sock.open(fd, readable);
  if (sock.opened()) ++open_handles_;  // from here only its close ends it
  return rc;
}

StdioConn* StdioConn::open(LoopContext& w, int in_fd, int out_fd, bool from_unix_listener, std::uint64_t number,
                           StdioEndFn& on_end, std::string& err) {
  auto* c = new StdioConn(w);
  // A --unix client authenticates with a token, unless the socket itself names the tenant
  // (its file permissions being the access control). An attached fd (--stdio, or an
  // embedding host's) is trusted: the process that made it chose to; unless that host
  // installed its own authenticator, which then decides for these clients too (it may grant
  // them whatever they send: transport_ tells it they were attached).
  const ServerConfig& cfg = w.config();
  c->transport_ = from_unix_listener ? ClientTransport::Unix : ClientTransport::Stdio;
  if (from_unix_listener && !cfg.auth.unix_tenant.empty()) {
    // A full tenant table leaves the connection unbound: it must authenticate like any other.
    if (auto t = w.hub().tenants().acquire(cfg.auth.unix_tenant)) {
      c->caller_.tenant = *t;
      c->tenant_ref_ = TenantRef(w.hub().tenants(), *t);
    } else {
      c->needs_auth_ = true;
    }
  } else if ((from_unix_listener && w.clients().auth_enabled()) || w.clients().host_auth()) {
    c->needs_auth_ = true;
  }
  c->separate_out_ = in_fd != out_fd;
  w.link(c);
  // Regular files (`mcpfan --stdio < requests.jsonl > answers.jsonl`) cannot be polled:
  // they are read and written in libuv's threadpool. One file cannot be both ends.
  bool in_file = uv_guess_handle(in_fd) == UV_FILE;
  int rc = 0;
  if (in_file && !c->separate_out_) {
    rc = UV_EINVAL;
  } else if (in_file) {
    c->in_file_.used = true;
    c->in_file_.fd = in_fd;
    // A handle all the same, so that the connection is freed in a close callback as always.
    rc = uv_timer_init(w.loop(), &c->in_file_.anchor);
    c->in_file_.anchor.data = c;
    if (rc == 0) {
      ++c->open_handles_;
      c->in_file_.anchor_open = true;
    } else {
      c->in_file_.fd = -1;  // not taken: closed below as the caller's
    }
  } else {
    rc = c->open_socket(c->in_, in_fd, true);
  }
  bool in_owned = rc == 0;
  bool out_owned = !c->separate_out_;
  if (rc == 0 && c->separate_out_) {
    if (uv_guess_handle(out_fd) == UV_FILE) {  // `mcpfan --stdio > log.jsonl`: no poll on files
      c->out_file_.fd = out_fd;
      out_owned = true;
    } else {
      out_owned = (rc = c->open_socket(c->out_, out_fd, false)) == 0;
    }
  }
  if (rc == 0) {
    c->number_ = number;
    c->on_end_ = std::move(on_end);
    w.register_stdio(number, c);
    c->stream_ = w.shard().open_stream(c, Framing::Line);
    c->stream_open_ = true;
    if (in_file) {
      c->read_file();
      return c;
    }
    // An exception in reading (an allocation failing for an over-long line) ends this client only.
    rc = c->in_.read_start();
    if (rc == 0) return c;
  }
  err = std::string("cannot serve this fd as a stdio stream: ") + uv_strerror(rc);
  if (!in_owned) ::close(in_fd);
  if (!out_owned) ::close(out_fd);
  // Not served: the caller tells the host (StdioEnd::Refused), not the connection.
  if (c->on_end_) on_end = std::move(c->on_end_);
  c->on_end_ = nullptr;
  w.unregister_stdio(c->number_);
  c->number_ = 0;
  if (c->open_handles_ == 0) {
    w.unlink(c);
    delete c;
  } else {
    c->close();  // closes what it took; freed in the last close callback
  }
  return nullptr;
}

void StdioConn::close() {
  if (closing_) return;
  closing_ = true;
  if (stream_open_) {
    stream_open_ = false;
    w_.shard().close_stream(stream_);  // frees every listen and the session subscription
  }
  // What it holds of its tenant's ceilings goes back; the tenant's entry last, as it is
  // reclaimed only once that usage is back to zero.
  listens_.clear();
  session_.uris.reset();
  session_.usage.release();
  binding_.release();
  tenant_ref_.reset();
  // A file read or write in the threadpool still uses its descriptor: its callback closes it.
  if (out_file_.fd >= 0 && !out_file_.writing) {
    ::close(out_file_.fd);
    out_file_.fd = -1;
  }
  if (in_file_.fd >= 0 && !in_file_.reading) {
    ::close(in_file_.fd);
    in_file_.fd = -1;
  }
  // Only opened handles are closed: open() may fail before the second one exists. A socket
  // closes once its last batch is off the ring (net/socket.h); handle_closed() counts each.
  if (in_.opened()) in_.close();
  if (out_.opened()) out_.close();
  if (in_file_.anchor_open) {
    in_file_.anchor_open = false;
    uv_close(reinterpret_cast<uv_handle_t*>(&in_file_.anchor), [](uv_handle_t* h) {
      static_cast<StdioConn*>(h->data)->handle_closed();
    });
  }
}

void StdioConn::handle_closed() {
  --open_handles_;
  maybe_free();
}

void StdioConn::on_eof() {
  if (closing_ || eof_) return;
  eof_ = true;
  note_end(StdioEnd::InputEnded);
  if (!in_file_.used) in_.read_stop();
  // A last line without its newline is still a message (`printf '{...}' | mcpfan --stdio`).
  if (!line_.empty() && !skipping_ && !ending_) {
    std::string last = std::move(line_);
    line_.clear();
    handle_line(last);
  }
  // The end of the input ends every subscription of this client (design §2.3), but only
  // after every answer to what it sent, and each listen's final result, is written.
  begin_shutdown();
}

void StdioConn::on_data(net::Socket&, const char* data, std::size_t len) { on_input(std::string_view(data, len)); }

void StdioConn::on_input(std::string_view data) {
  const std::size_t cap = w_.config().mcp.max_line_bytes;
  while (!data.empty() && !closing_ && !ending_) {
    auto nl = data.find('\n');
    std::string_view piece = data.substr(0, nl);
    data = nl == std::string_view::npos ? std::string_view{} : data.substr(nl + 1);
    if (skipping_) {
      if (nl != std::string_view::npos) skipping_ = false;
      continue;
    }
    if (line_.size() + piece.size() > cap) {
      // No id can be read from a line we will not hold: answer with a null id and drop it.
      log::line("stdio_line_bytes", "stdio line longer than " + std::to_string(cap) + " bytes dropped");
      w_.limits().hit(Limit::LineBytes, caller_.tenant);
      reply_error({}, rpc_code::kInvalidRequest, "message longer than " + std::to_string(cap) + " bytes dropped");
      line_.clear();
      skipping_ = nl == std::string_view::npos;
      continue;
    }
    if (nl == std::string_view::npos) {
      line_.append(piece);  // partial line: wait for the rest
      break;
    }
    if (line_.empty()) {
      handle_line(piece);
    } else {
      line_.append(piece);
      std::string whole = std::move(line_);
      line_.clear();
      handle_line(whole);
    }
  }
  if (line_.capacity() > 64 * 1024 && line_.empty()) line_.shrink_to_fit();
}


void StdioConn::reply(std::string json) {
  if (!stream_open_) return;
  json += '\n';
  if (w_.shard().send(stream_, std::move(json)) != SendStatus::Ok) {
    stream_open_ = false;  // past the pending-bytes bound: the shard closed the stream
    close();
  }
}

void StdioConn::reply_error(std::string_view id, int code, std::string message, std::string_view data) {
  reply(rpc_error_json(id, Error{code, std::move(message)}, data));
}

void StdioConn::begin_shutdown() {
  if (closing_) return;
  note_end(StdioEnd::ServerStopped);  // the worker stops (an EOF or a detach said so first)
  ending_ = true;
  // Taken out first: a reply that finds the stream over its bound closes the connection,
  // which must not free listens_ under this loop.
  auto ending = std::move(listens_);
  listens_.clear();
  for (auto& [id, l] : ending) {
    w_.shard().unsubscribe(l.sub);
    l.usage.release();
    reply(listen_complete_result(id));
  }
  maybe_finish();
}

void StdioConn::maybe_finish() {
  if (in_file_.paused) read_file();  // answers drained: read on
  if (ending_ && stream_open_ && out_file_.writes == 0 && !out().writes_pending() &&
      w_.shard().pending_bytes(stream_) == 0) {
    close();
  }
}

void StdioConn::write_batch(OutBatch&& batch) {
  if (out_file_.fd >= 0) return write_batch_to_file(std::move(batch));
  switch (out().write_batch(std::move(batch), {}, 0)) {  // no framing slot: lines carry their own newline
    case net::Socket::Sent::Done:
      w_.shard().write_done(stream_);
      return maybe_finish();
    case net::Socket::Sent::Queued:
      return;
    case net::Socket::Sent::Failed:
      w_.shard().write_done(stream_);
      return close();
  }
}

void StdioConn::on_written(net::Socket&, std::uint32_t, int status) {
  if (status < 0) return close();
  if (!stream_open_) return;
  w_.shard().write_done(stream_);
  maybe_finish();
}

void StdioConn::sweep(std::uint64_t now) {
  // A client that stopped reading: its output would otherwise wait for the pending-bytes
  // bound, which a quiet stream never reaches.
  if (closing_) return;
  std::uint64_t timeout = w_.config().http.write_timeout_ms;
  bool file_stalled = out_file_.writes > 0 && now - out_file_.progress_ms >= timeout;
  if (!file_stalled && !out().write_stalled(now, timeout)) return;
  w_.limits().hit(Limit::WriteTimeout, caller_.tenant);
  close();
}

void StdioConn::close_requested(CloseReason reason) {
  log_stream_close(reason, "stdio");
  stream_open_ = false;  // the shard already closed the stream
  close();
}

}  // namespace mcpfan::detail

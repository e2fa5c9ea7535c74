#include "stdio/stdio_conn.h"

#include <sys/uio.h>
#include <unistd.h>

#include <strings.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>

#include "server/log.h"
#include "mcp/limits.h"
#include "server/server_state.h"
#include "mcp/messages.h"
#include "server/worker.h"

namespace mcpfan::detail {

namespace {
struct LineWrite {
  uv_write_t req;  // first member: the callback casts back
  OutBatch batch;
  StdioConn* conn;
};
}  // namespace

// stdout redirected to a regular file: libuv cannot poll it, and a write(2) there may block
// (a slow or full disk, NFS), so it goes to libuv's threadpool, one batch at a time.
struct StdioConn::FileWrite {
  uv_fs_t req;  // first member: the callback casts back
  OutBatch batch;
  StdioConn* conn;
  std::size_t next;  // first buffer not completely written (bufs[0] is the unused framing slot)
};

void StdioConn::write_file(FileWrite* fw) {
  auto& bufs = fw->batch.bufs;
  auto n = static_cast<unsigned>(std::min<std::size_t>(bufs.size() - fw->next, IOV_MAX));
  if (!file_write_in_flight_ && writes_in_flight_++ == 0) write_progress_ms_ = uv_now(w_.loop());
  file_write_in_flight_ = true;
  int rc = uv_fs_write(w_.loop(), &fw->req, out_file_fd_, reinterpret_cast<uv_buf_t*>(&bufs[fw->next]), n, -1,
                       [](uv_fs_t* req) {
                         auto* fw = reinterpret_cast<FileWrite*>(req);
                         StdioConn* c = fw->conn;
                         ssize_t result = req->result;
                         uv_fs_req_cleanup(req);
                         guarded(c->w_.stats(), [&] { c->file_written(fw, result); }, [&] {
                           delete fw;
                           c->close();
                         });
                       });
  if (rc != 0) file_written(fw, rc);
}

void StdioConn::file_written(FileWrite* fw, ssize_t result) {
  write_progress_ms_ = uv_now(w_.loop());
  auto& bufs = fw->batch.bufs;
  if (result > 0 && !closing_) {
    auto left = static_cast<std::size_t>(result);
    while (fw->next < bufs.size() && left >= bufs[fw->next].iov_len) left -= bufs[fw->next++].iov_len;
    if (left > 0) {
      bufs[fw->next].iov_base = static_cast<char*>(bufs[fw->next].iov_base) + left;
      bufs[fw->next].iov_len -= left;
    }
    if (fw->next < bufs.size()) return write_file(fw);  // the rest of this batch
  }
  delete fw;
  file_write_in_flight_ = false;
  --writes_in_flight_;
  if (closing_) {  // close() left the descriptor and this connection to us
    ::close(out_file_fd_);
    out_file_fd_ = -1;
    return maybe_free();
  }
  if (result <= 0) {
    w_.shard().write_done(stream_);
    return close();
  }
  w_.shard().write_done(stream_);
  maybe_finish();
}

void StdioConn::maybe_free() {
  if (!closing_ || open_handles_ > 0 || file_write_in_flight_) return;
  w_.unlink(this);
  bool notify = exit_on_eof_;
  Worker& w = w_;
  delete this;
  if (notify && w.config().on_stdio_eof) w.config().on_stdio_eof();
}

StdioConn::StdioConn(Worker& w, bool exit_on_eof) : w_(w), exit_on_eof_(exit_on_eof) {}

int StdioConn::init_handle(Handle& h, int fd, bool readable) {
  // Once a handle is initialised only uv_close may end it, so it is counted at once; the
  // fd becomes libuv's only when the open call succeeds.
  int rc;
  h.handle.data = this;
  switch (uv_guess_handle(fd)) {
    case UV_NAMED_PIPE:  // pipes and Unix-domain sockets
      if ((rc = uv_pipe_init(w_.loop(), &h.pipe, 0)) != 0) return rc;
      ++open_handles_;
      return uv_pipe_open(&h.pipe, fd);
    case UV_TTY:
      if ((rc = uv_tty_init(w_.loop(), &h.tty, fd, readable ? 1 : 0)) != 0) return rc;
      ++open_handles_;
      return 0;
    case UV_TCP:
      if ((rc = uv_tcp_init(w_.loop(), &h.tcp)) != 0) return rc;
      ++open_handles_;
      return uv_tcp_open(&h.tcp, fd);
    default:
      return UV_EINVAL;  // a regular file cannot carry a stream of JSON-RPC messages
  }
}

StdioConn* StdioConn::open(Worker& w, int in_fd, int out_fd, bool exit_on_eof, bool from_unix_listener,
                           std::string& err) {
  auto* c = new StdioConn(w, exit_on_eof);
  // A --unix client authenticates with a token, unless the socket itself names the tenant
  // (its file permissions being the access control). An attached fd (--stdio, or an
  // embedding host's) is trusted: the process that made it chose to.
  const ServerConfig& cfg = w.config();
  if (from_unix_listener && !cfg.unix_tenant.empty()) {
    // A full tenant table leaves the connection unbound: it must authenticate like any other.
    if (auto t = w.hub().tenants().acquire(cfg.unix_tenant)) {
      c->tenant_ = *t;
      c->tenant_ref_ = TenantRef(w.hub().tenants(), *t);
    } else {
      c->needs_auth_ = true;
    }
  } else if (from_unix_listener && w.state().client_auth.enabled()) {
    c->needs_auth_ = true;
  }
  c->separate_out_ = in_fd != out_fd;
  w.link(c);
  int rc = c->init_handle(c->in_, in_fd, true);
  bool in_owned = rc == 0;
  bool out_owned = !c->separate_out_;
  if (rc == 0 && c->separate_out_) {
    if (uv_guess_handle(out_fd) == UV_FILE) {  // `mcpfan --stdio > log.jsonl`: no poll on files
      c->out_file_fd_ = out_fd;
      out_owned = true;
    } else {
      out_owned = (rc = c->init_handle(c->out_, out_fd, false)) == 0;
    }
  }
  if (rc == 0) {
    c->stream_ = w.shard().open_stream(c, Framing::Line);
    c->stream_open_ = true;
    rc = uv_read_start(
        &c->in_.stream,
        [](uv_handle_t* h, std::size_t, uv_buf_t* buf) { *buf = static_cast<StdioConn*>(h->data)->w_.read_buffer(); },
        [](uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
          // An exception (an allocation failing for an over-long line) ends this client only.
          auto* c = static_cast<StdioConn*>(s->data);
          guarded(c->w_.stats(), [&] { c->on_read(nread, buf); }, [&] { c->close(); });
        });
    if (rc == 0) return c;
  }
  err = std::string("cannot serve this fd as a stdio stream: ") + uv_strerror(rc);
  if (!in_owned) ::close(in_fd);
  if (!out_owned) ::close(out_fd);
  c->exit_on_eof_ = false;
  if (c->open_handles_ == 0) {
    w.unlink(c);
    delete c;
  } else {
    c->close();
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
  for (const auto& [id, l] : listens_) end_listen_usage(l);
  listens_.clear();
  Limits& limits = w_.limits();
  if (session_) limits.release(tenant_, Resource::Streams);
  limits.release(tenant_, Resource::Subscriptions, static_cast<std::int64_t>(session_uris_.size()));
  session_uris_.clear();
  if (tenant_bound_) limits.release(tenant_, Resource::Connections);
  tenant_bound_ = false;
  tenant_ref_.reset();  // last: the entry is reclaimed only once the usage is back to zero
  auto on_closed = [](uv_handle_t* h) {
    auto* c = static_cast<StdioConn*>(h->data);
    --c->open_handles_;
    c->maybe_free();
  };
  // A file write in the threadpool still uses the descriptor: its callback closes it.
  if (out_file_fd_ >= 0 && !file_write_in_flight_) {
    ::close(out_file_fd_);
    out_file_fd_ = -1;
  }
  // Only initialised handles are closed: open() may fail before the second one exists.
  int initialised = open_handles_;
  if (initialised >= 1) uv_close(&in_.handle, on_closed);
  if (initialised >= 2) uv_close(&out_.handle, on_closed);
}

void StdioConn::on_read(ssize_t nread, const uv_buf_t* buf) {
  if (nread < 0) {  // EOF ends every subscription of this client (design §2.3)
    close();
    return;
  }
  std::string_view data(buf->base, static_cast<std::size_t>(nread));
  const std::size_t cap = w_.config().max_line_bytes;
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
      w_.limits().hit(Limit::LineBytes, tenant_);
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

void StdioConn::handle_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank lines are not messages
  RpcRequest r = w_.rpc_decoder().decode(line);
  if (r.error) {
    if (r.limit_hit == RpcLimitHit::UriLength) w_.limits().hit(Limit::UriLength, tenant_);
    else if (r.limit_hit == RpcLimitHit::UrisPerListen) w_.limits().hit(Limit::UrisPerListen, tenant_);
    if (r.has_id || r.error->code == rpc_code::kParseError || r.error->code == rpc_code::kInvalidRequest) {
      reply_error(r.id, r.error->code, r.error->message);
    } else {
      log::line("stdio_bad_notification", "stdio notification " + r.method + " dropped: " + r.error->message);
    }
    return;
  }
  handle_request(r);
}

void StdioConn::end_listen_usage(const Listen& l) {
  w_.limits().release(tenant_, Resource::Streams);
  w_.limits().release(tenant_, Resource::Subscriptions, l.subscriptions);
}

bool StdioConn::authenticate(RpcRequest& r) {
  ServerState& st = w_.state();
  if (!r.auth_token.empty() && st.client_auth.enabled()) {
    std::string_view tok = r.auth_token;
    auto now = static_cast<std::int64_t>(std::time(nullptr));
    AuthResult res = tok.size() > 7 && strncasecmp(tok.data(), "bearer ", 7) == 0 ? st.client_auth.verify_bearer(tok, now)
                                                                                   : st.client_auth.verify_token(tok, now);
    if (auto* e = std::get_if<AuthError>(&res)) {
      st.auth_counters.client[static_cast<std::size_t>(e->kind)].fetch_add(1, std::memory_order_relaxed);
      if (r.has_id) reply_error(r.id, rpc_code::kUnauthorized, e->message);
      return false;
    }
    auto& id = std::get<ClientIdentity>(res);
    TenantTable& tenants = w_.hub().tenants();
    if (!needs_auth_) {
      // Bound already (by --unix-tenant or an earlier token): a token may not move it.
      if (tenants.name(tenant_) != id.tenant) {
        st.auth_counters.client_wrong_tenant.fetch_add(1, std::memory_order_relaxed);
        if (r.has_id) reply_error(r.id, rpc_code::kForbidden, "this connection is bound to tenant \"" + tenants.name(tenant_) + "\"");
        return false;
      }
    } else {
      std::optional<TenantId> t = tenants.acquire(id.tenant);
      if (!t) {
        w_.limits().hit(Limit::Tenants);
        if (r.has_id) reply_error(r.id, rpc_code::kLimitExceeded, w_.limits().refusal_message(Limit::Tenants, id.tenant));
        return false;
      }
      tenant_ = *t;
      tenant_ref_ = TenantRef(tenants, *t);
      needs_auth_ = false;
    }
    identity_ = std::move(id);
  }
  if (needs_auth_) {
    st.auth_counters.client[static_cast<std::size_t>(AuthFailure::Missing)].fetch_add(1, std::memory_order_relaxed);
    if (r.has_id) {
      reply_error(r.id, rpc_code::kUnauthorized,
                  "authentication required: send \"Bearer <token>\" in params._meta[\"" + std::string(kAuthorizationMetaKey) + "\"]");
    }
    return false;
  }
  if (!tenant_bound_) {
    if (!w_.limits().acquire(tenant_, Resource::Connections)) {
      if (r.has_id) reply_limited(r.id, Resource::Connections);
      return false;
    }
    tenant_bound_ = true;
  }
  return true;
}

void StdioConn::reply_limited(std::string_view id, Resource r) {
  Limits& limits = w_.limits();
  reply_error(id, rpc_code::kLimitExceeded, limits.refusal_message(limits.refusal(tenant_, r), w_.hub().tenants().name(tenant_)));
}

bool StdioConn::refuse_uri(std::string_view id, const std::string& uri) {
  if (!identity_ || identity_->uri_allowed(uri)) return false;
  w_.state().auth_counters.client_forbidden_uri.fetch_add(1, std::memory_order_relaxed);
  reply_error(id, rpc_code::kInvalidParams, "resource URI not allowed for this token: " + uri);
  return true;
}

void StdioConn::handle_request(RpcRequest& r) {
  Shard& shard = w_.shard();
  const std::string& m = r.method;
  if (!authenticate(r)) return;
  if (!r.meta_version.empty() && !is_2026_version(r.meta_version)) {
    if (r.has_id) {
      reply_error(r.id, rpc_code::kUnsupportedVersion, "unsupported protocol version " + r.meta_version,
                  unsupported_version_data(r.meta_version));
    }
    return;
  }
  if (!r.has_id) {
    if (m == "notifications/cancelled") {
      if (auto it = listens_.find(r.cancel_id); it != listens_.end()) {
        shard.unsubscribe(it->second.sub);
        end_listen_usage(it->second);
        listens_.erase(it);
      }
    }
    return;  // notifications/initialized and any other notification need nothing
  }
  if (m == "subscriptions/listen") {
    start_listen(r);
  } else if (m == "server/discover") {
    reply(rpc_result_json(r.id, discover_result()));
  } else if (m == "initialize") {
    if (!session_) {
      if (!w_.limits().acquire(tenant_, Resource::Streams)) return reply_limited(r.id, Resource::Streams);
      Filter f;
      f.tenant = tenant_;
      f.kinds = kind_bit(Kind::ToolsListChanged) | kind_bit(Kind::PromptsListChanged) | kind_bit(Kind::ResourcesListChanged);
      session_sub_ = shard.subscribe(stream_, f, {});
      session_ = true;
    }
    reply(rpc_result_json(r.id, initialize_result(negotiate_2025(r.init_version))));
  } else if (m == "ping" || m == "logging/setLevel") {
    reply(rpc_result_json(r.id, "{}"));
  } else if (m == "resources/subscribe" || m == "resources/unsubscribe") {
    if (!session_) {
      reply_error(r.id, rpc_code::kInvalidRequest, "send initialize before " + m);
      return;
    }
    auto have = session_uris_.find(r.uri);
    if (m == "resources/subscribe") {
      if (refuse_uri(r.id, r.uri)) return;
      if (have == session_uris_.end()) {
        if (session_uris_.size() >= w_.config().max_uris_per_listen) {
          w_.limits().hit(Limit::UrisPerListen, tenant_);
          return reply_error(r.id, rpc_code::kInvalidParams,
                             per_client_refusal(Limit::UrisPerListen, w_.config().max_uris_per_listen));
        }
        if (!w_.limits().acquire(tenant_, Resource::Subscriptions)) return reply_limited(r.id, Resource::Subscriptions);
        session_uris_.insert(r.uri);
      }
      shard.add_uri(session_sub_, tenant_, r.uri);
    } else {
      if (have != session_uris_.end()) {
        session_uris_.erase(have);
        w_.limits().release(tenant_, Resource::Subscriptions);
      }
      shard.remove_uri(session_sub_, tenant_, r.uri);
    }
    reply(rpc_result_json(r.id, "{}"));
  } else {
    reply_error(r.id, rpc_code::kMethodNotFound,
                "method not found: " + m +
                    " (mcpfan serves initialize, ping, logging/setLevel, resources/subscribe, resources/unsubscribe, "
                    "server/discover and subscriptions/listen)");
  }
}

void StdioConn::start_listen(RpcRequest& r) {
  if (r.meta_version.empty()) {
    reply_error(r.id, rpc_code::kInvalidParams,
                "subscriptions/listen needs params._meta io.modelcontextprotocol/protocolVersion (2026-07-28)");
    return;
  }
  if (listens_.count(r.id)) {
    reply_error(r.id, rpc_code::kInvalidRequest, "a listen with id " + r.id + " is already open on this connection");
    return;
  }
  for (const std::string& uri : r.listen.resource_uris) {
    if (refuse_uri(r.id, uri)) return;
  }
  if (listens_.size() >= w_.config().max_listens_per_connection) {
    w_.limits().hit(Limit::ListensPerConnection, tenant_);
    reply_error(r.id, rpc_code::kLimitExceeded,
                per_client_refusal(Limit::ListensPerConnection, w_.config().max_listens_per_connection));
    return;
  }
  auto subs = static_cast<std::int64_t>(r.listen.resource_uris.size());
  Limits& limits = w_.limits();
  if (!limits.acquire(tenant_, Resource::Streams)) return reply_limited(r.id, Resource::Streams);
  if (!limits.acquire(tenant_, Resource::Subscriptions, subs)) {
    limits.release(tenant_, Resource::Streams);
    return reply_limited(r.id, Resource::Subscriptions);
  }
  ListenPlan plan = plan_listen(std::move(r.listen), tenant_, r.id);
  plan.ack += '\n';
  Shard& shard = w_.shard();
  if (shard.send(stream_, std::move(plan.ack)) != SendStatus::Ok) {  // first: nothing is matched before it
    limits.release(tenant_, Resource::Streams);
    limits.release(tenant_, Resource::Subscriptions, subs);
    stream_open_ = false;  // past the pending-bytes bound: the shard closed the stream
    close();
    return;
  }
  listens_.emplace(r.id, Listen{shard.subscribe(stream_, plan.filter, r.id), subs});
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
  ending_ = true;
  // Taken out first: a reply that finds the stream over its bound closes the connection,
  // which must not free listens_ under this loop.
  auto ending = std::move(listens_);
  listens_.clear();
  for (const auto& [id, l] : ending) {
    w_.shard().unsubscribe(l.sub);
    end_listen_usage(l);
    reply(listen_complete_result(id));
  }
  maybe_finish();
}

void StdioConn::maybe_finish() {
  if (ending_ && stream_open_ && writes_in_flight_ == 0 && w_.shard().pending_bytes(stream_) == 0) close();
}

void StdioConn::write_batch(OutBatch&& batch) {
  if (out_file_fd_ >= 0) {
    write_file(new FileWrite{{}, std::move(batch), this, 1});
    return;
  }
  // bufs[0] is the framing slot: stdio lines need none. As in HttpConn::write_batch, try to
  // write it all now and queue only what the socket or pipe does not take.
  auto* bufs = reinterpret_cast<uv_buf_t*>(batch.bufs.data()) + 1;
  auto nbufs = static_cast<unsigned>(batch.bufs.size() - 1);
  int done = uv_try_write(out(), bufs, nbufs);
  if (done < 0 && done != UV_EAGAIN) {
    w_.shard().write_done(stream_);
    close();
    return;
  }
  std::size_t written = done > 0 ? static_cast<std::size_t>(done) : 0;
  unsigned i = 0;
  while (i < nbufs && written >= bufs[i].len) written -= bufs[i++].len;
  if (i == nbufs) {
    w_.shard().write_done(stream_);
    maybe_finish();
    return;
  }
  bufs[i].base += written;
  bufs[i].len -= written;
  auto* wr = new LineWrite{{}, std::move(batch), this};  // the vector's buffer moves with it
  if (writes_in_flight_++ == 0) write_progress_ms_ = uv_now(w_.loop());
  int rc = uv_write(&wr->req, out(), bufs + i, nbufs - i, [](uv_write_t* req, int status) {
    auto* wr = reinterpret_cast<LineWrite*>(req);
    StdioConn* c = wr->conn;
    delete wr;
    --c->writes_in_flight_;
    c->write_progress_ms_ = uv_now(c->w_.loop());
    if (status < 0) {
      c->close();
      return;
    }
    if (!c->stream_open_) return;
    c->w_.shard().write_done(c->stream_);
    c->maybe_finish();
  });
  if (rc != 0) {
    delete wr;
    --writes_in_flight_;
    w_.shard().write_done(stream_);
    close();
  }
}

void StdioConn::sweep(std::uint64_t now) {
  // A client that stopped reading: its output would otherwise wait for the pending-bytes
  // bound, which a quiet stream never reaches.
  if (closing_ || writes_in_flight_ == 0 || now - write_progress_ms_ < w_.config().write_timeout_ms) return;
  w_.limits().hit(Limit::WriteTimeout, tenant_);
  close();
}

void StdioConn::close_requested(CloseReason) {
  stream_open_ = false;  // the shard already closed the stream
  close();
}

}  // namespace mcpfan::detail

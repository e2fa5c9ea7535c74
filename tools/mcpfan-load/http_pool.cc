#include "http_pool.h"

#include <time.h>

#include <utility>

namespace mcpload {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

namespace {

struct OwnedWrite {
  uv_write_t req;
  std::string data;
};

constexpr size_t kMaxHead = 64 * 1024;
constexpr size_t kMaxBody = 4 * 1024 * 1024;
constexpr int kMaxTries = 3;

char g_read_buf[64 * 1024];  // one loop thread: each read is consumed before the next alloc

}  // namespace

int WriteOwned(uv_stream_t* s, std::string data) {
  uv_buf_t b = uv_buf_init(data.data(), unsigned(data.size()));
  int n = uv_try_write(s, &b, 1);
  if (n == int(data.size())) return 0;
  if (n < 0 && n != UV_EAGAIN) return n;
  auto* w = new OwnedWrite;
  w->req.data = w;
  w->data = data.substr(n > 0 ? size_t(n) : 0);
  uv_buf_t rest = uv_buf_init(w->data.data(), unsigned(w->data.size()));
  int rc = uv_write(&w->req, s, &rest, 1, [](uv_write_t* r, int) { delete static_cast<OwnedWrite*>(r->data); });
  if (rc != 0) delete w;
  return rc;
}

HttpPool::HttpPool(uv_loop_t* loop, const sockaddr_in& addr, int connections, int depth)
    : loop_(loop), addr_(addr), depth_(size_t(depth > 0 ? depth : 1)) {
  for (int i = 0; i < connections; ++i) {
    auto c = std::make_unique<Client>();
    c->pool = this;
    clients_.push_back(std::move(c));
  }
}

HttpPool::~HttpPool() = default;

void HttpPool::Submit(Job job) {
  if (closing_) return;
  pending_.push_back(std::move(job));
  Pump();
}

void HttpPool::Pump() {
  if (closing_) return;
  // Open connections with room first, then the others (which connect, or reconnect once
  // their close has completed).
  for (int pass = 0; pass < 2 && !pending_.empty(); ++pass) {
    for (auto& up : clients_) {
      Client* c = up.get();
      if (pass == 0 && c->st != Client::St::Ready) continue;
      bool added = false;
      while (!pending_.empty() && c->jobs.size() < depth_) {
        c->jobs.push_back(std::move(pending_.front()));
        pending_.pop_front();
        ++inflight_;
        added = true;
      }
      if (!added) continue;
      if (c->st == Client::St::Ready) SendQueued(c);
      else if (c->st == Client::St::Closed) Connect(c);
    }
  }
}

void HttpPool::Connect(Client* c) {
  uv_tcp_init(loop_, &c->tcp);
  c->tcp.data = c;
  c->creq.data = c;
  c->st = Client::St::Connecting;
  c->sent = 0;
  c->have_head = false;
  c->got_bytes = false;
  c->head_buf.clear();
  c->reply = Reply{};
  uv_tcp_nodelay(&c->tcp, 1);
  int rc = uv_tcp_connect(&c->creq, &c->tcp, reinterpret_cast<const sockaddr*>(&addr_), &HttpPool::OnConnect);
  if (rc != 0) Lost(c, std::string("connect: ") + uv_strerror(rc));
}

void HttpPool::OnConnect(uv_connect_t* req, int status) {
  auto* c = static_cast<Client*>(req->data);
  HttpPool* self = c->pool;
  if (c->st != Client::St::Connecting) return;  // closed meanwhile
  if (status < 0) {
    self->Lost(c, std::string("connect: ") + uv_strerror(status));
    return;
  }
  c->st = Client::St::Ready;
  uv_read_start(reinterpret_cast<uv_stream_t*>(&c->tcp), &HttpPool::OnAlloc, &HttpPool::OnRead);
  self->SendQueued(c);
}

void HttpPool::SendQueued(Client* c) {
  while (c->st == Client::St::Ready && c->sent < c->jobs.size()) {
    std::string req = c->jobs[c->sent].build();
    ++c->sent;
    int rc = WriteOwned(reinterpret_cast<uv_stream_t*>(&c->tcp), std::move(req));
    if (rc != 0) Lost(c, std::string("write: ") + uv_strerror(rc));
  }
}

void HttpPool::OnAlloc(uv_handle_t*, size_t, uv_buf_t* buf) { *buf = uv_buf_init(g_read_buf, sizeof g_read_buf); }

void HttpPool::OnRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  auto* c = static_cast<Client*>(s->data);
  HttpPool* self = c->pool;
  if (nread == 0 || c->st != Client::St::Ready) return;
  if (nread < 0) {
    self->Lost(c,
               nread == UV_EOF ? "connection closed by the server" : std::string("read: ") + uv_strerror(int(nread)));
    return;
  }
  self->OnData(c, buf->base, size_t(nread));
}

void HttpPool::OnData(Client* c, const char* p, size_t n) {
  while (n > 0 && c->st == Client::St::Ready) {
    if (c->sent == 0) {
      Lost(c, "bytes before any request");
      return;
    }
    c->got_bytes = true;
    if (!c->have_head) {
      size_t before = c->head_buf.size();
      c->head_buf.append(p, n);
      size_t he = HeadEnd(c->head_buf);
      if (!he) {
        if (c->head_buf.size() > kMaxHead) Lost(c, "response head larger than 64 KiB");
        return;
      }
      if (!ParseHead(std::string_view(c->head_buf).substr(0, he), &c->reply.head)) {
        Lost(c, "malformed response head");
        return;
      }
      size_t used = he - before;  // > 0: the head was incomplete before this read
      p += used;
      n -= used;
      c->head_buf.clear();
      c->have_head = true;
      c->reply.status = c->reply.head.status;
      const HttpHead& h = c->reply.head;
      if (h.status == 204 || h.status == 304) {
        c->body.Reset(BodyDecoder::Mode::Length, 0);
      } else if (h.chunked) {
        c->body.Reset(BodyDecoder::Mode::Chunked);
      } else if (h.content_length >= 0) {
        c->body.Reset(BodyDecoder::Mode::Length, uint64_t(h.content_length));
      } else {
        c->body.Reset(BodyDecoder::Mode::UntilClose);
      }
    } else {
      size_t consumed = 0;
      bool ok = c->body.Feed(
          p, n,
          [c](const char* d, size_t k) {
            if (c->reply.body.size() + k > kMaxBody) return false;
            c->reply.body.append(d, k);
            return true;
          },
          &consumed);
      if (!ok) {
        Lost(c, "bad response body framing");
        return;
      }
      p += consumed;
      n -= consumed;
    }
    if (c->body.done()) Complete(c);
  }
}

void HttpPool::Complete(Client* c) {
  Job job = std::move(c->jobs.front());
  c->jobs.pop_front();
  --c->sent;
  --inflight_;
  Reply reply = std::move(c->reply);
  c->reply = Reply{};
  c->have_head = false;
  c->got_bytes = false;
  if (reply.head.close) {
    CloseClient(c);
    // A server that said "Connection: close" processes nothing more on this connection
    // (RFC 9112 9.6): what else was pipelined on it goes out again, not counted as a try.
    Requeue(c, Count::None);
  }
  if (job.done) job.done(reply);
  Pump();
}

void HttpPool::Requeue(Client* c, Count count) {
  std::vector<Job> failed;
  size_t sent = c->sent;
  while (!c->jobs.empty()) {
    Job j = std::move(c->jobs.back());
    c->jobs.pop_back();
    --inflight_;
    bool was_sent = c->jobs.size() < sent;
    bool counts = count == Count::All || (count == Count::Sent && was_sent);
    if (counts && ++j.tries >= kMaxTries) {
      failed.push_back(std::move(j));
    } else {
      pending_.push_front(std::move(j));
    }
  }
  c->sent = 0;
  for (Job& j : failed) {
    Reply r;
    r.error = "no answer after " + std::to_string(kMaxTries) + " connections (last: " + last_error_ + ")";
    if (j.done) j.done(r);
  }
}

void HttpPool::Lost(Client* c, const std::string& why) {
  // A connection that never opened counts as a try for every job waiting on it (so an
  // unreachable server fails the jobs instead of being retried forever).
  Count count = c->st == Client::St::Ready ? Count::Sent : Count::All;
  last_error_ = why;
  CloseClient(c);
  if (c->jobs.empty()) return;
  bool eof = why == "connection closed by the server";
  if (eof && c->have_head && !c->body.failed() && !c->body.done() && !c->reply.head.chunked &&
      c->reply.head.content_length < 0) {
    Complete(c);  // an answer delimited by the end of the connection (Complete requeues the rest)
    if (!c->jobs.empty()) Requeue(c, count);
    Pump();
    return;
  }
  Job partial;
  bool have_partial = false;
  if (c->got_bytes && c->sent > 0) {  // the first job got part of an answer: do not resend it
    partial = std::move(c->jobs.front());
    c->jobs.pop_front();
    --c->sent;
    --inflight_;
    have_partial = true;
  }
  c->have_head = false;
  c->got_bytes = false;
  Requeue(c, count);
  if (have_partial && partial.done) {
    Reply r;
    r.error = why;
    partial.done(r);
  }
  Pump();
}

void HttpPool::CloseClient(Client* c) {
  if (c->st == Client::St::Connecting || c->st == Client::St::Ready) {
    c->st = Client::St::Closing;
    uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), &HttpPool::OnClosed);
  }
}

void HttpPool::OnClosed(uv_handle_t* h) {
  auto* c = static_cast<Client*>(h->data);
  c->st = Client::St::Closed;
  if (c->pool->closing_) return;
  if (!c->jobs.empty()) c->pool->Connect(c);
  else c->pool->Pump();
}

void HttpPool::Close() {
  closing_ = true;
  pending_.clear();
  for (auto& c : clients_) {
    CloseClient(c.get());
    c->jobs.clear();
  }
}

}  // namespace mcpload

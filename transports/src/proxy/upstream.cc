#include "proxy/upstream.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <strings.h>

#include "http/field_syntax.h"
#include "tls/channel.h"

namespace mcpfan::detail::proxy {

// A TCP connection to the upstream, pooled between calls. Its two handles are closed
// together and it is freed once libuv has run both close callbacks.
struct Conn {
  UpstreamPool* pool = nullptr;
  uv_tcp_t tcp{};
  uv_timer_t timer{};
  uv_connect_t connect_req{};
  uv_write_t write_req{};
  http_parser parser{};
  UpstreamCall* call = nullptr;  // null while pooled
  int open_handles = 2;
  bool closing = false;
  bool connected = false;
  bool awaiting_addr = false;  // waiting in the pool's waiting_ for a look-up
  std::shared_ptr<const std::vector<sockaddr_storage>> addrs;  // being tried, in order
  std::size_t addr_index = 0;
  UpstreamFailure timer_kind = UpstreamFailure::Connect;
  std::array<char, 64 * 1024> buf{};
  std::unique_ptr<tls::Channel> tls;  // https: made once connected
  std::string tls_out;                // records made and not yet written
};

// TLS records on their way to the upstream (handshake, the request, alerts): several may be
// in flight, each freed by its callback.
struct CipherWrite {
  uv_write_t req;  // first member: the callback casts back
  std::string data;
};

struct UpstreamCall {
  Conn* conn = nullptr;
  UpstreamSink* sink = nullptr;
  std::string request;   // a stale pooled connection may send it again on a fresh one
  std::size_t max_head = 0;
  bool head_request = false;  // the answer to a HEAD ends at its head
  bool idempotent = false;
  bool nothing_sent = true;   // not one byte of the request reached the socket (a retry is safe)
  bool reused = false;   // sent on a pooled connection
  bool retried = false;
  bool got_bytes = false;
  bool paused = false;
  bool in_read = false;  // inside on_read: cancel() only marks, on_read finishes the job
  bool cancelled = false;
  bool complete = false;
  bool skip_message = false;  // a 1xx interim answer: not the answer
  bool head_too_big = false;
  bool bad_status = false;  // not a status HTTP has (100-599)
  bool last_was_value = false;
  std::size_t head_bytes = 0;
  HeaderList headers;
};

namespace {

UpstreamCall* call_of(http_parser* p) { return static_cast<Conn*>(p->data)->call; }

int add_head_bytes(UpstreamCall* c, std::size_t len) {
  c->head_bytes += len;
  if (c->head_bytes <= c->max_head) return 0;
  c->head_too_big = true;
  return -1;
}

const http_parser_settings kSettings = [] {
  http_parser_settings s{};
  s.on_header_field = [](http_parser* p, const char* at, size_t len) -> int {
    UpstreamCall* c = call_of(p);
    if (add_head_bytes(c, len) != 0) return -1;
    if (c->last_was_value || c->headers.empty()) c->headers.emplace_back();
    c->headers.back().first.append(at, len);
    c->last_was_value = false;
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, size_t len) -> int {
    UpstreamCall* c = call_of(p);
    if (add_head_bytes(c, len) != 0) return -1;
    if (c->headers.empty()) return -1;
    c->headers.back().second.append(at, len);
    c->last_was_value = true;
    return 0;
  };
  s.on_headers_complete = [](http_parser* p) -> int {
    UpstreamCall* c = call_of(p);
    if (p->status_code < 100 || p->status_code > 599) {  // http_parser takes any number; HTTP has three digits
      c->bad_status = true;
      return -1;
    }
    if (p->status_code / 100 == 1) {  // 100 Continue, 103 Early Hints: the answer follows
      c->skip_message = true;
      c->headers.clear();
      c->last_was_value = false;
      return 1;  // an interim answer has no body, whatever its headers say (RFC 9110 §15.2; found by fuzz_upstream)
    }
    c->request.clear();  // the answer has started: it is never sent again
    c->request.shrink_to_fit();
    c->sink->on_head(static_cast<int>(p->status_code), c->headers);
    c->headers.clear();
    // The answer to a HEAD has the headers of a GET and no content (RFC 9110 §9.3.2): its
    // Content-Length describes a body that does not follow. (204 and 304 http_parser knows.)
    return c->head_request ? 1 : 0;
  };
  s.on_body = [](http_parser* p, const char* at, size_t len) -> int {
    UpstreamCall* c = call_of(p);
    if (!c->cancelled && !c->skip_message) c->sink->on_body(std::string_view(at, len));
    return 0;
  };
  s.on_message_complete = [](http_parser* p) -> int {
    UpstreamCall* c = call_of(p);
    if (c->skip_message) {
      c->skip_message = false;
      return 0;
    }
    c->complete = true;
    http_parser_pause(p, 1);  // nothing after the answer is ours to read
    return 0;
  };
  return s;
}();

Conn* conn_of(uv_handle_t* h) { return static_cast<Conn*>(h->data); }

}  // namespace

const std::string* find_header(const HeaderList& headers, std::string_view name) noexcept {
  for (const auto& [k, v] : headers) {
    if (ieq(k, name)) return &v;
  }
  return nullptr;
}

bool is_event_stream(const HeaderList& headers) noexcept {
  const std::string* type = find_header(headers, "content-type");
  return type && type->find("text/event-stream") != std::string::npos;
}

std::string_view failure_name(UpstreamFailure f) noexcept {
  switch (f) {
    case UpstreamFailure::Connect: return "connect";
    case UpstreamFailure::FirstByte: return "first byte";
    case UpstreamFailure::Idle: return "idle";
    case UpstreamFailure::Protocol: return "protocol";
    case UpstreamFailure::Closed: return "closed";
    case UpstreamFailure::Resolve: return "resolve";
  }
  return "?";
}

Result<UpstreamTarget> parse_upstream_url(std::string_view url) {
  auto bad = [&](std::string why) {
    return Error{rpc_code::kInvalidParams, "--upstream " + std::string(url) + ": " + why};
  };
  const bool https = url.substr(0, 8) == "https://";
  if (!https && url.substr(0, 7) != "http://") return bad("only http:// and https:// upstreams are supported");
  std::string_view rest = url.substr(https ? 8 : 7);
  std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  UpstreamTarget t;
  t.https = https;
  t.port = https ? 443 : 80;
  t.path = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  t.authority = std::string(authority);
  std::string_view host = authority, port;
  if (!authority.empty() && authority.front() == '[') {
    std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated [IPv6] address");
    host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') return bad("expected :port after the [IPv6] address");
      port = authority.substr(close + 2);
    }
  } else if (std::size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.empty()) return bad("no host");
  t.host = std::string(host);
  sockaddr_in6 a6{};
  sockaddr_in a4{};
  if (uv_ip4_addr(t.host.c_str(), 0, &a4) != 0 && uv_ip6_addr(t.host.c_str(), 0, &a6) != 0) {
    // A name: letters, digits, '-', '_' and dots (RFC 1123 host names; '_' as resolvers take it).
    bool ok = t.host.size() <= 253 && t.host.front() != '.' && t.host.front() != '-';
    for (char ch : t.host) {
      ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                  ch == '.' || ch == '_');
    }
    if (!ok) return bad("\"" + t.host + "\" is neither an IP address nor a host name");
  }
  if (!port.empty()) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc{} || end != port.data() + port.size() || v == 0 || v > 65535) return bad("bad port");
    t.port = static_cast<std::uint16_t>(v);
  }
  return t;
}

UpstreamPool::UpstreamPool(uv_loop_t* loop, UpstreamTarget target, UpstreamLimits limits, UpstreamCounters* counters)
    : loop_(loop), target_(std::move(target)), limits_(limits), counters_(counters ? *counters : own_counters_) {
  sockaddr_storage addr{};
  if (uv_ip4_addr(target_.host.c_str(), target_.port, reinterpret_cast<sockaddr_in*>(&addr)) != 0 &&
      uv_ip6_addr(target_.host.c_str(), target_.port, reinterpret_cast<sockaddr_in6*>(&addr)) != 0) {
    host_is_name_ = true;  // looked up on the first connection (connect())
    return;
  }
  addrs_ = std::make_shared<const std::vector<sockaddr_storage>>(1, addr);
}

UpstreamPool::~UpstreamPool() {
  // Destroying a pool whose handles are still open would leave libuv pointing at freed
  // memory: the owner closes it and lets the loop run first.
  close();
}

bool UpstreamPool::closed() const noexcept { return shut_ && closing_ == 0; }

UpstreamPool::Stats UpstreamPool::stats() const {
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  Stats s;
  s.requests = get(counters_.requests);
  s.connects = get(counters_.connects);
  s.reused = get(counters_.reused);
  s.retried = get(counters_.retried);
  s.not_retried = get(counters_.not_retried);
  s.expired = get(counters_.expired);
  s.failures = get(counters_.failures);
  s.resolutions = get(counters_.resolutions);
  s.resolve_failures = get(counters_.resolve_failures);
  s.idle = idle_.size();
  s.active = active_.size();
  return s;
}

UpstreamCall* UpstreamPool::start(ForwardedRequest request, UpstreamSink* sink) {
  auto* c = new UpstreamCall;
  c->sink = sink;
  c->request = std::move(request.bytes);
  c->head_request = request.head;
  c->idempotent = request.idempotent;
  c->max_head = limits_.max_head_bytes;
  counters_.requests.fetch_add(1, std::memory_order_relaxed);
  active_.push_back(c);
  if (shut_) {
    fail(c, UpstreamFailure::Closed, "the upstream pool is closed");
    return nullptr;
  }
  if (!idle_.empty()) {
    Conn* conn = idle_.back();  // the most recently used: the least likely to be closing
    idle_.pop_back();
    conn->call = c;
    c->conn = conn;
    c->reused = true;
    counters_.reused.fetch_add(1, std::memory_order_relaxed);
    send_on(c);
  } else {
    connect(c);
  }
  // A call that failed at once (connect refused synchronously) is gone already.
  return std::find(active_.begin(), active_.end(), c) != active_.end() ? c : nullptr;
}

// A uv_getaddrinfo in flight. Heap-allocated apart from the pool: libuv cannot stop a look-up
// the threadpool has begun, so one may finish after close(); its callback then only frees it.
struct UpstreamPool::Lookup {
  uv_getaddrinfo_t req{};
  UpstreamPool* pool = nullptr;  // null once the pool has closed
};

namespace {

// RFC 6761 §6.4: a name under .invalid never resolves, and resolvers should say so at once.
bool is_invalid_tld(std::string_view host) noexcept {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  constexpr std::string_view kInvalid = "invalid";
  if (host.size() < kInvalid.size()) return false;
  std::string_view tail = host.substr(host.size() - kInvalid.size());
  bool match = strncasecmp(tail.data(), kInvalid.data(), kInvalid.size()) == 0;
  return match && (host.size() == kInvalid.size() || host[host.size() - kInvalid.size() - 1] == '.');
}

std::string address_text(const sockaddr_storage& a) {
  char ip[64] = "?";
  if (a.ss_family == AF_INET6) {
    uv_ip6_name(reinterpret_cast<const sockaddr_in6*>(&a), ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port));
  }
  uv_ip4_name(reinterpret_cast<const sockaddr_in*>(&a), ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port));
}

}  // namespace

Conn* UpstreamPool::open_conn(UpstreamCall* c) {
  auto* conn = new Conn;
  conn->pool = this;
  conn->call = c;
  c->conn = conn;
  uv_tcp_init(loop_, &conn->tcp);
  uv_timer_init(loop_, &conn->timer);
  conn->tcp.data = conn;
  conn->timer.data = conn;
  return conn;
}

void UpstreamPool::connect(UpstreamCall* c) {
  bool fresh = addrs_ && (!host_is_name_ ||
                          (limits_.resolve_ttl_ms > 0 && uv_now(loop_) - resolved_at_ < limits_.resolve_ttl_ms));
  if (fresh) return dial(c, addrs_, 0);
  Conn* conn = open_conn(c);  // its timer bounds the look-up and the connect together (connect_ms)
  conn->awaiting_addr = true;
  arm(c, limits_.connect_ms, UpstreamFailure::Connect);
  waiting_.push_back(c);
  if (!lookup_) resolve();
}

void UpstreamPool::resolve() {
  if (is_invalid_tld(target_.host)) {
    return resolved(UV_EAI_NONAME, {});
  }
  auto* l = new Lookup;
  l->pool = this;
  l->req.data = l;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  const std::string port = std::to_string(target_.port);
  int rc = uv_getaddrinfo(
      loop_, &l->req,
      [](uv_getaddrinfo_t* req, int status, addrinfo* res) {
        auto* l = static_cast<Lookup*>(req->data);
        std::vector<sockaddr_storage> addrs;
        for (addrinfo* ai = res; status == 0 && ai; ai = ai->ai_next) {
          if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) || ai->ai_addrlen > sizeof(sockaddr_storage))
            continue;
          sockaddr_storage a{};
          std::memcpy(&a, ai->ai_addr, ai->ai_addrlen);
          addrs.push_back(a);
        }
        uv_freeaddrinfo(res);
        UpstreamPool* pool = l->pool;
        delete l;
        if (!pool) return;  // closed meanwhile
        pool->lookup_ = nullptr;
        pool->resolved(status, std::move(addrs));
      },
      target_.host.c_str(), port.c_str(), &hints);
  if (rc < 0) {
    delete l;
    return resolved(rc, {});
  }
  lookup_ = l;
}

void UpstreamPool::resolved(int status, std::vector<sockaddr_storage> addrs) {
  std::vector<UpstreamCall*> calls;
  calls.swap(waiting_);
  auto still_waiting = [this](UpstreamCall* c) {
    // A sink called below may have ended other calls of this batch.
    return std::find(active_.begin(), active_.end(), c) != active_.end() && c->conn && c->conn->awaiting_addr;
  };
  if (status < 0 || addrs.empty()) {
    counters_.resolve_failures.fetch_add(1, std::memory_order_relaxed);
    std::string what = "cannot resolve the upstream host " + target_.host + ": " +
                       (is_invalid_tld(target_.host) ? std::string("names under .invalid never resolve (RFC 6761)")
                        : status < 0                 ? std::string(uv_strerror(status))
                                                     : std::string("no IPv4 or IPv6 address"));
    for (UpstreamCall* c : calls) {
      if (still_waiting(c)) fail(c, UpstreamFailure::Resolve, what);
    }
    return;
  }
  counters_.resolutions.fetch_add(1, std::memory_order_relaxed);
  addrs_ = std::make_shared<const std::vector<sockaddr_storage>>(std::move(addrs));
  resolved_at_ = uv_now(loop_);
  for (UpstreamCall* c : calls) {
    if (!still_waiting(c)) continue;
    unhook(c);  // the connection made to bound the wait: dial() opens the one it connects
    dial(c, addrs_, 0);
  }
}

void UpstreamPool::dial(UpstreamCall* c, std::shared_ptr<const std::vector<sockaddr_storage>> addrs,
                        std::size_t index) {
  Conn* conn = open_conn(c);
  conn->connect_req.data = conn;
  conn->addrs = std::move(addrs);
  conn->addr_index = index;
  counters_.connects.fetch_add(1, std::memory_order_relaxed);
  const sockaddr_storage& addr = (*conn->addrs)[index];
  arm(c, limits_.connect_ms, UpstreamFailure::Connect);
  int rc = uv_tcp_connect(
      &conn->connect_req, &conn->tcp, reinterpret_cast<const sockaddr*>(&addr), [](uv_connect_t* req, int status) {
        auto* conn = static_cast<Conn*>(req->data);
        if (conn->closing) return;  // cancelled by uv_close
        UpstreamPool* pool = conn->pool;
        if (status < 0) {
          UpstreamCall* c = conn->call;
          if (conn->addr_index + 1 < conn->addrs->size()) {  // the name's next address
            auto addrs = conn->addrs;
            std::size_t next = conn->addr_index + 1;
            pool->unhook(c);
            return pool->dial(c, std::move(addrs), next);
          }
          // Every address failed: the next connection looks the name up again.
          if (pool->host_is_name_ && pool->addrs_ == conn->addrs) pool->addrs_.reset();
          pool->fail(c, UpstreamFailure::Connect,
                     "connect to " + address_text((*conn->addrs)[conn->addr_index]) + ": " + uv_strerror(status));
          return;
        }
        conn->connected = true;
        uv_tcp_nodelay(&conn->tcp, 1);
        if (pool->target_.https && !pool->start_tls(conn)) return;
        pool->send_on(conn->call);
      });
  if (rc < 0) fail(c, UpstreamFailure::Connect, "connect to " + address_text(addr) + ": " + uv_strerror(rc));
}

bool UpstreamPool::start_tls(Conn* conn) {
  UpstreamCall* c = conn->call;
  SSL* ssl = target_.tls ? target_.tls->new_ssl(target_.host) : nullptr;
  if (!ssl) {
    fail(c, UpstreamFailure::Connect, "TLS with " + target_.host + ": no TLS client");
    return false;
  }
  conn->tls = std::make_unique<tls::Channel>(ssl);
  if (conn->tls->start(conn->tls_out) == tls::Channel::Status::Failed) {
    fail(c, UpstreamFailure::Connect, "TLS with " + target_.host + ": " + conn->tls->error());
    return false;
  }
  write_records(conn);
  return true;
}

void UpstreamPool::write_records(Conn* conn) {
  if (conn->tls_out.empty() || conn->closing) return;
  auto* w = new CipherWrite{{}, std::move(conn->tls_out)};
  conn->tls_out.clear();
  w->req.data = conn;
  uv_buf_t b = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&conn->tcp), &b, 1, [](uv_write_t* req, int status) {
    auto* conn = static_cast<Conn*>(req->data);
    delete reinterpret_cast<CipherWrite*>(req);
    if (conn->closing || status == 0 || !conn->call) return;
    conn->pool->fail(conn->call, UpstreamFailure::Closed, std::string("write: ") + uv_strerror(status));
  });
  if (rc < 0) {
    delete w;
    if (conn->call) fail(conn->call, UpstreamFailure::Closed, std::string("write: ") + uv_strerror(rc));
  }
}

void UpstreamPool::send_on(UpstreamCall* c) {
  Conn* conn = c->conn;
  http_parser_init(&conn->parser, HTTP_RESPONSE);
  conn->parser.data = conn;
  auto* stream = reinterpret_cast<uv_stream_t*>(&conn->tcp);
  if (conn->tls) {
    // The request as records (before the handshake is done the channel holds it, and sends it
    // when it completes). On a pooled connection the first write tells, as in the clear,
    // whether the upstream can have received anything.
    if (conn->tls->encrypt(c->request, conn->tls_out) == tls::Channel::Status::Failed) {
      return fail(c, UpstreamFailure::Closed, "TLS with " + target_.host + ": " + conn->tls->error());
    }
    if (c->reused && !conn->tls_out.empty()) {
      uv_buf_t first = uv_buf_init(conn->tls_out.data(), static_cast<unsigned>(conn->tls_out.size()));
      int n = uv_try_write(stream, &first, 1);
      if (n < 0 && n != UV_EAGAIN) return stale(c, /*nothing_sent=*/true, std::string("write: ") + uv_strerror(n));
      if (n > 0) conn->tls_out.erase(0, static_cast<std::size_t>(n));
    }
    c->nothing_sent = false;
    write_records(conn);
    if (!conn->call) return;  // the write failed at once
    arm(c, limits_.first_byte_ms, UpstreamFailure::FirstByte);
    if (!c->paused) start_reading(conn);
    return;
  }
  std::size_t off = 0;
  if (c->reused) {
    // On a pooled connection the first write tells whether the upstream can have received
    // anything: a socket it has reset refuses the write whole, and then a retry is safe
    // whatever the method. Once a byte is out, only an idempotent request may go again.
    uv_buf_t first = uv_buf_init(c->request.data(), static_cast<unsigned>(c->request.size()));
    int n = uv_try_write(stream, &first, 1);
    if (n < 0 && n != UV_EAGAIN) return stale(c, /*nothing_sent=*/true, std::string("write: ") + uv_strerror(n));
    if (n > 0) off = static_cast<std::size_t>(n);
  }
  c->nothing_sent = false;  // what uv_write sends, and when it fails, libuv does not say
  if (off < c->request.size()) {
    uv_buf_t b = uv_buf_init(c->request.data() + off, static_cast<unsigned>(c->request.size() - off));
    conn->write_req.data = conn;
    int rc = uv_write(&conn->write_req, stream, &b, 1, [](uv_write_t* req, int status) {
      auto* conn = static_cast<Conn*>(req->data);
      if (conn->closing || status == 0 || !conn->call) return;
      UpstreamPool* pool = conn->pool;
      UpstreamCall* c = conn->call;
      std::string what = std::string("write: ") + uv_strerror(status);
      if (c->reused && !c->got_bytes && !c->retried) return pool->stale(c, /*nothing_sent=*/false, what);
      pool->fail(c, UpstreamFailure::Closed, what);
    });
    if (rc < 0) {
      fail(c, UpstreamFailure::Closed, std::string("write: ") + uv_strerror(rc));
      return;
    }
  }
  arm(c, limits_.first_byte_ms, UpstreamFailure::FirstByte);
  if (!c->paused) start_reading(conn);
}

void UpstreamPool::stale(UpstreamCall* c, bool nothing_sent, std::string what) {
  if (c->reused && !c->got_bytes && !c->retried) {
    if (nothing_sent || c->idempotent) {
      unhook(c);
      c->retried = true;
      counters_.retried.fetch_add(1, std::memory_order_relaxed);
      connect(c);
      return;
    }
    // RFC 9110 §9.2.2: a proxy does not repeat a non-idempotent request on its own (nginx has
    // not since 1.9.13): the upstream may have run it, and the client would not know twice.
    counters_.not_retried.fetch_add(1, std::memory_order_relaxed);
    what += "; the request went out on a pooled connection and may have been received, so it is not sent again";
  }
  fail(c, UpstreamFailure::Closed, std::move(what));
}

void UpstreamPool::pool_idle(Conn* conn) {
  idle_.push_back(conn);  // keeps reading: an upstream that closes it is noticed at once
  uv_timer_start(&conn->timer, [](uv_timer_t* t) {
    Conn* conn = conn_of(reinterpret_cast<uv_handle_t*>(t));
    if (conn->call || conn->closing) return;
    UpstreamPool* pool = conn->pool;
    pool->counters_.expired.fetch_add(1, std::memory_order_relaxed);
    pool->idle_.erase(std::remove(pool->idle_.begin(), pool->idle_.end(), conn), pool->idle_.end());
    pool->close_conn(conn);
  }, limits_.keepalive_ms, 0);
}

void UpstreamPool::start_reading(Conn* conn) {
  // (A pooled connection is already reading: libuv then leaves it as it is.)
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&conn->tcp),
      [](uv_handle_t* h, size_t, uv_buf_t* out) {
        *out = uv_buf_init(conn_of(h)->buf.data(), static_cast<unsigned>(conn_of(h)->buf.size()));
      },
      [](uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
        Conn* conn = conn_of(reinterpret_cast<uv_handle_t*>(s));
        conn->pool->on_read(conn, n, buf);
      });
}

void UpstreamPool::on_read(Conn* conn, ssize_t n, const uv_buf_t* buf) {
  if (n == 0) return;
  if (n > 0 && conn->tls) return on_records(conn, buf->base, static_cast<std::size_t>(n));
  UpstreamCall* c = conn->call;
  if (!c) {  // pooled: the upstream closed it, or sent what nobody asked for
    idle_.erase(std::remove(idle_.begin(), idle_.end(), conn), idle_.end());
    close_conn(conn);
    return;
  }
  if (n < 0) {
    if (c->reused && !c->got_bytes && !c->retried) {  // a stale pooled connection
      return stale(c, /*nothing_sent=*/c->nothing_sent,
                   std::string("the upstream closed a pooled connection before answering") +
                       (n == UV_EOF ? "" : std::string(" (") + uv_strerror(static_cast<int>(n)) + ")"));
    }
    // An answer delimited by the end of the connection ends here; any other is cut short.
    c->in_read = true;
    http_parser_execute(&conn->parser, &kSettings, nullptr, 0);
    c->in_read = false;
    if (c->cancelled) return drop(c);
    if (c->complete) return finish(c, false);
    return fail(c, UpstreamFailure::Closed,
                std::string("the upstream closed the connection before the answer was complete") +
                    (n == UV_EOF ? "" : std::string(" (") + uv_strerror(static_cast<int>(n)) + ")"));
  }
  on_answer_bytes(conn, buf->base, static_cast<std::size_t>(n));
}

void UpstreamPool::on_records(Conn* conn, const char* data, std::size_t len) {
  // What the records decrypt to is read as the answer's bytes are in the clear; a finished
  // answer may pool or close the connection while later records of the same read remain.
  tls::Channel::Status st = conn->tls->feed(data, len, conn->tls_out, [&](const char* plain, std::size_t n) {
    if (!conn->closing) on_answer_bytes(conn, plain, n);
  });
  write_records(conn);
  if (conn->closing) return;
  if (st == tls::Channel::Status::Failed) {
    if (UpstreamCall* c = conn->call) return fail(c, UpstreamFailure::Protocol, "TLS: " + conn->tls->error());
    idle_.erase(std::remove(idle_.begin(), idle_.end(), conn), idle_.end());
    close_conn(conn);
  }
}

void UpstreamPool::on_answer_bytes(Conn* conn, const char* data, std::size_t n) {
  UpstreamCall* c = conn->call;
  if (!c) {  // pooled: the upstream sent what nobody asked for
    idle_.erase(std::remove(idle_.begin(), idle_.end(), conn), idle_.end());
    close_conn(conn);
    return;
  }
  c->got_bytes = true;
  arm(c, limits_.idle_ms, UpstreamFailure::Idle);
  c->in_read = true;
  std::size_t used = http_parser_execute(&conn->parser, &kSettings, data, n);
  c->in_read = false;
  if (c->cancelled) return drop(c);
  if (c->complete) {
    // Bytes after a complete answer, or an answer that ends its connection: not reusable.
    bool reusable = used == n && http_should_keep_alive(&conn->parser) != 0;
    return finish(c, reusable);
  }
  if (HTTP_PARSER_ERRNO(&conn->parser) != HPE_OK) {
    std::string what =
        c->head_too_big ? "the answer's head is longer than " + std::to_string(limits_.max_head_bytes) + " bytes"
        : c->bad_status
            ? "the answer's status " + std::to_string(conn->parser.status_code) + " is not an HTTP status"
            : std::string("not an HTTP/1.x answer: ") + http_errno_description(HTTP_PARSER_ERRNO(&conn->parser));
    return fail(c, UpstreamFailure::Protocol, what);
  }
}

void UpstreamPool::arm(UpstreamCall* c, std::uint64_t ms, UpstreamFailure kind) {
  Conn* conn = c->conn;
  conn->timer_kind = kind;
  uv_timer_start(&conn->timer, [](uv_timer_t* t) {
    Conn* conn = conn_of(reinterpret_cast<uv_handle_t*>(t));
    if (!conn->call) return;
    UpstreamPool* pool = conn->pool;
    std::string what;
    switch (conn->timer_kind) {
      case UpstreamFailure::Connect:
        what = (conn->awaiting_addr ? "the upstream host " + pool->target_.host + " did not resolve within "
                                    : std::string("not connected within ")) +
               std::to_string(pool->limits_.connect_ms) + " ms";
        break;
      case UpstreamFailure::FirstByte:
        what = "no answer within " + std::to_string(pool->limits_.first_byte_ms) + " ms";
        break;
      default: what = "the answer went quiet for " + std::to_string(pool->limits_.idle_ms) + " ms"; break;
    }
    pool->fail(conn->call, conn->timer_kind, what);
  }, ms, 0);
}

void UpstreamPool::finish(UpstreamCall* c, bool reusable) {
  Conn* conn = c->conn;
  UpstreamSink* sink = c->sink;
  forget(c);
  conn->call = nullptr;
  c->conn = nullptr;
  uv_timer_stop(&conn->timer);
  if (reusable && !shut_ && idle_.size() < limits_.max_idle && !c->paused) {
    pool_idle(conn);
  } else {
    close_conn(conn);
  }
  delete c;
  sink->on_end();
}

void UpstreamPool::fail(UpstreamCall* c, UpstreamFailure kind, std::string what) {
  UpstreamSink* sink = c->sink;
  counters_.failures.fetch_add(1, std::memory_order_relaxed);
  forget(c);
  unhook(c);
  delete c;
  sink->on_failure(kind, what);
}

void UpstreamPool::drop(UpstreamCall* c) {
  forget(c);
  unhook(c);
  delete c;
}

void UpstreamPool::forget(UpstreamCall* c) {
  active_.erase(std::remove(active_.begin(), active_.end(), c), active_.end());
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), c), waiting_.end());
}

void UpstreamPool::unhook(UpstreamCall* c) {
  if (Conn* conn = c->conn) {
    conn->call = nullptr;
    c->conn = nullptr;
    close_conn(conn);
  }
}

void UpstreamPool::close_conn(Conn* conn) {
  if (conn->closing) return;
  conn->closing = true;
  closing_ += 1;
  auto closed = [](uv_handle_t* h) {
    Conn* conn = conn_of(h);
    if (--conn->open_handles > 0) return;
    UpstreamPool* pool = conn->pool;
    --pool->closing_;
    delete conn;
  };
  uv_close(reinterpret_cast<uv_handle_t*>(&conn->tcp), closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&conn->timer), closed);
}

void UpstreamPool::cancel(UpstreamCall* c) {
  if (!c) return;
  if (c->in_read) {
    c->cancelled = true;  // on_read drops it when the parser returns
    return;
  }
  drop(c);
}

void UpstreamPool::pause(UpstreamCall* c) {
  if (!c || c->paused) return;
  c->paused = true;
  if (Conn* conn = c->conn) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(&conn->tcp));
    if (c->got_bytes) uv_timer_stop(&conn->timer);  // a paused answer is ours to wait for, not the upstream's
  }
}

void UpstreamPool::resume(UpstreamCall* c) {
  if (!c || !c->paused) return;
  c->paused = false;
  Conn* conn = c->conn;
  if (!conn || !conn->connected) return;
  if (c->got_bytes) arm(c, limits_.idle_ms, UpstreamFailure::Idle);
  start_reading(conn);
}

void UpstreamPool::close() {
  if (shut_) return;
  shut_ = true;
  if (lookup_) {  // its callback frees it, whenever the threadpool is done
    lookup_->pool = nullptr;
    (void)uv_cancel(reinterpret_cast<uv_req_t*>(&lookup_->req));
    lookup_ = nullptr;
  }
  while (!active_.empty()) fail(active_.back(), UpstreamFailure::Closed, "the upstream pool is closing");
  for (Conn* conn : idle_) close_conn(conn);
  idle_.clear();
}

}  // namespace mcpfan::detail::proxy

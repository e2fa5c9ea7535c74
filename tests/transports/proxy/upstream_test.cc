// The front proxy's upstream leg (transports/src/proxy/upstream.h) against a scripted
// upstream on a loopback socket (a thread of this test, an ephemeral port): answers stream
// to the sink as they arrive, keep-alive connections are reused, a stale pooled connection
// is retried once, and every bad upstream (refusing, silent, quiet mid-stream, not HTTP,
// cut short, a head too long) ends the call with its own failure kind. Waits are bounded
// and driven by events (the loop runs until the sink says so), never by sleeping.
#include "proxy/upstream.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mcpfan::detail::proxy {
namespace {

using namespace std::chrono_literals;

// Reads one request (head and Content-Length body); false on EOF or error.
bool read_request(int fd, std::string& pending) {
  for (int guard = 0; guard < 10000; ++guard) {
    std::size_t end = pending.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t len = 0;
      std::size_t cl = pending.find("Content-Length: ");
      if (cl != std::string::npos && cl < end) len = std::stoul(pending.substr(cl + 16));
      if (pending.size() >= end + 4 + len) {
        pending.erase(0, end + 4 + len);
        return true;
      }
    }
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    pending.append(buf, static_cast<std::size_t>(n));
  }
  return false;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Keeps a connection open (bounded) until the test's upstream is destroyed.
void hold(const std::atomic<bool>& release) {
  for (int i = 0; i < 3000 && !release.load(); ++i) std::this_thread::sleep_for(5ms);
}

// A loopback upstream: each accepted connection runs `script(fd, release)` on a thread of
// its own; `release` is set when the upstream is destroyed.
class FakeUpstream {
 public:
  using Script = std::function<void(int fd, const std::atomic<bool>& release)>;
  explicit FakeUpstream(Script script) : script_(std::move(script)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (int i = 0;; ++i) {
        int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;  // shutdown() below
        accepted_.fetch_add(1);
        (void)i;
        conns_.emplace_back([this, c] {
          script_(c, release);
          ::close(c);
        });
      }
    });
  }
  ~FakeUpstream() {
    release.store(true);
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    for (auto& t : conns_) t.join();
    ::close(fd_);
  }
  UpstreamTarget target() const {
    return UpstreamTarget{"127.0.0.1", port_, "/mcp", "127.0.0.1:" + std::to_string(port_)};
  }
  int accepted() const { return accepted_.load(); }
  std::atomic<bool> release{false};  // scripts that hold a connection wait for this

 private:
  Script script_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> accepted_{0};
  std::thread thread_;
  std::vector<std::thread> conns_;  // joined at the end (only the accept thread appends)
};

struct Recorder : UpstreamSink {
  std::optional<int> status;
  HeaderList headers;
  std::string body;
  int body_calls = 0;
  bool ended = false;
  std::optional<UpstreamFailure> failure;
  std::string what;
  std::function<void()> on_first_body;
  void on_head(int s, const HeaderList& h) override {
    status = s;
    headers = h;
  }
  void on_body(std::string_view b) override {
    body.append(b);
    if (++body_calls == 1 && on_first_body) on_first_body();
  }
  void on_end() override { ended = true; }
  void on_failure(UpstreamFailure k, const std::string& w) override {
    failure = k;
    what = w;
  }
  bool done() const { return ended || failure.has_value(); }
};

class Loop {
 public:
  Loop() {
    uv_loop_init(&loop_);
    uv_timer_init(&loop_, &tick_);
    uv_timer_start(&tick_, [](uv_timer_t*) {}, 5, 5);  // uv_run(ONCE) never blocks long
  }
  ~Loop() {
    uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
    for (int i = 0; i < 1000 && uv_run(&loop_, UV_RUN_NOWAIT) != 0; ++i) {
    }
    uv_loop_close(&loop_);
  }
  uv_loop_t* get() { return &loop_; }
  // Runs the loop until `pred` holds (bounded: 10 s).
  bool run_until(const std::function<bool()>& pred) {
    auto end = std::chrono::steady_clock::now() + 10s;
    while (!pred()) {
      if (std::chrono::steady_clock::now() > end) return false;
      uv_run(&loop_, UV_RUN_ONCE);
    }
    return true;
  }
  void drain(UpstreamPool& pool) {
    pool.close();
    run_until([&] { return pool.closed(); });
  }

 private:
  uv_loop_t loop_{};
  uv_timer_t tick_{};
};

ForwardedRequest request(const UpstreamTarget& t, std::string_view body = "{}") {
  return {"POST " + t.path + " HTTP/1.1\r\nHost: " + t.authority +
              "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
              std::string(body),
          /*head=*/false, /*idempotent=*/false};
}

ForwardedRequest get_request(const UpstreamTarget& t, std::string_view method = "GET") {
  return {std::string(method) + " " + t.path + " HTTP/1.1\r\nHost: " + t.authority + "\r\n\r\n",
          /*head=*/method == "HEAD",
          /*idempotent=*/true};
}

const char kJson[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: "
    "11\r\n\r\n{\"ok\":true}";

TEST(Upstream, ParsesUrls) {
  auto t = parse_upstream_url("http://127.0.0.1:3000/mcp");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t.value().host, "127.0.0.1");
  EXPECT_EQ(t.value().port, 3000);
  EXPECT_EQ(t.value().path, "/mcp");
  EXPECT_EQ(t.value().authority, "127.0.0.1:3000");
  auto v6 = parse_upstream_url("http://[::1]:8080");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6.value().host, "::1");
  EXPECT_EQ(v6.value().path, "/");
  EXPECT_EQ(parse_upstream_url("http://[::1]").value().port, 80);
  auto name = parse_upstream_url("http://localhost:3000/mcp");  // looked up by the pool (upstream_names_test.cc)
  ASSERT_TRUE(name) << name.error().message;
  EXPECT_EQ(name.value().host, "localhost");
  EXPECT_EQ(name.value().authority, "localhost:3000");
  auto tls = parse_upstream_url("https://mcp.example.com/mcp");
  ASSERT_TRUE(tls) << tls.error().message;
  EXPECT_TRUE(tls.value().https);
  EXPECT_EQ(tls.value().port, 443);
  EXPECT_EQ(tls.value().host, "mcp.example.com");
  EXPECT_FALSE(parse_upstream_url("http://mcp.example.com/mcp").value().https);
  for (const char* bad : {"https://", "http://exa mple.com/mcp", "http://-x/", "http://a!b/",
                          "http://127.0.0.1:0/", "http://127.0.0.1:99999/", "http://:80/", "http://[::1/", "ftp://x"}) {
    auto r = parse_upstream_url(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find("--upstream"), std::string::npos) << r.error().message;
    }
  }
}

TEST(Upstream, AnswersStreamAndKeepAliveConnectionsAreReused) {
  FakeUpstream up([](int fd, const std::atomic<bool>&) {
    std::string pending;
    while (read_request(fd, pending)) write_all(fd, kJson);
  });
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  for (int i = 0; i < 3; ++i) {
    Recorder r;
    ASSERT_NE(pool.start(request(up.target()), &r), nullptr);
    ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
    ASSERT_TRUE(r.ended) << r.what;
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, R"({"ok":true})");
    bool sid = false;
    for (auto& [k, v] : r.headers) sid = sid || (k == "Mcp-Session-Id" && v == "s1");
    EXPECT_TRUE(sid) << "the answer's headers reach the sink as sent";
  }
  EXPECT_EQ(up.accepted(), 1) << "one keep-alive connection for three requests";
  EXPECT_EQ(pool.stats().reused, 2u);
  EXPECT_EQ(pool.stats().idle, 1u);
  loop.drain(pool);
}

TEST(Upstream, AnSseAnswerReachesTheSinkBeforeItEndsAndCanBePaused) {
  std::atomic<bool> second{false};
  FakeUpstream up([&](int fd, const std::atomic<bool>&) {
    std::string pending;
    if (!read_request(fd, pending)) return;
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    write_all(fd, "11\r\nevent: a\ndata: 1\n\r\n");
    for (int i = 0; i < 2000 && !second.load(); ++i) std::this_thread::sleep_for(5ms);
    write_all(fd, "11\r\nevent: b\ndata: 2\n\r\n0\r\n\r\n");
  });
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder r;
  UpstreamCall* call = pool.start(request(up.target()), &r);
  ASSERT_TRUE(loop.run_until([&] { return r.body.size() >= 17 || r.done(); }));
  EXPECT_FALSE(r.done()) << "the first event arrives while the answer is still open";
  EXPECT_EQ(r.body, "event: a\ndata: 1\n");
  pool.pause(call);  // the sink's client is slow: nothing more is read meanwhile
  second.store(true);
  for (int i = 0; i < 20; ++i) uv_run(loop.get(), UV_RUN_ONCE);
  EXPECT_EQ(r.body, "event: a\ndata: 1\n") << "a paused call reads nothing";
  pool.resume(call);
  ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
  ASSERT_TRUE(r.ended) << r.what;
  EXPECT_EQ(r.body, "event: a\ndata: 1\nevent: b\ndata: 2\n");
  loop.drain(pool);
}

// An upstream whose first connection answers once and is then closed while the pool holds it
// (the loop does not run meanwhile, so the pool has not noticed): FIN, or RST with `reset`.
// Its later connections answer every request.
class ClosingUpstream {
 public:
  explicit ClosingUpstream(bool reset)
      : up_([this, reset](int fd, const std::atomic<bool>&) {
          std::string pending;
          bool first = !first_taken_.exchange(true);
          if (!first) {
            while (read_request(fd, pending)) {
              ++later_requests_;
              write_all(fd, kJson);
            }
            return;
          }
          if (!read_request(fd, pending)) return;
          write_all(fd, kJson);
          for (int i = 0; i < 2000 && !close_now_.load(); ++i) std::this_thread::sleep_for(1ms);
          if (reset) {
            // An RST now, without giving up the descriptor's number (the script's caller
            // closes it): dup2 closes the socket, with SO_LINGER 0 that is a reset.
            linger lg{1, 0};
            ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            int placeholder = ::open("/dev/null", O_RDONLY);
            ::dup2(placeholder, fd);
            ::close(placeholder);
          } else {
            ::shutdown(fd, SHUT_RDWR);
          }
          closed_first_.store(true);
        }) {}

  UpstreamTarget target() const { return up_.target(); }
  int accepted() const { return up_.accepted(); }
  int later_requests() const { return later_requests_.load(); }
  // Closes the first connection and waits (bounded) until it is closed.
  bool close_first() {
    close_now_.store(true);
    for (int i = 0; i < 2000 && !closed_first_.load(); ++i) std::this_thread::sleep_for(1ms);
    return closed_first_.load();
  }

 private:
  std::atomic<bool> first_taken_{false}, close_now_{false}, closed_first_{false};
  std::atomic<int> later_requests_{0};
  FakeUpstream up_;
};

// Waits (bounded, without running the loop) until every TCP socket of `loop` has taken the
// peer's reset: then the pool's next write on it fails at once.
bool wait_reset(uv_loop_t* loop) {
  for (int i = 0; i < 5000; ++i) {
    bool all_closed = true;
    uv_walk(loop, [](uv_handle_t* h, void* arg) {
      uv_os_fd_t fd;
      if (h->type != UV_TCP || uv_fileno(h, &fd) != 0) return;
      tcp_info ti{};
      socklen_t len = sizeof ti;
      if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 || ti.tcpi_state != TCP_CLOSE)
        *static_cast<bool*>(arg) = false;
    }, &all_closed);
    if (all_closed) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

// Runs one request to completion, so that its connection is pooled.
void pool_one(Loop& loop, UpstreamPool& pool, const UpstreamTarget& t) {
  Recorder first;
  pool.start(request(t), &first);
  ASSERT_TRUE(loop.run_until([&] { return first.done(); }));
  ASSERT_TRUE(first.ended) << first.what;
  ASSERT_EQ(pool.stats().idle, 1u);
}

// One request pooled its connection, the upstream closed it (FIN, or RST with `reset`), and
// `next` is sent on it before the loop has noticed: what became of it.
void after_stale(Loop& loop, UpstreamPool& pool, ClosingUpstream& up, bool reset, ForwardedRequest next,
                 Recorder& out) {
  pool_one(loop, pool, up.target());
  ASSERT_TRUE(up.close_first());
  if (reset) {
    ASSERT_TRUE(wait_reset(loop.get())) << "the pooled connection never saw the upstream's reset";
  }
  pool.start(std::move(next), &out);
  EXPECT_EQ(pool.stats().reused, 1u);
  ASSERT_TRUE(loop.run_until([&] { return out.done(); }));
}

TEST(Upstream, AStalePooledConnectionRetriesAnIdempotentRequestOnce) {
  ClosingUpstream up(/*reset=*/false);
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder second;
  ASSERT_NO_FATAL_FAILURE(after_stale(loop, pool, up, false, get_request(up.target()), second));
  ASSERT_TRUE(second.ended) << second.what;
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(pool.stats().retried, 1u) << "a GET is sent again on a fresh connection";
  EXPECT_EQ(up.accepted(), 2);
  loop.drain(pool);
}

// RFC 9110 §9.2.2: a POST that went out on a connection the upstream was closing may have
// been received; sending it again could run a tools/call twice. The client gets a 502 instead.
TEST(Upstream, AStalePooledConnectionNeverSendsAPostTwice) {
  ClosingUpstream up(/*reset=*/false);
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder second;
  ASSERT_NO_FATAL_FAILURE(after_stale(loop, pool, up, false, request(up.target()), second));
  ASSERT_FALSE(second.ended) << "the POST was sent again";
  EXPECT_EQ(second.failure, UpstreamFailure::Closed) << second.what;
  EXPECT_NE(second.what.find("not sent again"), std::string::npos) << second.what;
  EXPECT_EQ(pool.stats().retried, 0u);
  EXPECT_EQ(pool.stats().not_retried, 1u);
  EXPECT_EQ(up.accepted(), 1) << "no second connection carried the POST";
  EXPECT_EQ(up.later_requests(), 0);
  loop.drain(pool);
}

// A connection the upstream has reset refuses the first write whole: not one byte of the
// request left, so even a POST is safe to send on a fresh connection.
TEST(Upstream, APostRefusedWholeByAResetPooledConnectionIsRetried) {
  ClosingUpstream up(/*reset=*/true);
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder second;
  ASSERT_NO_FATAL_FAILURE(after_stale(loop, pool, up, true, request(up.target()), second));
  ASSERT_TRUE(second.ended) << second.what;
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(pool.stats().retried, 1u);
  EXPECT_EQ(up.later_requests(), 1);
  loop.drain(pool);
}

TEST(Upstream, APooledConnectionIdlePastKeepaliveIsClosedNotReused) {
  FakeUpstream up([](int fd, const std::atomic<bool>&) {
    std::string pending;
    while (read_request(fd, pending)) write_all(fd, kJson);
  });
  Loop loop;
  UpstreamLimits limits;
  limits.keepalive_ms = 20;
  UpstreamPool pool(loop.get(), up.target(), limits);
  pool_one(loop, pool, up.target());
  ASSERT_TRUE(loop.run_until([&] { return pool.stats().expired == 1; })) << "the idle connection was not closed";
  EXPECT_EQ(pool.stats().idle, 0u);
  Recorder next;
  pool.start(request(up.target()), &next);
  ASSERT_TRUE(loop.run_until([&] { return next.done(); }));
  ASSERT_TRUE(next.ended) << next.what;
  EXPECT_EQ(pool.stats().reused, 0u);
  EXPECT_EQ(up.accepted(), 2);
  loop.drain(pool);
}

// The answer to a HEAD ends at its head, whatever Content-Length it carries; the connection
// is then reused for the next request.
TEST(Upstream, AHeadAnswerEndsAtItsHead) {
  FakeUpstream up([](int fd, const std::atomic<bool>&) {
    std::string pending;
    if (!read_request(fd, pending)) return;
    write_all(fd,
              "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n");  // no body: a HEAD
    while (read_request(fd, pending)) write_all(fd, kJson);
  });
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder head;
  pool.start(get_request(up.target(), "HEAD"), &head);
  ASSERT_TRUE(loop.run_until([&] { return head.done(); }));
  ASSERT_TRUE(head.ended) << head.what;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.body, "");
  Recorder next;
  pool.start(request(up.target()), &next);
  ASSERT_TRUE(loop.run_until([&] { return next.done(); }));
  ASSERT_TRUE(next.ended) << next.what;
  EXPECT_EQ(next.body, R"({"ok":true})");
  EXPECT_EQ(pool.stats().reused, 1u);
  loop.drain(pool);
}

TEST(Upstream, ARefusedConnectionFailsAsConnect) {
  // A loopback port nobody listens on: bound, read, closed.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  const std::uint16_t port = ntohs(a.sin_port);
  UpstreamTarget t{"127.0.0.1", port, "/mcp", "127.0.0.1:" + std::to_string(port)};
  Loop loop;
  UpstreamPool pool(loop.get(), t);
  Recorder r;
  pool.start(request(t), &r);
  ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
  ASSERT_EQ(r.failure, UpstreamFailure::Connect) << r.what;
  EXPECT_NE(r.what.find("connect"), std::string::npos) << r.what;
  loop.drain(pool);
}

TEST(Upstream, SilentAndQuietUpstreamsTimeOutWithTheirOwnKinds) {
  FakeUpstream silent([](int fd, const std::atomic<bool>& release) {
    std::string pending;
    (void)read_request(fd, pending);
    hold(release);  // and never answers
  });
  FakeUpstream quiet([](int fd, const std::atomic<bool>& release) {
    std::string pending;
    if (!read_request(fd, pending)) return;
    write_all(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
    hold(release);  // and sends nothing more
  });
  Loop loop;
  UpstreamLimits limits;
  limits.first_byte_ms = 100;
  limits.idle_ms = 100;
  {
    UpstreamPool pool(loop.get(), silent.target(), limits);
    Recorder r;
    pool.start(request(silent.target()), &r);
    ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
    EXPECT_EQ(r.failure, UpstreamFailure::FirstByte) << r.what;
    loop.drain(pool);
  }
  {
    UpstreamPool pool(loop.get(), quiet.target(), limits);
    Recorder r;
    pool.start(request(quiet.target()), &r);
    ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
    EXPECT_EQ(r.status, 200) << "the head arrived";
    EXPECT_EQ(r.failure, UpstreamFailure::Idle) << r.what;
    loop.drain(pool);
  }
}

TEST(Upstream, NotHttpCutShortOrAHugeHeadFailWithTheirOwnKinds) {
  struct Case {
    const char* answer;
    UpstreamFailure want;
  };
  const std::string huge = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(100000, 'x') + "\r\n\r\n";
  for (const Case& c : {Case{"HELLO THERE\r\n\r\n", UpstreamFailure::Protocol},
                        Case{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"cut\":", UpstreamFailure::Closed},
                        Case{huge.c_str(), UpstreamFailure::Protocol}}) {
    SCOPED_TRACE(std::string(c.answer).substr(0, 40));
    FakeUpstream up([&](int fd, const std::atomic<bool>&) {
      std::string pending;
      if (read_request(fd, pending)) write_all(fd, c.answer);
    });
    Loop loop;
    UpstreamPool pool(loop.get(), up.target());
    Recorder r;
    pool.start(request(up.target()), &r);
    ASSERT_TRUE(loop.run_until([&] { return r.done(); }));
    EXPECT_EQ(r.failure, c.want) << r.what;
    EXPECT_FALSE(r.what.empty());
    loop.drain(pool);
  }
}

TEST(Upstream, CancelAndCloseEndCallsCleanly) {
  FakeUpstream up([](int fd, const std::atomic<bool>& release) {
    std::string pending;
    if (!read_request(fd, pending)) return;
    write_all(fd,
              "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n11\r\nevent: "
              "a\ndata: 1\n\r\n");
    hold(release);
  });
  Loop loop;
  UpstreamPool pool(loop.get(), up.target());
  Recorder cancelled, open;
  UpstreamCall* call = nullptr;
  cancelled.on_first_body = [&] { pool.cancel(call); };  // from inside a sink call
  call = pool.start(request(up.target()), &cancelled);
  pool.start(request(up.target()), &open);
  ASSERT_TRUE(loop.run_until([&] { return cancelled.body_calls > 0 && open.body_calls > 0; }));
  for (int i = 0; i < 10; ++i) uv_run(loop.get(), UV_RUN_ONCE);
  EXPECT_FALSE(cancelled.done()) << "a cancelled call's sink hears nothing more";
  EXPECT_EQ(pool.stats().active, 1u);
  pool.close();
  EXPECT_EQ(open.failure, UpstreamFailure::Closed) << "close() ends the calls in flight";
  ASSERT_TRUE(loop.run_until([&] { return pool.closed(); }));
  Recorder late;
  EXPECT_EQ(pool.start(request(up.target()), &late), nullptr);
  EXPECT_EQ(late.failure, UpstreamFailure::Closed);
}

}  // namespace
}  // namespace mcpfan::detail::proxy

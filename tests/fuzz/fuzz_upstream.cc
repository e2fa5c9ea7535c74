// libFuzzer target: the front proxy (--upstream, docs/protocol.md) facing a hostile upstream. The real
// mcpfan::Server runs in this process in front of an upstream that is a thread of this process
// too: every connection the proxy opens to it gets the input's bytes as the answer (after its
// request has been read), then the upstream closes. The input's first byte picks what a client
// asks through the proxy (one of kClients below: a forwarded tool call, a server/discover and an
// initialize whose answers mcpfan rewrites, an initialize followed by the session's GET stream,
// whose upstream half goes through the SSE event splitter); the rest is what the upstream says.
//
// Findings: any sanitizer report; a hang (exchange(): the server neither answers nor closes
// within 2 s of the client's FIN); bytes back to the client that are not a sequence of
// well-formed HTTP/1.1 responses (the last one may end early: an upstream that closes mid-answer
// cuts the client's answer short, by design); mcpfan's own 502 without a JSON body. Leaks: the
// server is stopped at exit.
#include <arpa/inet.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_support.h"
#include "http/field_syntax.h"

namespace fz = mcpfan::fuzz;

namespace {

std::string post(std::string_view headers, std::string_view body) {
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n" + std::string(headers) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

constexpr std::string_view kInitialize =
    R"({"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
    R"("clientInfo":{}}})";

// What a client asks through the proxy, by the input's first byte.
const std::vector<std::string>& clients() {
  static const std::vector<std::string> all = {
      // a 2026 request the upstream answers (relayed as it streams)
      post(
          "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n",
          R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t",)"
          R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})"),
      // server/discover (read whole, capabilities merged)
      post(
          "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n",
          R"({"jsonrpc":"2.0","id":2,"method":"server/discover",)"
          R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})"),
      // a 2025 initialize (merged; the session id adopted)
      post("", kInitialize),
      // initialize, then the session's GET stream (a stream if the upstream named the session "fz")
      post("", kInitialize) +
          "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: fz\r\n\r\n",
  };
  return all;
}

// The hostile upstream: answers every request with the current input's bytes, then closes.
class Upstream {
 public:
  Upstream() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    FUZZ_CHECK(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 128) == 0,
               "the fuzz upstream cannot listen");
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~Upstream() {
    stop_.store(true);
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    for (int i = 0; i < 400 && active_.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::close(fd_);
  }
  int port() const { return port_; }
  void set_answer(std::string_view a) {
    std::lock_guard lock(mu_);
    answer_.assign(a);
  }

 private:
  void run() {
    while (!stop_.load()) {
      if (active_.load() > 256) {  // bounded: the proxy opens a connection or two per input
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      // A thread each: a connection the proxy is done with must not delay the next one (a
      // stale pooled connection is retried on a fresh one while the old one still drains).
      active_.fetch_add(1);
      std::thread([this, c] {
        serve(c);
        ::close(c);
        active_.fetch_sub(1);
      }).detach();
    }
  }
  void serve(int c) {
    // Read the request's head (bounded in bytes and time); the body, if any, is left unread.
    std::string in;
    char buf[4096];
    while (in.find("\r\n\r\n") == std::string::npos && in.size() < 65536) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 500) <= 0) return;
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      in.append(buf, static_cast<std::size_t>(n));
    }
    std::string answer;
    {
      std::lock_guard lock(mu_);
      answer = answer_;
    }
    std::string_view rest = answer;
    while (!rest.empty()) {
      ssize_t n = ::send(c, rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
    ::shutdown(c, SHUT_WR);
    // Drain what the proxy still sends (a body) so that the close is a FIN, not a reset;
    // briefly: a thread per connection must not pile up on a loaded machine.
    for (int i = 0; i < 4; ++i) {
      pollfd p{c, POLLIN, 0};
      if (::poll(&p, 1, 25) <= 0 || ::recv(c, buf, sizeof buf, 0) <= 0) return;
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> active_{0};  // connections being served
  std::mutex mu_;
  std::string answer_;
  std::thread thread_;
};

struct Proxy {
  Upstream upstream;
  std::unique_ptr<mcpfan::Server> server;
  std::uint16_t port = 0;
};
Proxy* g_proxy = nullptr;

void stop_at_exit() {
  if (!g_proxy) return;
  (void)g_proxy->server->stop();
  delete g_proxy;
  g_proxy = nullptr;
}

Proxy& proxy() {
  if (g_proxy) return *g_proxy;
  std::signal(SIGPIPE, SIG_IGN);
  g_proxy = new Proxy;
  mcpfan::ServerConfig c;
  c.listen.host = "127.0.0.1";
  c.listen.port = 0;
  c.workers = 1;
  c.http.max_body = 16 * 1024;
  c.http.keepalive_ms = 50;
  c.shutdown_grace_ms = 200;
  c.mcp.session_idle_ms = 200;  // adopted sessions expire, not pile up
  c.upstream.url = "http://127.0.0.1:" + std::to_string(g_proxy->upstream.port()) + "/mcp";
  // An input makes at most two upstream calls one after the other (initialize, then the GET's
  // leg): with these bounds even both timing out stays well inside exchange()'s 2 s hang check,
  // which a loaded machine (CI with other builds) otherwise reached with 1 s each.
  c.upstream.connect_ms = 250;
  c.upstream.first_byte_ms = 250;
  c.upstream.idle_ms = 250;
  c.upstream.max_answer_bytes = 4096;  // reachable: bigger rewritten answers are a 502
  g_proxy->server = std::make_unique<mcpfan::Server>(std::move(c));
  auto port = g_proxy->server->start();
  FUZZ_CHECK(port.ok(), "the proxy fuzz server did not start: %s", port.error().message.c_str());
  g_proxy->port = port.value();
  std::atexit(stop_at_exit);
  return *g_proxy;
}


// What came back is a sequence of HTTP/1.1 responses; the last may be cut short. A 502 or 504
// mcpfan wrote itself (no upstream answer had begun) has a JSON body. Whatever the upstream
// sent, what is relayed reads the same to a strict client: every field name a token,
// every value free of control bytes, no obs-fold (the bytes are parsed in one piece, so a field
// or value comes in one callback, and two value callbacks in a row are a folded line).
void check_responses(std::string_view bytes) {
  struct State {
    unsigned status = 0;
    std::string body;
    bool json = false;
    bool in_header_ct = false;
    bool last_was_value = false;
  } st;
  http_parser_settings s{};
  s.on_message_begin = [](http_parser* p) {
    auto* st = static_cast<State*>(p->data);
    *st = State{};
    return 0;
  };
  s.on_header_field = [](http_parser* p, const char* at, size_t len) {
    auto* st = static_cast<State*>(p->data);
    std::string_view name(at, len);
    FUZZ_CHECK(mcpfan::detail::is_token(name), "a relayed header name that is not a token: \"%s\"",
               fz::printable(name).c_str());
    st->in_header_ct = name == "Content-Type";
    st->last_was_value = false;
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, size_t len) {
    auto* st = static_cast<State*>(p->data);
    std::string_view value(at, len);
    FUZZ_CHECK(!st->last_was_value, "a relayed header value folded onto a second line: %s",
               fz::printable(value).c_str());
    FUZZ_CHECK(mcpfan::detail::is_clean_field_value(value), "a relayed header value with a control byte: %s",
               fz::printable(value).c_str());
    st->last_was_value = true;
    if (st->in_header_ct && value == "application/json") st->json = true;
    return 0;
  };
  s.on_headers_complete = [](http_parser* p) {
    static_cast<State*>(p->data)->status = p->status_code;
    return 0;
  };
  s.on_body = [](http_parser* p, const char* at, size_t len) {
    static_cast<State*>(p->data)->body.append(at, len);
    return 0;
  };
  s.on_message_complete = [](http_parser* p) {
    auto* st = static_cast<State*>(p->data);
    if ((st->status == 502 || st->status == 504) && st->json) {
      simdjson::dom::parser json;
      FUZZ_CHECK(!json.parse(st->body).error(), "a 502/504 with a body that is not JSON: %s",
                 fz::printable(st->body).c_str());
    }
    return 0;
  };
  http_parser parser;
  http_parser_init(&parser, HTTP_RESPONSE);
  parser.data = &st;
  std::size_t n = http_parser_execute(&parser, &s, bytes.data(), bytes.size());
  auto err = HTTP_PARSER_ERRNO(&parser);
  FUZZ_CHECK(err == HPE_OK && n == bytes.size(), "malformed HTTP from the proxy (%s at byte %zu): %s",
             http_errno_name(err), n, fz::printable(bytes.substr(n > 200 ? n - 200 : 0), 400).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)proxy();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string& client = clients()[data[0] % clients().size()];
  proxy().upstream.set_answer(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  int fd = fz::connect_loopback(proxy().port);
  auto rx = fz::exchange(fd, {client}, "HTTP through the proxy");
  ::close(fd);
  if (rx.clean_eof) check_responses(rx.bytes);
  return 0;
}

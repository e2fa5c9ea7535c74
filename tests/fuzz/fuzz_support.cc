#include "fuzz_support.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sched.h>
#include <simdjson.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "fuzz_auth.h"
#include "fuzz_check.h"
#include "http/field_syntax.h"

namespace mcpfan::fuzz {

namespace {

struct Running {
  std::unique_ptr<Server> server;
  std::uint16_t port = 0;
};
struct Instance {
  Running plain, authed;
};
Instance* g_instance = nullptr;
constexpr std::uint64_t kSessionIdleMs = 200;  // sessions made by `initialize` inputs expire, not pile up

void stop_at_exit() {
  // Runs before LeakSanitizer's own atexit check (registered earlier, so it runs later).
  if (!g_instance) return;
  (void)g_instance->plain.server->stop();
  (void)g_instance->authed.server->stop();
  delete g_instance;
  g_instance = nullptr;
  auth::remove_files();
}

Running start(ServerConfig c, const char* which) {
  auto s = std::make_unique<Server>(std::move(c));
  auto port = s->start();
  FUZZ_CHECK(port.ok(), "the %s fuzz server did not start: %s", which, port.error().message.c_str());
  return Running{std::move(s), port.value()};
}

Instance& instance() {
  if (g_instance) return *g_instance;
  // As tools/mcpfan/main.cc does: libuv writes to peers that may have gone.
  std::signal(SIGPIPE, SIG_IGN);
  ServerConfig c;
  c.listen.host = "127.0.0.1";
  c.listen.port = 0;
  c.workers = 1;
  c.http.max_body = 16 * 1024;
  c.http.max_header_bytes = 4 * 1024;
  c.http.max_url_length = 1024;
  c.mcp.max_uri_length = 256;
  c.mcp.max_uris_per_listen = 16;
  c.http.keepalive_ms = 50;
  c.shutdown_grace_ms = 200;
  c.mcp.session_idle_ms = kSessionIdleMs;
  c.mcp.max_line_bytes = 4 * 1024;
  c.http.max_requests_per_connection = 8;  // pipelined inputs reach "the last one is answered with close"
  ServerConfig a = c;  // the same limits, plus authentication, ceilings and a publish rate
  auth::configure(a);
  g_instance = new Instance{start(std::move(c), "plain"), start(std::move(a), "authenticated")};
  auth::remove_key_files();
  std::atexit(stop_at_exit);
  return *g_instance;
}

long now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int hang_ms() {
  static const int ms = [] {
    const char* e = std::getenv("MCPFAN_FUZZ_HANG_MS");
    int v = e ? std::atoi(e) : 0;
    return v > 0 ? v : 2000;
  }();
  return ms;
}

constexpr int kPauseMs = 2;  // the longest pause between pieces
constexpr std::size_t kMaxPauses = 8;

enum class ReadState { Open, Eof, Reset };

ReadState drain(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return ReadState::Eof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadState::Open;
    return ReadState::Reset;
  }
}

[[noreturn]] void hang(const char* transport, const char* what, std::size_t sent, std::size_t total,
                       const std::string& got) {
  check_failed(__FILE__, __LINE__, "hang", "%s: %s within %d ms (set MCPFAN_FUZZ_HANG_MS); %zu of %zu input bytes "
               "written; %zu bytes received: %s", transport, what, hang_ms(), sent, total, got.size(),
               printable(got, 300).c_str());
}

// ---- HTTP response checks ----

bool starts_with_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && strncasecmp(s.data(), prefix.data(), prefix.size()) == 0;
}

simdjson::dom::parser& json_parser() {
  static simdjson::dom::parser p;
  return p;
}

}  // namespace

// The parsed object lives in json_parser() until its next parse.
simdjson::dom::object check_json_message(std::string_view json, const char* where) {
  simdjson::dom::element root;
  auto err = parse_json(json_parser(), json, root);
  FUZZ_CHECK(!err, "%s is not JSON (%s): %s", where, simdjson::error_message(err), printable(json).c_str());
  simdjson::dom::object obj;
  FUZZ_CHECK(!root.get_object().get(obj), "%s is not a JSON object: %s", where, printable(json).c_str());
  return obj;
}

// The complete lines of an SSE body: events, data lines of JSON, comments.
void check_sse_body(std::string_view body) {
  while (true) {
    auto nl = body.find('\n');
    if (nl == std::string_view::npos) return;  // an unterminated last line: the stream was cut
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl + 1);
    if (line.empty() || line.front() == ':' || line == "event: message") continue;
    FUZZ_CHECK(line.substr(0, 6) == "data: ", "an SSE line that is not event/data/comment: %s",
               printable(line).c_str());
    check_json_message(line.substr(6), "an SSE data line");
  }
}

namespace {

struct ResponseState {
  std::string field, value, content_type, body;
  std::string www_authenticate, retry_after;
  bool in_value = false;
  bool in_message = false;
  bool sse = false;
  unsigned status = 0;
  unsigned messages = 0;
  const HttpExpect* expect = nullptr;
  std::size_t finals = 0;                           // final (non-1xx) responses seen
  bool head = false;                                // this response answers a HEAD: no body

  void commit() {
    // What mcpfan writes (its own answers, and the upstream's it relays) is read the same by
    // any strict reader: token names, values without control bytes (docs/protocol.md "What is rejected, rewritten and
    // never retried").
    FUZZ_CHECK(detail::is_token(field), "a response header name that is not a token: \"%s\"", printable(field).c_str());
    FUZZ_CHECK(detail::is_clean_field_value(value), "a response header value with a control byte: %s: %s",
               printable(field).c_str(), printable(value).c_str());
    if (starts_with_ci(field, "content-type") && field.size() == 12) content_type = value;
    if (starts_with_ci(field, "www-authenticate") && field.size() == 16) www_authenticate = value;
    if (starts_with_ci(field, "retry-after") && field.size() == 11) retry_after = value;
    field.clear();
    value.clear();
  }
};

int on_message_begin(http_parser* p) {
  auto* s = static_cast<ResponseState*>(p->data);
  s->field.clear();
  s->value.clear();
  s->content_type.clear();
  s->www_authenticate.clear();
  s->retry_after.clear();
  s->body.clear();
  s->in_value = false;
  s->in_message = true;
  s->sse = false;
  s->head = false;
  return 0;
}

int on_header_field(http_parser* p, const char* at, std::size_t len) {
  auto* s = static_cast<ResponseState*>(p->data);
  if (s->in_value) s->commit();
  s->in_value = false;
  s->field.append(at, len);
  return 0;
}

int on_header_value(http_parser* p, const char* at, std::size_t len) {
  auto* s = static_cast<ResponseState*>(p->data);
  s->in_value = true;
  s->value.append(at, len);
  return 0;
}

// What every refusal carries, on both servers (http/answers.cc: respond_refusal,
// handle_publish): a JSON body, a challenge with each 401 (RFC 6750 §3) and a delay with each 429.
void check_refusal_headers(const ResponseState& s) {
  unsigned st = s.status;
  if (st == 401 || st == 403 || st == 429 || st == 503) {
    FUZZ_CHECK(starts_with_ci(s.content_type, "application/json"), "a %u answer whose Content-Type is \"%s\", not JSON",
               st, printable(s.content_type).c_str());
  }
  if (st == 401) {
    FUZZ_CHECK(starts_with_ci(s.www_authenticate, "Bearer realm=\""),
               "a 401 without WWW-Authenticate: Bearer realm=...: \"%s\"", printable(s.www_authenticate).c_str());
  }
  if (st == 429) {
    const std::string& r = s.retry_after;
    bool seconds = !r.empty() && r.size() <= 9 && r.find_first_not_of("0123456789") == std::string::npos &&
                   std::atol(r.c_str()) >= 1;
    FUZZ_CHECK(seconds, "a 429 without Retry-After: <seconds >= 1>: \"%s\"", printable(r).c_str());
  }
}

// Without credentials the authenticated server grants nothing. A listen (SSE), a session
// (initialize: a JSON-RPC result with Mcp-Session-Id), any JSON-RPC result, a 202 to a
// notification and a session's DELETE (empty 2xx bodies) all need a valid client token; a
// publish's {"accepted":N} needs a publisher key. Still served without: /healthz and /metrics
// (text/plain, to anyone on loopback) and JSON-RPC errors, which the decoder answers 200
// (-32601/-32602 with an id) before anyone is asked for a token.
// Checked twice: at the headers (an SSE stream never completes here: the FIN cuts it), and for
// a JSON body once it is complete.
void check_authorized(const ResponseState& s, bool complete) {
  const HttpExpect& e = *s.expect;
  if (!e.authed || s.status < 200 || s.status > 299 || s.head) return;
  if (starts_with_ci(s.content_type, "text/plain")) return;
  if (!starts_with_ci(s.content_type, "application/json")) {
    FUZZ_CHECK(e.may_have_token, "the authenticated server answered %u (Content-Type \"%s\") to an input without a "
               "signed client token", s.status, printable(s.content_type).c_str());
    return;
  }
  if (!complete) return;  // judged by its body
  simdjson::dom::element root;
  simdjson::dom::element member;
  if (parse_json(json_parser(), s.body, root) || !root.is_object()) return;  // reported as not JSON
  FUZZ_CHECK(e.may_have_token || root["result"].get(member), "the authenticated server answered a JSON-RPC result "
             "to an input without a signed client token: %s", printable(s.body, 200).c_str());
  FUZZ_CHECK(e.may_have_publisher_key || root["accepted"].get(member), "a publish was accepted without a publisher "
             "key: %s", printable(s.body, 200).c_str());
}

int on_headers_complete(http_parser* p) {
  auto* s = static_cast<ResponseState*>(p->data);
  if (s->in_value || !s->field.empty()) s->commit();
  s->in_value = false;
  s->status = p->status_code;
  s->sse = starts_with_ci(s->content_type, "text/event-stream");
  FUZZ_CHECK(s->status != 500, "the server answered 500: an exception left a request handler");
  check_refusal_headers(*s);
  if (s->status < 200) return 0;  // 100 Continue answers no request of its own
  std::size_t i = s->finals++;
  // The answer to a HEAD request has a GET's headers and no body (RFC 9110 §9.3.2).
  const auto& heads = s->expect->head_requests;
  s->head = i < heads.size() && heads[i];
  check_authorized(*s, false);
  return s->head ? 1 : 0;
}

int on_body(http_parser* p, const char* at, std::size_t len) {
  static_cast<ResponseState*>(p->data)->body.append(at, len);
  return 0;
}

int on_message_complete(http_parser* p) {
  auto* s = static_cast<ResponseState*>(p->data);
  s->in_message = false;
  ++s->messages;
  if (s->head) {
    FUZZ_CHECK(s->body.empty(), "an answer to HEAD carries a body");
  } else if (s->sse) {
    check_sse_body(s->body);
  } else if (starts_with_ci(s->content_type, "application/json")) {
    check_json_message(s->body, "an application/json body");
  }
  check_authorized(*s, true);
  return 0;
}

}  // namespace

Server& server() { return *instance().plain.server; }
Server& authed_server() { return *instance().authed.server; }

Routed route(std::string_view input) {
  if (input.substr(0, kAuthTrustedMarker.size()) == kAuthTrustedMarker) {
    return {Target::AuthedTrusted, input.substr(kAuthTrustedMarker.size())};
  }
  if (input.substr(0, kAuthMarker.size()) == kAuthMarker) return {Target::Authed, input.substr(kAuthMarker.size())};
  return {Target::Plain, input};
}

int connect_unix() {
  const std::string& path = authed_server().config().listen.unix_path;
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FUZZ_CHECK(fd >= 0, "socket: %s", std::strerror(errno));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  FUZZ_CHECK(path.size() < sizeof addr.sun_path, "Unix socket path too long: %s", path.c_str());
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  FUZZ_CHECK(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "cannot connect to %s: %s",
             path.c_str(), std::strerror(errno));
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

int connect_http(bool authed) { return connect_loopback(authed ? instance().authed.port : instance().plain.port); }

int connect_loopback(std::uint16_t port) {
  // Each input is a new connection, and ours is the side that sends the first FIN, so each
  // leaves a TIME_WAIT socket. Spreading the source over 250 loopback addresses keeps the
  // ephemeral ports from running out at any exec rate.
  static unsigned next = 0;
  for (int attempt = 0; attempt < 16; ++attempt) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(fd >= 0, "socket: %s", std::strerror(errno));
    int one = 1;
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000100u + 1 + (next++ % 250));  // 127.0.1.1 .. 127.0.1.250
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0 &&
        ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      return fd;
    }
    ::close(fd);
  }
  check_failed(__FILE__, __LINE__, "connect", "cannot connect to the fuzz server on port %u: %s", port,
               std::strerror(errno));
}

std::vector<std::string_view> split_input(std::string_view data) {
  std::vector<std::string_view> pieces;
  for (;;) {
    auto at = data.find(kSplitMarker);
    if (at == std::string_view::npos) break;
    pieces.push_back(data.substr(0, at));
    data.remove_prefix(at + kSplitMarker.size());
  }
  pieces.push_back(data);
  return pieces;
}

namespace {

// Between two pieces: long enough for the server to read the first on its own. On a Unix
// socket that is exact: SIOCOUTQ counts sent bytes the peer has not read yet. Over TCP
// (where it counts unacknowledged bytes, and loopback acknowledges before the server reads)
// wait until an answer starts to arrive or a millisecond has passed.
void pause(int fd, ReadState& st, std::string& got) {
  int domain = 0;
  socklen_t len = sizeof domain;
  bool unix_socket = ::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  auto elapsed_us = [&] {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ts.tv_sec - start.tv_sec) * 1000000L + (ts.tv_nsec - start.tv_nsec) / 1000L;
  };
  if (unix_socket) {
    int unread = 1;
    while (st == ReadState::Open && elapsed_us() < kPauseMs * 1000L && ::ioctl(fd, SIOCOUTQ, &unread) == 0 &&
           unread > 0) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) st = drain(fd, got);
      else sched_yield();
    }
    return;
  }
  std::size_t before = got.size();
  while (st == ReadState::Open && got.size() == before && elapsed_us() < 1000) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 1) > 0) st = drain(fd, got);
  }
}

}  // namespace

Received exchange(int fd, const std::vector<std::string_view>& pieces, const char* transport) {
  Received r;
  ReadState st = ReadState::Open;
  std::size_t total = 0, sent = 0;
  for (auto p : pieces) total += p.size();
  bool write_failed = false;

  for (std::size_t i = 0; i < pieces.size() && st == ReadState::Open && !write_failed; ++i) {
    std::string_view left = pieces[i];
    long deadline = now_ms() + hang_ms();
    while (!left.empty() && st == ReadState::Open) {
      long wait = deadline - now_ms();
      if (wait <= 0) hang(transport, "the server stopped reading its input", sent, total, r.bytes);
      pollfd p{fd, POLLIN | POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(wait)) < 0) continue;  // EINTR
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) st = drain(fd, r.bytes);
      if ((p.revents & POLLOUT) && st == ReadState::Open) {
        ssize_t w = ::send(fd, left.data(), left.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
          left.remove_prefix(static_cast<std::size_t>(w));
          sent += static_cast<std::size_t>(w);
        } else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          write_failed = true;  // the server closed (after an answer with Connection: close)
          break;
        }
      }
    }
    if (i + 1 < pieces.size() && i < kMaxPauses && st == ReadState::Open) pause(fd, st, r.bytes);
  }

  if (st == ReadState::Open) ::shutdown(fd, SHUT_WR);
  long deadline = now_ms() + hang_ms();
  while (st == ReadState::Open) {
    long wait = deadline - now_ms();
    if (wait <= 0)
      hang(transport, "after the client's FIN the server neither closed nor finished", sent, total, r.bytes);
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(wait)) > 0) st = drain(fd, r.bytes);
  }
  r.clean_eof = st == ReadState::Eof;
  static const bool verbose = std::getenv("MCPFAN_FUZZ_VERBOSE") != nullptr;
  if (verbose) {  // for reproducing: what went in and what came back
    std::fprintf(stderr, "---- %s: %zu bytes in %zu piece(s); %zu bytes back, %s ----\n%.*s\n---- end ----\n",
                 transport, total, pieces.size(), r.bytes.size(), r.clean_eof ? "then FIN" : "then reset",
                 static_cast<int>(r.bytes.size()), r.bytes.data());
  }
  return r;
}

std::vector<bool> head_requests(std::string_view input) {
  static const http_parser_settings settings = [] {
    http_parser_settings s{};
    s.on_headers_complete = [](http_parser* p) {
      static_cast<std::vector<bool>*>(p->data)->push_back(p->method == HTTP_HEAD);
      return 0;
    };
    return s;
  }();
  std::vector<bool> heads;
  http_parser parser;
  http_parser_init(&parser, HTTP_REQUEST);
  parser.data = &heads;
  http_parser_execute(&parser, &settings, input.data(), input.size());
  return heads;
}

void check_http_responses(std::string_view bytes, const HttpExpect& expect) {
  static const http_parser_settings settings = [] {
    http_parser_settings s{};
    s.on_message_begin = on_message_begin;
    s.on_header_field = on_header_field;
    s.on_header_value = on_header_value;
    s.on_headers_complete = on_headers_complete;
    s.on_body = on_body;
    s.on_message_complete = on_message_complete;
    return s;
  }();
  ResponseState state;
  state.expect = &expect;
  http_parser parser;
  http_parser_init(&parser, HTTP_RESPONSE);
  parser.data = &state;
  std::size_t n = http_parser_execute(&parser, &settings, bytes.data(), bytes.size());
  auto err = HTTP_PARSER_ERRNO(&parser);
  FUZZ_CHECK(err == HPE_OK && n == bytes.size(), "malformed HTTP response (%s at byte %zu): %s",
             http_errno_name(err), n, printable(bytes.substr(n > 200 ? n - 200 : 0), 400).c_str());
  if (!state.in_message) return;
  if (state.sse) {  // a stream the client's FIN cancelled: its complete lines were checked
    check_sse_body(state.body);
    return;
  }
  http_parser_execute(&parser, &settings, nullptr, 0);  // EOF: completes a read-until-close body
  FUZZ_CHECK(!state.in_message, "a response cut short (status %u, %zu body bytes): %s", state.status,
             state.body.size(), printable(bytes.substr(bytes.size() > 300 ? bytes.size() - 300 : 0)).c_str());
}

namespace {

// A JSON-RPC message the server wrote on a stdio stream (already checked to be an object).
void check_stdio_message(simdjson::dom::object msg, std::string_view line, const StdioExpect& e) {
  simdjson::dom::element v;
  bool is_error = !msg["error"].get(v);
  if (!is_error) {
    FUZZ_CHECK(!msg["result"].error() || !msg["method"].error(), "a stdio line with no result, error or method: %s",
               printable(line).c_str());
    FUZZ_CHECK(!e.needs_token || e.may_have_token, "a client that must authenticate got a non-error without sending "
               "a signed token: %s", printable(line).c_str());
    return;
  }
  std::int64_t code = 0;
  std::string_view message;
  FUZZ_CHECK(v.is_object() && !v["code"].get_int64().get(code) && !v["message"].get_string().get(message),
             "a stdio error without an integer code and a string message: %s", printable(line).c_str());
  switch (code) {
    case -32700: case -32600: case -32601: case -32602: case -32022: case -32030: case -32031: case -32032:
    case -32002:  // resources/read: mcpfan holds no resources (stdio_requests.cc)
      break;
    default: check_failed(__FILE__, __LINE__, "code", "a stdio error with a code the server does not use: %s",
                          printable(line).c_str());
  }
  FUZZ_CHECK(code != -32031 || e.may_have_token, "-32031 (forbidden) without a signed token in the input: %s",
             printable(line).c_str());
  if (e.needs_token && !e.may_have_token) {
    FUZZ_CHECK(code == -32030 || code == -32700 || code == -32600 || code == -32602,
               "a client that must authenticate, and sent no signed token, got a code other than -32030 or a "
               "decoder's: %s", printable(line).c_str());
  }
}

}  // namespace

void check_stdio_lines(std::string_view bytes, const StdioExpect& expect) {
  while (true) {
    auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) return;  // a last line cut by the close
    std::string_view line = bytes.substr(0, nl);
    check_stdio_message(check_json_message(line, "a stdio line"), line, expect);
    bytes.remove_prefix(nl + 1);
  }
}

}  // namespace mcpfan::fuzz

// Line-framed MCP clients: pipes to a child `mcpfan --stdio`, Unix-socket connections.
#include "stdio_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#ifndef MCPFAN_BIN
#error "MCPFAN_BIN must name the mcpfan binary"
#endif

namespace itest {
namespace {

int MsLeft(Deadline d) {
  auto left = std::chrono::duration_cast<Ms>(d - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<long long>(left, 1 << 30));
}

void SetErr(std::string* err, std::string msg) {
  if (err) *err = std::move(msg);
}

void SetNonBlocking(int fd) {
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

// Writing to a pipe whose reader died must fail with EPIPE, not kill the test binary.
void IgnoreSigpipeOnce() {
  static const bool done = [] {
    signal(SIGPIPE, SIG_IGN);
    return true;
  }();
  (void)done;
}

std::string BinaryPath() {
  const char* env = std::getenv("MCPFAN_BIN");
  return env && *env ? env : MCPFAN_BIN;
}

// The port of the first complete stderr line "... listening on HOST:PORT ...", or 0.
int PortFromLog(const std::string& text) {
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    std::string_view line(text.data() + start, nl - start);
    start = nl + 1;
    size_t at = line.find("listening on ");
    if (at == std::string_view::npos) continue;
    std::string_view rest = line.substr(at + 13);
    size_t end = rest.find_first_of(" \t");
    std::string_view addr = rest.substr(0, end);
    size_t colon = addr.rfind(':');
    if (colon == std::string_view::npos) continue;
    int port = 0;
    size_t digits = 0;
    for (char c : addr.substr(colon + 1)) {
      if (!std::isdigit(static_cast<unsigned char>(c)) || ++digits > 5) {
        port = 0;
        break;
      }
      port = port * 10 + (c - '0');
    }
    if (port > 0 && port < 65536) return port;
  }
  return 0;
}

}  // namespace

// ---------------------------------------------------------------- LineChannel

LineChannel::~LineChannel() { Close(); }

LineChannel::LineChannel(LineChannel&& o) noexcept
    : rfd_(o.rfd_), wfd_(o.wfd_), eof_(o.eof_), buf_(std::move(o.buf_)), lines_(std::move(o.lines_)),
      transcript_(std::move(o.transcript_)) {
  o.rfd_ = o.wfd_ = -1;
}

LineChannel& LineChannel::operator=(LineChannel&& o) noexcept {
  if (this != &o) {
    Close();
    rfd_ = o.rfd_;
    wfd_ = o.wfd_;
    eof_ = o.eof_;
    buf_ = std::move(o.buf_);
    lines_ = std::move(o.lines_);
    transcript_ = std::move(o.transcript_);
    o.rfd_ = o.wfd_ = -1;
  }
  return *this;
}

void LineChannel::Attach(int read_fd, int write_fd) {
  Close();
  IgnoreSigpipeOnce();
  rfd_ = read_fd;
  wfd_ = write_fd;
  eof_ = false;
  if (rfd_ >= 0) SetNonBlocking(rfd_);
  if (wfd_ >= 0 && wfd_ != rfd_) SetNonBlocking(wfd_);
}

bool LineChannel::Send(std::string_view data, Ms timeout, std::string* err) {
  if (wfd_ < 0) {
    SetErr(err, "send: write side closed");
    return false;
  }
  const bool sock = wfd_ == rfd_;
  Deadline end = After(timeout);
  while (!data.empty()) {
    ssize_t n = sock ? send(wfd_, data.data(), data.size(), MSG_NOSIGNAL) : write(wfd_, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{wfd_, POLLOUT, 0};
      int r = poll(&p, 1, MsLeft(end));
      if (r == 0) {
        SetErr(err, "send: timed out (peer not reading)");
        return false;
      }
      continue;
    }
    SetErr(err, std::string("send: ") + std::strerror(errno));
    return false;
  }
  return true;
}

bool LineChannel::SendLine(std::string_view json, Ms timeout, std::string* err) {
  std::string line(json);
  line.push_back('\n');
  return Send(line, timeout, err);
}

void LineChannel::Split() {
  size_t pos = 0;
  for (size_t nl = buf_.find('\n'); nl != std::string::npos; nl = buf_.find('\n', pos)) {
    std::string line = buf_.substr(pos, nl - pos);
    transcript_.push_back(line);
    lines_.push_back(std::move(line));
    pos = nl + 1;
  }
  buf_.erase(0, pos);
}

int LineChannel::ReadSome(Deadline deadline) {
  if (rfd_ < 0 || eof_) return 0;
  char buf[65536];
  for (;;) {
    ssize_t n = read(rfd_, buf, sizeof buf);
    if (n > 0) {
      buf_.append(buf, size_t(n));
      Split();
      return int(n);
    }
    if (n == 0) {
      eof_ = true;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET) {
      eof_ = true;
      return 0;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -2;
    pollfd p{rfd_, POLLIN, 0};
    int r = poll(&p, 1, MsLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -2;
    if (r == 0) return -1;
  }
}

bool LineChannel::ReadAvailable() {
  if (rfd_ < 0 || eof_) return false;
  char buf[65536];
  for (int i = 0; i < 64; ++i) {  // bounded: at most 4 MiB per call
    ssize_t n = read(rfd_, buf, sizeof buf);
    if (n > 0) {
      buf_.append(buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    eof_ = true;
    break;
  }
  Split();
  return !eof_;
}

std::optional<std::string> LineChannel::NextLine(Ms timeout) {
  Deadline end = After(timeout);
  for (;;) {
    if (!lines_.empty()) {
      std::string l = std::move(lines_.front());
      lines_.pop_front();
      return l;
    }
    if (eof_ || rfd_ < 0) return std::nullopt;
    int r = ReadSome(end);
    if (r < 0 && lines_.empty()) return std::nullopt;
  }
}

std::optional<Json> LineChannel::NextJson(Ms timeout, std::string* err) {
  auto l = NextLine(timeout);
  if (!l) {
    SetErr(err, eof_ ? "EOF (peer closed)" + (buf_.empty() ? std::string() : "; unterminated bytes: " + buf_.substr(0, 300))
                     : "no line within " + std::to_string(timeout.count()) + " ms" +
                           (buf_.empty() ? std::string() : "; partial: " + buf_.substr(0, 300)));
    return std::nullopt;
  }
  Json j(*l);
  if (!j.ok()) {
    SetErr(err, "line is not JSON (" + j.error() + "): " + l->substr(0, 500));
    return std::nullopt;
  }
  return j;
}

std::vector<std::string> LineChannel::DrainFor(Ms quiet) {
  std::vector<std::string> out;
  for (int i = 0; i < 10000; ++i) {  // bounded
    auto l = NextLine(quiet);
    if (!l) break;
    out.push_back(std::move(*l));
  }
  return out;
}

bool LineChannel::WaitEof(Ms timeout) {
  Deadline end = After(timeout);
  while (!eof_) {
    int r = ReadSome(end);
    if (r < 0) return false;
  }
  return true;
}

void LineChannel::CloseWrite() {
  if (wfd_ < 0) return;
  if (wfd_ == rfd_) {
    shutdown(wfd_, SHUT_WR);
  } else {
    close(wfd_);
  }
  wfd_ = -1;
}

void LineChannel::Close() {
  if (wfd_ >= 0 && wfd_ != rfd_) close(wfd_);
  if (rfd_ >= 0) close(rfd_);
  rfd_ = wfd_ = -1;
}

size_t PumpLines(const std::vector<LineChannel*>& chans, const std::function<bool(LineChannel&)>& done,
                 Ms timeout) {
  Deadline end = After(timeout);
  std::vector<pollfd> fds;
  std::vector<LineChannel*> waiting;
  for (;;) {
    fds.clear();
    waiting.clear();
    for (LineChannel* c : chans) {
      if (done(*c) || c->eof() || !c->open()) continue;
      fds.push_back({c->read_fd(), POLLIN, 0});
      waiting.push_back(c);
    }
    int left = MsLeft(end);
    if (waiting.empty() || left <= 0) break;
    int r = poll(fds.data(), fds.size(), std::min(left, 200));
    if (r < 0 && errno != EINTR) break;
    for (size_t i = 0; r > 0 && i < fds.size(); ++i) {
      if (fds[i].revents != 0) waiting[i]->ReadAvailable();
    }
  }
  return size_t(std::count_if(chans.begin(), chans.end(), [&](LineChannel* c) { return done(*c); }));
}

// ---------------------------------------------------------------- StdioChild

StdioChild::StdioChild(std::vector<std::string> args, Ms start_timeout) {
  IgnoreSigpipeOnce();
  std::string bin = BinaryPath();
  std::vector<std::string> argv_s{bin, "--stdio", "--listen", "127.0.0.1:0"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    error_ = std::string("pipe2: ") + std::strerror(errno);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) close(fd);
    }
    return;
  }
  pid_t parent = getpid();
  pid_ = fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    return;
  }
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec. dup2 clears FD_CLOEXEC on 0, 1, 2.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(argv[0], argv.data());
    const char msg[] = "itest: execv failed\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  io_.Attach(out[0], in[1]);
  stderr_fd_ = err[0];
  reader_ = std::thread([this] { ReadStderrLoop(); });

  std::unique_lock lk(mu_);
  bool found = cv_.wait_for(lk, start_timeout, [&] {
    port_ = PortFromLog(stderr_);
    return port_ > 0 || stderr_eof_;
  });
  if (port_ <= 0) {
    error_ = (found ? "mcpfan --stdio exited/closed stderr before logging its port"
                    : "mcpfan --stdio did not log 'listening on 127.0.0.1:PORT' in time") +
             std::string("; binary=") + bin + "; stderr so far:\n" + stderr_;
  }
}

StdioChild::~StdioChild() {
  if (pid_ > 0 && !status_) {
    kill(pid_, SIGTERM);
    if (!WaitExit(Ms(5000))) {
      kill(pid_, SIGKILL);
      int st = 0;
      if (waitpid(pid_, &st, 0) == pid_) status_ = st;
    }
  }
  io_.Close();
  if (reader_.joinable()) reader_.join();
  if (stderr_fd_ >= 0) close(stderr_fd_);
  if (::testing::Test::HasFailure()) {
    std::cerr << "---- mcpfan --stdio stderr (pid " << pid_ << ", " << DescribeStatus() << ") ----\n"
              << Stderr().substr(0, 20000) << "---- end mcpfan stderr ----\n";
    const auto& t = io_.transcript();
    std::cerr << "---- stdout lines received (" << t.size() << ") ----\n";
    for (size_t i = 0; i < t.size() && i < 50; ++i) std::cerr << "  " << t[i].substr(0, 400) << "\n";
    std::cerr << "---- end stdout ----\n";
  }
}

void StdioChild::ReadStderrLoop() {
  char buf[4096];
  for (;;) {
    ssize_t n = read(stderr_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    std::lock_guard lk(mu_);
    if (n <= 0) {
      stderr_eof_ = true;
      cv_.notify_all();
      return;
    }
    stderr_.append(buf, size_t(n));
    cv_.notify_all();
  }
}

bool StdioChild::Signal(int sig) { return pid_ > 0 && !status_ && kill(pid_, sig) == 0; }

bool StdioChild::WaitExit(Ms timeout) {
  if (status_) return true;
  if (pid_ <= 0) return false;
  Deadline end = After(timeout);
  for (;;) {  // bounded by `end`
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = st;
      return true;
    }
    if (r < 0 && errno != EINTR) return false;
    if (Clock::now() >= end) return false;
    std::this_thread::sleep_for(Ms(2));
  }
}

std::string StdioChild::DescribeStatus() const {
  if (!status_) return "running";
  int st = *status_;
  if (WIFEXITED(st)) return "exit " + std::to_string(WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return "signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) + ")";
  return "status " + std::to_string(st);
}

std::string StdioChild::Stderr() const {
  std::lock_guard lk(mu_);
  return stderr_;
}

// ---------------------------------------------------------------- Unix sockets

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/mcpfan-itest-XXXXXX";
  // sun_path holds 107 bytes: fall back to /tmp when $TMPDIR is deep.
  if (tmpl.size() > 70) tmpl = "/tmp/mcpfan-itest-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool ConnectUnix(LineChannel& ch, const std::string& path, Ms timeout, std::string* err) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    SetErr(err, "socket path too long: " + path);
    return false;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Deadline end = After(timeout);
  for (int attempt = 0;; ++attempt) {  // bounded by `end`
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      SetErr(err, std::string("socket: ") + std::strerror(errno));
      return false;
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ch.Attach(fd, fd);
      return true;
    }
    int e = errno;
    close(fd);
    // EAGAIN: the listener's backlog is full; ENOENT/ECONNREFUSED: not (yet) listening.
    bool retry = e == EAGAIN || e == EINTR || e == ENOENT || e == ECONNREFUSED;
    if (!retry || Clock::now() >= end) {
      SetErr(err, "connect " + path + ": " + std::strerror(e) + " (after " + std::to_string(attempt + 1) + " attempts)");
      return false;
    }
    std::this_thread::sleep_for(Ms(e == EAGAIN ? 1 : 10));
  }
}

// ---------------------------------------------------------------- messages

std::string StdioListen(std::string_view id_json, std::string_view notifications_json, std::string_view version) {
  std::string fields = R"("notifications":)";
  fields.append(notifications_json);
  return RpcBody(id_json, "subscriptions/listen", fields, version);
}

std::string StdioCancel(std::string_view id_json) {
  std::string b = R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)";
  b.append(id_json).append(R"(,"_meta":)").append(Envelope(kV2026)).append("}}");
  return b;
}

std::string StdioInitialize(std::string_view id_json, std::string_view version) {
  std::string b = R"({"jsonrpc":"2.0","id":)";
  b.append(id_json).append(R"(,"method":"initialize","params":{"protocolVersion":")");
  b.append(version).append(R"(","capabilities":{},"clientInfo":{"name":"mcpfan-itest","version":"1.0.0"}}})");
  return b;
}

::testing::AssertionResult IsAck(const Json& msg, std::string_view id_json, std::string_view expected_notifications) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "ack " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"id"})) return fail() << "the acknowledgement is a notification (no id)";
  if (msg.GetString({"method"}) != "notifications/subscriptions/acknowledged") {
    return fail() << "want method notifications/subscriptions/acknowledged";
  }
  if (auto m = JsonMatches(msg.Get({"params", "_meta", kSubId}), id_json); !m) return fail() << "subscriptionId: " << m.message();
  if (!expected_notifications.empty()) {
    if (auto m = JsonMatches(msg.Get({"params", "notifications"}), expected_notifications); !m) {
      return fail() << "notifications: " << m.message();
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsCompleteResult(const Json& msg, std::string_view id_json) {
  std::string want = R"({"resultType":"complete","_meta":{")" + std::string(kSubId) + "\":" + std::string(id_json) + "}}";
  return IsResult(msg, id_json, want);
}

::testing::AssertionResult IsResult(const Json& msg, std::string_view id_json, std::string_view result_json) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "reply " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"error"}) || msg.Has({"method"})) return fail() << "want a plain result reply";
  if (auto m = JsonMatches(msg.Get({"id"}), id_json); !m) return fail() << "id: " << m.message();
  if (auto m = JsonMatches(msg.Get({"result"}), result_json); !m) return fail() << "result: " << m.message();
  size_t keys = simdjson::dom::object(msg.root()).size();
  if (keys != 3) return fail() << "want exactly jsonrpc, id, result";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsError(const Json& msg, std::string_view id_json, int64_t code) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "reply " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"result"}) || msg.Has({"method"})) return fail() << "want an error reply";
  bool id_ok = false;
  std::string why;
  for (size_t start = 0; start <= id_json.size();) {
    size_t bar = id_json.find('|', start);
    std::string_view alt = id_json.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    auto m = JsonMatches(msg.Get({"id"}), alt);
    if (m) id_ok = true;
    why = m.message();
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  if (!id_ok) return fail() << "id: want " << id_json << "; " << why;
  auto c = msg.GetInt({"error", "code"});
  if (!c || *c != code) return fail() << "want error.code " << code;
  auto text = msg.GetString({"error", "message"});
  if (!text || text->empty()) return fail() << "want a non-empty error.message";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsPlainNotification(const Json& msg, std::string_view method, std::string_view params_json) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "notification " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"id"})) return fail() << "a notification must not carry an id";
  if (msg.GetString({"method"}) != std::string(method)) return fail() << "want method " << method;
  if (msg.Has({"params", "_meta", kSubId})) return fail() << "a 2025 session notification must not carry a subscriptionId";
  if (auto m = JsonMatches(msg.Get({"params"}), params_json); !m) return fail() << "params not as published: " << m.message();
  size_t keys = simdjson::dom::object(msg.root()).size();
  if (keys != 3) return fail() << "want exactly jsonrpc, method, params";
  return ::testing::AssertionSuccess();
}

}  // namespace itest

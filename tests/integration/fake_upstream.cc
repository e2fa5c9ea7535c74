#include "fake_upstream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

namespace itest {

namespace {

bool ieq(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// Reads until `buf` holds one whole request; false on EOF, error or a 5 s silence.
bool ReadRequest(int fd, std::string& buf, UpstreamRequest& out) {
  for (int guard = 0; guard < 100000; ++guard) {
    std::size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string_view head(buf.data(), end);
      std::size_t line_end = head.find("\r\n");
      std::string_view first = head.substr(0, line_end);
      std::size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
      out = UpstreamRequest{};
      out.method = std::string(first.substr(0, sp1));
      out.target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
      std::size_t len = 0;
      std::size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        std::size_t e = head.find("\r\n", pos);
        if (e == std::string_view::npos) e = head.size();
        std::string_view line = head.substr(pos, e - pos);
        std::size_t colon = line.find(':');
        if (colon != std::string_view::npos) {
          std::string_view v = line.substr(colon + 1);
          while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
          out.headers.push_back({std::string(line.substr(0, colon)), std::string(v)});
          if (ieq(line.substr(0, colon), "content-length")) len = std::stoul(std::string(v));
        }
        pos = e + 2;
      }
      if (buf.size() >= end + 4 + len) {
        out.body = buf.substr(end + 4, len);
        buf.erase(0, end + 4 + len);
        return true;
      }
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return false;
    char tmp[8192];
    ssize_t n = ::read(fd, tmp, sizeof tmp);
    if (n <= 0) return false;
    buf.append(tmp, static_cast<std::size_t>(n));
  }
  return false;
}

}  // namespace

std::optional<std::string> UpstreamRequest::Get(std::string_view name) const {
  for (const auto& h : headers) {
    if (ieq(h.name, name)) return h.value;
  }
  return std::nullopt;
}

void Gate::Open() {
  std::lock_guard lock(mu_);
  open_ = true;
  cv_.notify_all();
}

bool Gate::Wait(Ms timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return open_; });
}

FakeUpstream::FakeUpstream(Handler handler, int port) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // the port of an upstream just gone
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 64) != 0) {
    ADD_FAILURE() << "fake upstream: cannot listen";
    return;
  }
  socklen_t len = sizeof a;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
  accept_ = std::thread([this] {
    while (true) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;  // shut down by the destructor
      std::lock_guard lock(mu_);
      if (release_.load()) {
        ::close(c);
        return;
      }
      open_fds_.push_back(c);
      conns_.emplace_back([this, c] { Serve(c); });
    }
  });
}

FakeUpstream::~FakeUpstream() {
  {
    std::lock_guard lock(mu_);
    release_.store(true);
    cv_.notify_all();
    for (int c : open_fds_) ::shutdown(c, SHUT_RDWR);  // wakes handlers blocked on reads
  }
  ::shutdown(fd_, SHUT_RDWR);
  if (accept_.joinable()) accept_.join();
  for (auto& t : conns_) t.join();
  ::close(fd_);
}

void FakeUpstream::Serve(int fd) {
  std::string buf;
  UpstreamRequest req;
  while (!release_.load() && ReadRequest(fd, buf, req)) {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(req);
      cv_.notify_all();
    }
    if (handler_(fd, req) == Next::Close) break;
  }
  ::close(fd);
}

std::vector<UpstreamRequest> FakeUpstream::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int FakeUpstream::CountBodies(std::string_view needle) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& r : requests_) n += r.body.find(needle) != std::string::npos;
  return n;
}

bool FakeUpstream::WaitRequests(size_t n, Ms timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

bool FakeUpstream::WaitReleased(Ms timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return release_.load(); });
}

bool FakeUpstream::Write(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string FakeUpstream::Answer(int status, std::string_view headers, std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\n";
  out += headers;
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out += body;
  return out;
}

std::string FakeUpstream::Chunk(std::string_view data) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return std::string(size) + std::string(data) + "\r\n";
}

int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string IdOf(const UpstreamRequest& r) {
  Json j(r.body);
  auto id = j.Get({"id"});
  return id ? Dump(*id) : "null";
}

std::string InitializeAnswer(const UpstreamRequest& r, std::string_view sid, std::string_view capabilities) {
  return FakeUpstream::Answer(200, "Content-Type: application/json\r\nMcp-Session-Id: " + std::string(sid) + "\r\n",
                              R"({"jsonrpc":"2.0","id":)" + IdOf(r) +
                                  R"(,"result":{"protocolVersion":"2025-11-25","capabilities":)" +
                                  std::string(capabilities) + R"(,"serverInfo":{"name":"up","version":"1"}}})");
}

ResumableUpstream::ResumableUpstream() {
  up = std::make_unique<FakeUpstream>([this](int fd, const UpstreamRequest& r) {
    if (r.method == "GET") {
      {
        std::lock_guard lock(mu);
        last_event_ids.push_back(r.Get("last-event-id").value_or(""));
      }
      int n = ++gets;
      if (head_gate && !head_gate->Wait(Ms(10000))) return FakeUpstream::Next::Close;
      FakeUpstream::Write(fd,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
      FakeUpstream::Write(
          fd,
          FakeUpstream::Chunk("event: message\nid: up-" + std::to_string(n) +
                              "\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":" +
                              std::to_string(n) + "}}\n\n"));
      up->WaitReleased(Ms(30000));
      return FakeUpstream::Next::Close;
    }
    if (r.body.find("\"initialize\"") != std::string::npos) {
      FakeUpstream::Write(fd, InitializeAnswer(r, "up-s", "{}"));
      return FakeUpstream::Next::Read;
    }
    FakeUpstream::Write(fd, FakeUpstream::Answer(202, "", ""));
    return FakeUpstream::Next::Read;
  });
}

std::vector<std::string> ResumableUpstream::ids() {
  std::lock_guard lock(mu);
  return last_event_ids;
}

}  // namespace itest

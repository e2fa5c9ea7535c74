// A small HTTP/1.1 client over non-blocking loopback sockets. Every wait is a
// poll() with a deadline.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fd_io.h"
#include "harness.h"

namespace itest {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

// ---------------------------------------------------------------- messages

std::optional<std::string> HttpResponse::Get(std::string_view name) const {
  std::string want = Lower(name);
  for (const auto& h : headers) {
    if (h.name == want) return h.value;
  }
  return std::nullopt;
}

bool HttpResponse::ContentTypeIs(std::string_view mime) const {
  auto ct = Get("content-type");
  if (!ct) return false;
  std::string_view v = *ct;
  v = Trim(v.substr(0, v.find(';')));
  return Lower(v) == Lower(mime);
}

std::string BuildRequest(std::string_view method, std::string_view path,
                         const std::vector<Header>& headers, std::string_view body) {
  std::string r;
  r.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: 127.0.0.1\r\n");
  bool has_te = false;
  for (const auto& h : headers) {
    if (Lower(h.name) == "transfer-encoding") has_te = true;
    r.append(h.name).append(": ").append(h.value).append("\r\n");
  }
  if (!has_te && (!body.empty() || method == "POST")) {
    r.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  r.append("\r\n").append(body);
  return r;
}

std::string Chunked(std::string_view body, size_t piece) {
  std::string out;
  char hex[32];
  for (size_t off = 0; off < body.size(); off += piece) {
    size_t n = std::min(piece, body.size() - off);
    std::snprintf(hex, sizeof hex, "%zx\r\n", n);
    out.append(hex).append(body.substr(off, n)).append("\r\n");
  }
  out.append("0\r\n\r\n");
  return out;
}

bool ParseResponseHead(std::string& buf, HttpResponse& out, std::string* err) {
  size_t end = buf.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (buf.size() > 64 * 1024) SetErr(err, "response head larger than 64 KiB");
    return false;
  }
  std::string_view head(buf.data(), end);
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  if (status_line.substr(0, 7) != "HTTP/1." || status_line.size() < 12 || status_line[8] != ' ') {
    SetErr(err, "bad status line: " + std::string(status_line.substr(0, 200)));
    return false;
  }
  out = HttpResponse{};
  out.status = std::atoi(std::string(status_line.substr(9, 3)).c_str());
  if (status_line.size() > 13) out.reason = std::string(status_line.substr(13));
  while (eol != std::string_view::npos) {
    size_t start = eol + 2;
    eol = head.find("\r\n", start);
    std::string_view line = head.substr(start, eol == std::string_view::npos ? std::string_view::npos
                                                                             : eol - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      SetErr(err, "bad header line: " + std::string(line.substr(0, 200)));
      return false;
    }
    out.headers.push_back({Lower(Trim(line.substr(0, colon))), std::string(Trim(line.substr(colon + 1)))});
  }
  auto te = out.Get("transfer-encoding");
  out.chunked = te && Lower(*te).find("chunked") != std::string::npos;
  buf.erase(0, end + 4);
  return true;
}

void ChunkDecoder::Feed(std::string& in, std::string& out) {
  size_t pos = 0;
  for (;;) {
    if (state_ == State::kSize) {
      size_t eol = in.find("\r\n", pos);
      if (eol == std::string::npos) break;
      std::string line = in.substr(pos, eol - pos);
      line = line.substr(0, line.find(';'));  // chunk extensions
      char* endp = nullptr;
      errno = 0;
      unsigned long long n = std::strtoull(line.c_str(), &endp, 16);
      if (line.empty() || errno != 0 || (endp && *endp && *endp != ' ')) {
        state_ = State::kError;
        error_ = "bad chunk size line: '" + line.substr(0, 100) + "'";
        break;
      }
      pos = eol + 2;
      remaining_ = size_t(n);
      state_ = n == 0 ? State::kTrailer : State::kData;
    } else if (state_ == State::kData) {
      size_t take = std::min(remaining_, in.size() - pos);
      out.append(in, pos, take);
      pos += take;
      remaining_ -= take;
      if (remaining_ > 0) break;
      state_ = State::kDataEnd;
    } else if (state_ == State::kDataEnd) {
      if (in.size() - pos < 2) break;
      if (in.compare(pos, 2, "\r\n") != 0) {
        state_ = State::kError;
        error_ = "chunk data not followed by CRLF";
        break;
      }
      pos += 2;
      state_ = State::kSize;
    } else if (state_ == State::kTrailer) {
      size_t eol = in.find("\r\n", pos);
      if (eol == std::string::npos) break;
      bool empty = eol == pos;
      pos = eol + 2;
      if (empty) state_ = State::kDone;
    } else {
      break;  // kDone / kError: leave the rest (pipelined data) alone
    }
  }
  in.erase(0, pos);
}

// ---------------------------------------------------------------- Conn

Conn::~Conn() { Close(); }

Conn::Conn(Conn&& o) noexcept : fd_(o.fd_), rcvbuf_(o.rcvbuf_), eof_(o.eof_), in_(std::move(o.in_)) { o.fd_ = -1; }

Conn& Conn::operator=(Conn&& o) noexcept {
  if (this != &o) {
    Close();
    fd_ = o.fd_;
    rcvbuf_ = o.rcvbuf_;
    eof_ = o.eof_;
    in_ = std::move(o.in_);
    o.fd_ = -1;
  }
  return *this;
}

bool Conn::Connect(int port, Ms timeout, std::string* err) {
  Close();
  eof_ = false;
  in_.clear();
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    SetErr(err, std::string("socket: ") + std::strerror(errno));
    return false;
  }
  if (rcvbuf_ > 0) setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf_, sizeof rcvbuf_);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return true;
  if (errno != EINPROGRESS) {
    SetErr(err, std::string("connect: ") + std::strerror(errno));
    Close();
    return false;
  }
  pollfd p{fd_, POLLOUT, 0};
  Deadline end = After(timeout);
  for (;;) {
    int r = poll(&p, 1, MsLeft(end));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      SetErr(err, r == 0 ? "connect: timed out" : std::string("poll: ") + std::strerror(errno));
      Close();
      return false;
    }
    break;
  }
  int soerr = 0;
  socklen_t len = sizeof soerr;
  getsockopt(fd_, SOL_SOCKET, SO_ERROR, &soerr, &len);
  if (soerr != 0) {
    SetErr(err, std::string("connect: ") + std::strerror(soerr));
    Close();
    return false;
  }
  return true;
}

bool Conn::Send(std::string_view data, Ms timeout, std::string* err) {
  if (fd_ < 0) {
    SetErr(err, "send: not connected");
    return false;
  }
  return WriteAll(fd_, /*socket=*/true, data, After(timeout), "send: timed out", err);
}

bool Conn::SendBytewise(std::string_view data, Ms gap, std::string* err) {
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  data = data.substr(0, 4096);
  for (size_t i = 0; i < data.size(); ++i) {
    if (!Send(data.substr(i, 1), kIo, err)) return false;
    std::this_thread::sleep_for(gap);
  }
  return true;
}

int Conn::ReadSome(Deadline deadline) {
  if (fd_ < 0 || eof_) return 0;
  int r = ReadSomeInto(fd_, in_, deadline);
  if (r == 0) eof_ = true;
  return r;
}

bool Conn::ReadAvailable() {
  if (fd_ < 0 || eof_) return false;
  if (!ReadReadyInto(fd_, in_)) eof_ = true;
  return !eof_;
}

bool Conn::ReadHead(HttpResponse& out, Deadline deadline, std::string* err) {
  for (;;) {
    std::string perr;
    if (ParseResponseHead(in_, out, &perr)) {
      if (out.status >= 100 && out.status < 200) continue;  // interim response
      return true;
    }
    if (!perr.empty()) {
      SetErr(err, perr);
      return false;
    }
    int r = ReadSome(deadline);
    if (r == 0) {
      SetErr(err, in_.empty() ? "connection closed before a response"
                              : "connection closed inside the response head: " + in_.substr(0, 200));
      return false;
    }
    if (r == -1) {
      SetErr(err, "timed out waiting for the response head");
      return false;
    }
    if (r < 0) {
      SetErr(err, std::string("recv: ") + std::strerror(errno));
      return false;
    }
  }
}

bool Conn::ReadBody(HttpResponse& resp, Deadline deadline, std::string* err) {
  if (resp.status == 204 || resp.status == 304) return true;
  if (resp.chunked) {
    ChunkDecoder dec;
    for (;;) {
      dec.Feed(in_, resp.body);
      if (dec.done()) return true;
      if (dec.failed()) {
        SetErr(err, dec.error());
        return false;
      }
      int r = ReadSome(deadline);
      if (r == 0 || r < 0) {
        SetErr(err, r == -1 ? "timed out inside a chunked body" : "connection ended inside a chunked body");
        return false;
      }
    }
  }
  if (auto cl = resp.Get("content-length")) {
    size_t want = size_t(std::strtoull(cl->c_str(), nullptr, 10));
    while (in_.size() < want) {
      int r = ReadSome(deadline);
      if (r == 0 || r < 0) {
        SetErr(err, r == -1 ? "timed out inside the body" : "connection ended inside the body");
        return false;
      }
    }
    resp.body = in_.substr(0, want);
    in_.erase(0, want);
    return true;
  }
  // Delimited by close.
  for (;;) {
    int r = ReadSome(deadline);
    if (r == 0) break;
    if (r < 0) {
      SetErr(err, "timed out reading a close-delimited body");
      return false;
    }
  }
  resp.body = std::move(in_);
  in_.clear();
  return true;
}

std::optional<HttpResponse> Conn::ReadResponse(Ms timeout, std::string* err) {
  Deadline end = After(timeout);
  HttpResponse r;
  if (!ReadHead(r, end, err) || !ReadBody(r, end, err)) return std::nullopt;
  return r;
}

bool Conn::WaitClosed(Ms timeout) {
  Deadline end = After(timeout);
  for (;;) {
    int r = ReadSome(end);
    if (r == 0) return true;
    if (r < 0) return false;
  }
}

void Conn::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void Conn::Reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  Close();
}

void Conn::ShutdownWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

std::optional<HttpResponse> Roundtrip(int port, const std::string& request, Ms timeout,
                                      std::string* err) {
  Conn c;
  if (!c.Connect(port, timeout, err) || !c.Send(request, timeout, err)) return std::nullopt;
  return c.ReadResponse(timeout, err);
}

}  // namespace itest

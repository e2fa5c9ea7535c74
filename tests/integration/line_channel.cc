// LineChannel: newline-framed I/O over non-blocking fds (pipes or one socket), and
// PumpLines (one poll() over many channels).
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "fd_io.h"
#include "stdio_client.h"

namespace itest {

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
  IgnoreSigpipe();
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
  return WriteAll(wfd_, /*socket=*/wfd_ == rfd_, data, After(timeout), "send: timed out (peer not reading)", err);
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
  int r = ReadSomeInto(rfd_, buf_, deadline);
  if (r > 0) Split();
  if (r == 0) eof_ = true;
  return r;
}

bool LineChannel::ReadAvailable() {
  if (rfd_ < 0 || eof_) return false;
  if (!ReadReadyInto(rfd_, buf_)) eof_ = true;
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
    SetErr(err,
           eof_ ? "EOF (peer closed)" + (buf_.empty() ? std::string() : "; unterminated bytes: " + buf_.substr(0, 300))
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
  PollEach(
      chans.size(),
      [&](size_t i) {
        LineChannel& c = *chans[i];
        return done(c) || c.eof() || !c.open() ? -1 : c.read_fd();
      },
      [&](size_t i) { chans[i]->ReadAvailable(); }, After(timeout));
  return size_t(std::count_if(chans.begin(), chans.end(), [&](LineChannel* c) { return done(*c); }));
}

}  // namespace itest

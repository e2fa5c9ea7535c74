#include "control.h"

#include <cstdio>
#include <cstring>

namespace mcpload {

namespace {
constexpr size_t kMaxCommand = 4096;  // a longer line is cut (the driver never sends one)
}

StdinCommands::StdinCommands(uv_loop_t* loop, std::function<void(std::string)> on_line)
    : loop_(loop), on_line_(std::move(on_line)) {}

bool StdinCommands::Start() {
  // A pipe from the driver (subprocess stdin=PIPE). uv_pipe_open also takes a socketpair.
  if (uv_pipe_init(loop_, &pipe_, 0) != 0) return false;
  open_ = true;
  pipe_.data = this;
  if (uv_pipe_open(&pipe_, 0) != 0) return false;
  return uv_read_start(reinterpret_cast<uv_stream_t*>(&pipe_), &StdinCommands::OnAlloc, &StdinCommands::OnRead) == 0;
}

void StdinCommands::Close() {
  if (!open_) return;
  open_ = false;
  uv_close(reinterpret_cast<uv_handle_t*>(&pipe_), nullptr);
}

void StdinCommands::Emit(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void StdinCommands::OnAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* self = static_cast<StdinCommands*>(h->data);
  *buf = uv_buf_init(self->buf_, sizeof self->buf_);
}

void StdinCommands::OnRead(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
  auto* self = static_cast<StdinCommands*>(s->data);
  if (n < 0) {  // EOF or error: the driver is gone, so the run ends
    uv_read_stop(s);
    if (!self->eof_sent_) {
      self->eof_sent_ = true;
      self->on_line_("quit");
    }
    return;
  }
  const char* p = buf->base;
  const char* end = p + n;
  while (p < end) {
    const char* nl = static_cast<const char*>(memchr(p, '\n', size_t(end - p)));
    if (!nl) {
      self->carry_.append(p, std::min(size_t(end - p), kMaxCommand - std::min(kMaxCommand, self->carry_.size())));
      return;
    }
    self->carry_.append(p, size_t(nl - p));
    std::string line;
    line.swap(self->carry_);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) self->on_line_(std::move(line));
    p = nl + 1;
  }
}

}  // namespace mcpload

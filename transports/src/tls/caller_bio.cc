#include "tls/caller_bio.h"

#include <algorithm>

namespace mcpfan::detail::tls {

namespace {

int caller_read(BIO* b, char* buf, int len) {
  auto* io = static_cast<CallerIo*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (io->in_len == 0) {
    BIO_set_retry_read(b);
    return -1;
  }
  std::size_t n = std::min<std::size_t>(io->in_len, static_cast<std::size_t>(len));
  std::copy_n(io->in, n, buf);
  io->in += n;
  io->in_len -= n;
  return static_cast<int>(n);
}

int caller_write(BIO* b, const char* buf, int len) {
  auto* io = static_cast<CallerIo*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (!io->out) {
    BIO_set_retry_write(b);
    return -1;
  }
  io->out->append(buf, static_cast<std::size_t>(len));
  return len;
}

// The state machine flushes after each flight; everything else (pending counts, push/pop) has no meaning here.
long caller_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

int caller_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

}  // namespace

BIO* new_caller_bio(CallerIo* io) {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "mcpfan tls caller");
    if (m) {
      BIO_meth_set_write(m, caller_write);
      BIO_meth_set_read(m, caller_read);
      BIO_meth_set_ctrl(m, caller_ctrl);
      BIO_meth_set_create(m, caller_create);
    }
    return m;
  }();
  if (!method) return nullptr;
  BIO* bio = BIO_new(method);
  if (bio) BIO_set_data(bio, io);
  return bio;
}

}  // namespace mcpfan::detail::tls

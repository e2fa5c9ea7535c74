#pragma once
// The BIO under every Channel's SSL (tls/channel.h): it reads the bytes the caller is feeding and
// appends what the SSL writes to the caller's string, so nothing is copied into a buffer of its
// own and nothing is kept between calls (OpenSSL's memory BIOs keep the largest buffer they ever
// held, for the life of the connection). An empty input is a retry, never EOF: the end of the
// stream is the socket's business, not this room's.
//
// Thread affinity: the BIO_METHOD is made once, thread-safely; each BIO is its Channel's
// (loop-affine). Lifetime: owned by its SSL; the CallerIo it points at is the Channel's member.
#include <openssl/bio.h>

#include <cstddef>
#include <string>

namespace mcpfan::detail::tls {

/** What the BIO reads from and appends to; set by the Channel for the duration of one call. */
struct CallerIo {
  const char* in = nullptr;
  std::size_t in_len = 0;
  std::string* out = nullptr;  // null outside a call: a write then is refused (retry), never lost
};

/** A new BIO over `io` (one reference, for SSL_set_bio as both ends); nullptr on failure. */
BIO* new_caller_bio(CallerIo* io);

}  // namespace mcpfan::detail::tls

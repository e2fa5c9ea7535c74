#pragma once
// What the server and client contexts (tls/context.h) share: an SSL_CTX with the room's floor
// (TLS 1.2, no compression, no renegotiation, released idle buffers, forward-secret AEAD
// ciphers), and an error message that carries OpenSSL's reasons.
//
// Thread affinity: any thread (they touch only what they are given and this thread's error
// queue). Lifetime: the SSL_CTX returned is the caller's (SSL_CTX_free).
#include <openssl/ssl.h>

#include <string>

namespace mcpfan::detail::tls {

/** A new SSL_CTX for `method` with the room's floor; nullptr with `err` set. */
SSL_CTX* new_base_ctx(const SSL_METHOD* method, std::string& err);
/** Sets `err` to "what: reasons" from this thread's error queue (emptied); returns false, for `return set_error()`. */
bool set_error(std::string& err, const std::string& what);

}  // namespace mcpfan::detail::tls

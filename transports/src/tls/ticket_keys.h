#pragma once
// The session ticket keys of one ServerContext (TLS 1.2 and 1.3 tickets alike): a current key
// that encrypts new tickets and the previous one, which still decrypts (and asks for a renewed
// ticket). They live outside any SSL_CTX so that a reload() does not forget them and clients
// keep resuming across it. Keys come from RAND_bytes and never leave the process.
//
// Rotation is lazy: the ticket callback rotates when the period has passed since the last
// rotation, so an idle server does no work. With one previous key kept, a ticket stays
// decryptable for at least one period after it was issued, which is why the context sets the
// tickets' lifetime to that period.
//
// Thread affinity: thread-safe (the callback runs on every worker's handshakes); a mutex held
// for a key lookup or a rotation, once per ticket. Lifetime: a member of ServerShared.
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace mcpfan::detail::tls {

class TicketKeys {
 public:
  TicketKeys(std::uint64_t period_s, std::atomic<std::uint64_t>& rotations);

  /**
   * SSL_CTX_set_tlsext_ticket_key_evp_cb's contract. Encrypting: 1, or 0 for no ticket. Decrypting: 1 (the current
   * key), 2 (the previous key: use it and issue a new ticket), 0 (unknown key: a full handshake). -1: an error.
   */
  int crypt(unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac, int enc);
  void rotate_now();

 private:
  struct Key {
    std::array<unsigned char, 16> name;
    std::array<unsigned char, 32> aes;
    std::array<unsigned char, 32> hmac;
  };
  static bool make_key(Key& k);
  void rotate_locked();

  std::mutex mu_;
  Key current_{};
  Key previous_{};
  bool has_previous_ = false;
  std::chrono::steady_clock::duration period_;
  std::chrono::steady_clock::time_point rotated_at_;
  std::atomic<std::uint64_t>& rotations_;
};

}  // namespace mcpfan::detail::tls

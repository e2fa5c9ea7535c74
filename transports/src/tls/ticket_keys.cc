#include "tls/ticket_keys.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>

namespace mcpfan::detail::tls {

TicketKeys::TicketKeys(std::uint64_t period_s, std::atomic<std::uint64_t>& rotations)
    : period_(std::chrono::seconds(std::max<std::uint64_t>(period_s, 1))),
      rotated_at_(std::chrono::steady_clock::now()),
      rotations_(rotations) {
  // Without randomness there is no ticket key: the name stays zero and crypt() refuses to encrypt with it.
  if (!make_key(current_)) current_.name.fill(0);
}

bool TicketKeys::make_key(Key& k) {
  return RAND_bytes(k.name.data(), k.name.size()) == 1 && RAND_bytes(k.aes.data(), k.aes.size()) == 1 &&
         RAND_bytes(k.hmac.data(), k.hmac.size()) == 1;
}

void TicketKeys::rotate_locked() {
  Key next;
  if (!make_key(next)) return;  // keep the current key rather than have none
  previous_ = current_;
  has_previous_ = true;
  current_ = next;
  OPENSSL_cleanse(&next, sizeof next);
  rotated_at_ = std::chrono::steady_clock::now();
  rotations_.fetch_add(1, std::memory_order_relaxed);
}

void TicketKeys::rotate_now() {
  std::lock_guard lock(mu_);
  rotate_locked();
}

namespace {

bool init_mac(EVP_MAC_CTX* mac, const std::array<unsigned char, 32>& key) {
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, const_cast<unsigned char*>(key.data()), key.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}

}  // namespace

int TicketKeys::crypt(unsigned char key_name[16], unsigned char* iv, EVP_CIPHER_CTX* cipher, EVP_MAC_CTX* mac,
                      int enc) {
  std::lock_guard lock(mu_);
  if (std::chrono::steady_clock::now() - rotated_at_ >= period_) rotate_locked();
  if (enc) {
    // No key or no randomness: 0 sends no ticket (a later full handshake) rather than failing this one.
    static constexpr std::array<unsigned char, 16> kZero{};
    if (current_.name == kZero) return 0;
    if (RAND_bytes(iv, EVP_MAX_IV_LENGTH) != 1) return 0;
    std::copy(current_.name.begin(), current_.name.end(), key_name);
    if (EVP_EncryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, current_.aes.data(), iv) != 1) return -1;
    return init_mac(mac, current_.hmac) ? 1 : -1;
  }
  const Key* k = nullptr;
  if (std::equal(current_.name.begin(), current_.name.end(), key_name)) {
    k = &current_;
  } else if (has_previous_ && std::equal(previous_.name.begin(), previous_.name.end(), key_name)) {
    k = &previous_;
  } else {
    return 0;  // a key rotated out (or another server's): a full handshake, not an error
  }
  if (EVP_DecryptInit_ex(cipher, EVP_aes_256_cbc(), nullptr, k->aes.data(), iv) != 1) return -1;
  if (!init_mac(mac, k->hmac)) return -1;
  return k == &current_ ? 1 : 2;
}

}  // namespace mcpfan::detail::tls

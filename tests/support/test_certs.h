#pragma once
// Certificates for TLS tests, made by the openssl CLI into a directory the caller owns (a
// FileDir): a CA, server certificates for localhost and 127.0.0.1 signed by it, a client
// certificate signed by it, and the failure cases (a self-signed client, an expired server
// certificate, a key that matches nothing). P-256 keys: the whole set takes well under a second.
#include <string>

namespace mcpfan::testing {

struct TestCerts {
  bool ok = false;
  std::string error;  // the failing command and the tail of its output when !ok
  std::string dir;
  std::string ca_cert, ca_key;                      // the CA (also the client CA)
  std::string server_cert, server_key;              // CN mcpfan-test-server; SAN DNS:localhost, IP:127.0.0.1
  std::string server2_cert, server2_key;            // CN mcpfan-test-server-2, same SAN: the reload's new pair
  std::string client_cert, client_key;              // CN mcpfan-test-client, signed by the CA
  std::string rogue_client_cert, rogue_client_key;  // CN mcpfan-rogue-client, self-signed
  std::string expired_cert, expired_key;            // CN mcpfan-expired, same SAN, signed by the CA, expired in 2020
  std::string mismatched_key;                       // a key that belongs to no certificate here
};

/** Makes the set in `dir` (an existing directory). Check ok. */
TestCerts make_test_certs(const std::string& dir);

}  // namespace mcpfan::testing

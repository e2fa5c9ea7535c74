#include "support/test_certs.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mcpfan::testing {

namespace {

// Runs one openssl command in `dir`; on failure records it and its output in certs.error.
bool openssl_in(TestCerts& certs, const std::string& args) {
  std::string cmd = "cd '" + certs.dir + "' && openssl " + args + " >openssl.log 2>&1";
  if (std::system(cmd.c_str()) == 0) return true;
  std::ifstream log(certs.dir + "/openssl.log");
  std::stringstream text;
  text << log.rdbuf();
  certs.error = "openssl " + args + ":\n" + text.str();
  return false;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool new_key(TestCerts& certs, const std::string& name) {
  return openssl_in(certs, "genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + name);
}

// A CSR for `cn` signed by the CA with the extensions of section `ext` in ext.cnf.
bool ca_signed(TestCerts& certs, const std::string& base, const std::string& cn, const std::string& ext) {
  return new_key(certs, base + ".key") &&
         openssl_in(certs, "req -new -key " + base + ".key -subj /CN=" + cn + " -out " + base + ".csr") &&
         openssl_in(certs, "x509 -req -in " + base +
                               ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 "
                               "-sha256 -extfile ext.cnf -extensions " +
                               ext + " -out " + base + ".pem");
}

}  // namespace

TestCerts make_test_certs(const std::string& dir) {
  TestCerts c;
  c.dir = dir;
  auto at = [&](const std::string& name) { return dir + "/" + name; };
  write_text(at("ext.cnf"),
             "[server]\n"
             "basicConstraints = critical,CA:FALSE\n"
             "keyUsage = critical,digitalSignature\n"
             "extendedKeyUsage = serverAuth\n"
             "subjectAltName = DNS:localhost,IP:127.0.0.1\n"
             "[client]\n"
             "basicConstraints = critical,CA:FALSE\n"
             "keyUsage = critical,digitalSignature\n"
             "extendedKeyUsage = clientAuth\n"
             "[ca_ext]\n"
             "basicConstraints = critical,CA:TRUE\n"
             "keyUsage = critical,keyCertSign,cRLSign\n"
             "subjectKeyIdentifier = hash\n");
  // `openssl ca` is the one way to back-date a certificate (x509 -days refuses a negative count).
  write_text(at("ca.cnf"),
             "[ca]\ndefault_ca = test_ca\n"
             "[test_ca]\ndatabase = index.txt\nnew_certs_dir = .\nserial = ca.srl\ndefault_md = sha256\n"
             "policy = any\nunique_subject = no\n"
             "[any]\ncommonName = supplied\n");
  write_text(at("index.txt"), "");
  bool ok = new_key(c, "ca.key") && openssl_in(c, "req -new -key ca.key -subj '/CN=mcpfan test CA' -out ca.csr") &&
            openssl_in(c,
                       "x509 -req -in ca.csr -signkey ca.key -days 3650 -sha256 -extfile ext.cnf "
                       "-extensions ca_ext -out ca.pem") &&
            ca_signed(c, "server", "mcpfan-test-server", "server") &&
            ca_signed(c, "server2", "mcpfan-test-server-2", "server") &&
            ca_signed(c, "client", "mcpfan-test-client", "client") && new_key(c, "rogue.key") &&
            openssl_in(c, "req -new -x509 -key rogue.key -subj /CN=mcpfan-rogue-client -days 3650 -out rogue.pem") &&
            new_key(c, "expired.key") &&
            openssl_in(c, "req -new -key expired.key -subj /CN=mcpfan-expired -out expired.csr") &&
            openssl_in(c,
                       "ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem "
                       "-startdate 20200101000000Z -enddate 20200102000000Z -extfile ext.cnf -extensions server "
                       "-notext") &&
            new_key(c, "mismatched.key");
  if (!ok) return c;
  c.ok = true;
  c.ca_cert = at("ca.pem");
  c.ca_key = at("ca.key");
  c.server_cert = at("server.pem");
  c.server_key = at("server.key");
  c.server2_cert = at("server2.pem");
  c.server2_key = at("server2.key");
  c.client_cert = at("client.pem");
  c.client_key = at("client.key");
  c.rogue_client_cert = at("rogue.pem");
  c.rogue_client_key = at("rogue.key");
  c.expired_cert = at("expired.pem");
  c.expired_key = at("expired.key");
  c.mismatched_key = at("mismatched.key");
  return c;
}

}  // namespace mcpfan::testing

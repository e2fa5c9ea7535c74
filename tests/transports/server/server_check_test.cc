// Server::check() (the program's --check-config) and the checks start() shares with it: a
// listener that is not on loopback needs authentication for what it serves unless
// ServerConfig::listen.insecure, and the message names what is missing; key files, the NATS files
// and URLs, the Unix socket path are read and judged without binding or connecting anything.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "mcpfan/transport/server.h"
#include "support/file_dir.h"

namespace {

using Dir = mcpfan::testing::FileDir;

const std::string kSecret(40, 's');                       // HS256 needs at least 32 bytes
const std::string kKeys = std::string(24, 'k') + " *\n";  // a publisher key for any tenant

std::string check_error(const mcpfan::ServerConfig& c) {
  auto r = mcpfan::Server::check(c);
  if (r) return "";
  EXPECT_EQ(r.error().code, -32602) << r.error().message;
  return r.error().message;
}

std::string start_error(mcpfan::ServerConfig c) {
  c.listen.port = 0;
  c.workers = 1;
  mcpfan::Server server(c);
  auto started = server.start();
  if (started) {
    (void)server.stop();
    return "";
  }
  return started.error().message;
}

mcpfan::ServerConfig open_config() {
  mcpfan::ServerConfig c;
  c.listen.host = "0.0.0.0";
  c.listen.port = 0;
  c.workers = 1;
  return c;
}

TEST(ServerCheck, OpenListenerWithoutAuthIsRefusedByStartAndCheck) {
  mcpfan::ServerConfig c = open_config();
  std::string err = start_error(c);
  EXPECT_NE(err.find("refusing --listen on 0.0.0.0 without authentication (--jwt-secret-file, "
                     "--jwt-public-key-file or --oauth-issuer, and --publish-keys-file)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ServerConfig::listen.insecure"), std::string::npos) << err;
  EXPECT_EQ(check_error(c), err);
}

TEST(ServerCheck, ClientTokensAloneNamePublisherKeysAsMissing) {
  Dir d;
  mcpfan::ServerConfig c = open_config();
  c.auth.jwt_secret_file = d.file("secret", kSecret);
  std::string err = start_error(c);
  EXPECT_NE(err.find("without authentication (--publish-keys-file): client tokens are configured"), std::string::npos)
      << err;
  // Publisher keys alone: the clients' part is missing.
  c.auth.jwt_secret_file.clear();
  c.auth.publish_keys_file = d.file("keys", kKeys);
  err = check_error(c);
  EXPECT_NE(
      err.find("without authentication (--jwt-secret-file, --jwt-public-key-file or --oauth-issuer): publisher keys "
               "are configured"),
      std::string::npos)
      << err;
  // Both: served.
  c.auth.jwt_secret_file = d.file("secret", kSecret);
  EXPECT_EQ(check_error(c), "");
  EXPECT_EQ(start_error(c), "");
}

TEST(ServerCheck, InsecureServesAnOpenListener) {
  mcpfan::ServerConfig c = open_config();
  c.listen.insecure = true;
  EXPECT_EQ(check_error(c), "");
  EXPECT_EQ(start_error(c), "");
}

TEST(ServerCheck, EachListenerNeedsWhatItServes) {
  Dir d;
  mcpfan::ServerConfig c;
  c.listen.publish_host = "0.0.0.0";
  std::string err = check_error(c);
  EXPECT_NE(err.find("refusing --publish-listen on 0.0.0.0 without authentication (--publish-keys-file)"),
            std::string::npos)
      << err;
  // The public listener without publishing needs client authentication only.
  c = open_config();
  c.listen.publish_host = "127.0.0.1";
  err = check_error(c);
  EXPECT_NE(
      err.find("refusing --listen on 0.0.0.0 without authentication (--jwt-secret-file, --jwt-public-key-file or "
               "--oauth-issuer)"),
      std::string::npos)
      << err;
  c.auth.jwt_secret_file = d.file("secret", kSecret);
  EXPECT_EQ(check_error(c), "");
}

TEST(ServerCheck, LoopbackAddressesNeedNoAuth) {
  for (const char* host : {"127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"}) {
    mcpfan::ServerConfig c;
    c.listen.host = host;
    EXPECT_EQ(check_error(c), "") << host;
  }
  mcpfan::ServerConfig c;
  c.listen.host = "::";
  EXPECT_NE(check_error(c).find("refusing --listen on ::"), std::string::npos);
}

TEST(ServerCheck, TheHostsOwnSocketIsJudgedByItsAddress) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  mcpfan::ServerConfig c;  // host stays 127.0.0.1: the socket's address is what clients reach
  c.listen.listen_fd = fd;
  EXPECT_NE(check_error(c).find("refusing ServerConfig::listen.listen_fd on 0.0.0.0:"), std::string::npos)
      << check_error(c);
  c.listen.insecure = true;
  EXPECT_EQ(check_error(c), "");
  ::close(fd);
}

TEST(ServerCheck, BindsNothing) {
  // A port another socket holds: start() fails with "address in use", check() does not see it
  // (it is run next to the live server before a reload).
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  mcpfan::ServerConfig c;
  c.listen.port = ntohs(a.sin_port);
  c.workers = 1;
  auto checked = mcpfan::Server::check(c);
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_NE(checked.value().find("publisher keys: 0"), std::string::npos) << checked.value();
  mcpfan::Server server(c);
  auto started = server.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("address in use"), std::string::npos) << started.error().message;
  ::close(fd);
}

TEST(ServerCheck, KeyFilesAreReadAndNamedByFlag) {
  Dir d;
  mcpfan::ServerConfig c;
  c.auth.jwt_secret_file = d.file("short", "too short\n");
  std::string err = check_error(c);
  EXPECT_EQ(err.rfind("--jwt-secret-file: secret file " + c.auth.jwt_secret_file + ": 9 bytes", 0), 0u) << err;
  c.auth.jwt_secret_file = d.file("secret", kSecret);
  c.auth.jwt_public_key_file = d.file("pub.pem", "not a key\n");
  err = check_error(c);
  EXPECT_EQ(err.rfind("--jwt-public-key-file: public key file", 0), 0u) << err;
  c.auth.jwt_public_key_file.clear();
  c.auth.publish_keys_file = d.path() + "/missing";
  err = check_error(c);
  EXPECT_EQ(err.rfind("--publish-keys-file: ", 0), 0u) << err;
  EXPECT_NE(err.find("missing"), std::string::npos) << err;
  c.auth.publish_keys_file = d.file("keys", kKeys);
  auto ok = mcpfan::Server::check(c);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_NE(ok.value().find("client token algorithms: HS256; publisher keys: 1"), std::string::npos) << ok.value();
}

#if MCPFAN_WITH_NATS
TEST(ServerCheck, NatsSettingsAreJudgedWithoutConnecting) {
  Dir d;
  mcpfan::ServerConfig c;
  c.nats.urls = "nats://127.0.0.1:1";  // nothing listens there: check() does not try
  EXPECT_EQ(check_error(c), "");
  c.nats.urls = "nats://127.0.0.1:99999";
  EXPECT_NE(check_error(c).find("--nats: \"nats://127.0.0.1:99999\": the port must be 1..65535"), std::string::npos);
  c.nats.urls = "http://127.0.0.1:4222";
  EXPECT_NE(check_error(c).find("the scheme must be nats:// or tls://"), std::string::npos);
  c.nats.urls = " , ";
  EXPECT_NE(check_error(c).find("--nats"), std::string::npos);
  c.nats.urls = "nats://127.0.0.1:4222";
  c.nats.prefix = "a b";
  EXPECT_EQ(check_error(c).rfind("--nats-prefix: ", 0), 0u) << check_error(c);
  c.nats.prefix = "mcpfan";
  c.nats.heartbeat_ms = 20;  // every node hears every other's: below 50 ms they would cost more than they tell
  EXPECT_EQ(check_error(c), "--nats-heartbeat-ms: 20 is below 50 ms; use 0 (off) or at least 50");
  c.nats.heartbeat_ms = 0;
  EXPECT_EQ(check_error(c), "");
  c.nats.heartbeat_ms = 50;
  EXPECT_EQ(check_error(c), "");
  c.nats.creds_file = d.path() + "/none.creds";
  EXPECT_EQ(check_error(c).rfind("--nats-creds " + c.nats.creds_file + ": ", 0), 0u) << check_error(c);
  c.nats.creds_file.clear();
  c.nats.tls_ca_file = d.file("ca.pem", "not a certificate\n");
  EXPECT_NE(check_error(c).find("--nats-tls-ca " + c.nats.tls_ca_file + ": no PEM certificate"), std::string::npos)
      << check_error(c);
}
#else
// Built without the NATS backplane (MCPFAN_WITH_NATS=OFF): any --nats is a configuration
// error, from check() and from start() (which runs the same checks before it binds).
TEST(ServerCheck, NatsIsRefusedByABuildWithoutIt) {
  mcpfan::ServerConfig c;
  c.nats.urls = "nats://127.0.0.1:4222";
  const std::string why = "--nats: this mcpfan was built without NATS support (MCPFAN_WITH_NATS=OFF)";
  EXPECT_EQ(check_error(c), why);
  EXPECT_EQ(start_error(c), why);
  c.nats.urls.clear();
  EXPECT_EQ(check_error(c), "");
}
#endif

TEST(ServerCheck, UnixPathIsJudgedWithoutBinding) {
  Dir d;
  mcpfan::ServerConfig c;
  c.listen.unix_path = d.path() + "/no-such-dir/mcpfan.sock";
  EXPECT_EQ(check_error(c).rfind("--unix " + c.listen.unix_path + ": directory ", 0), 0u) << check_error(c);
  c.listen.unix_path = d.file("plain", "x");
  EXPECT_NE(check_error(c).find("exists and is not a socket"), std::string::npos) << check_error(c);
  c.listen.unix_path = d.path() + "/mcpfan.sock";
  EXPECT_EQ(check_error(c), "");
  EXPECT_NE(::access(c.listen.unix_path.c_str(), F_OK), 0) << "check() created the socket";
}

}  // namespace

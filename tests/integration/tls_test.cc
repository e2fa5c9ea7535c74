// TLS on the listeners, against the real mcpfan and real clients (curl, openssl s_client), with
// certificates the test makes with the openssl CLI (tests/support/test_certs.h): ALPN h2 and
// http/1.1, a listen over h2 in TLS, SIGHUP reloading the certificate without dropping a
// stream (and refusing a bad one), session resumption, stalled and garbage handshakes.
// Operator paths (publish, metrics) stay on a plaintext --publish-listen.
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "harness.h"
#include "stdio_client.h"
#include "support/test_certs.h"
#include "test_helpers.h"

namespace itest {
namespace {

struct TlsServer {
  TempDir dir;
  mcpfan::testing::TestCerts certs = mcpfan::testing::make_test_certs(dir.path());
  std::string cert = dir.path() + "/live-cert.pem";
  std::string key = dir.path() + "/live-key.pem";
  std::unique_ptr<ServerProcess> srv;
  int publish_port = 0;

  explicit TlsServer(std::vector<std::string> extra = {}) {
    if (!certs.ok) return;
    std::filesystem::copy_file(certs.server_cert, cert);
    std::filesystem::copy_file(certs.server_key, key);
    std::vector<std::string> args{"--tls-cert", cert, "--tls-key", key, "--publish-listen", "127.0.0.1:0"};
    args.insert(args.end(), extra.begin(), extra.end());
    srv = std::make_unique<ServerProcess>(args);
    if (srv->ok()) publish_port = PublishPort(*srv);
  }
  ::testing::AssertionResult ok() const {
    if (!certs.ok) return ::testing::AssertionFailure() << certs.error;
    if (!srv->ok()) return ::testing::AssertionFailure() << srv->error();
    if (publish_port <= 0) return ::testing::AssertionFailure() << "no publish listener";
    return ::testing::AssertionSuccess();
  }
  std::string url(std::string_view path) const {
    return "https://localhost:" + std::to_string(srv->port()) + std::string(path);
  }
  std::string curl(std::string_view flags, std::string_view path) const {
    return Sh("curl -sS --max-time 10 --cacert " + certs.ca_cert + " " + std::string(flags) + " " + url(path) +
              " 2>&1");
  }
  // The subject of the certificate a fresh handshake gets.
  std::string served_subject() const {
    return Sh("timeout 10 openssl s_client -connect 127.0.0.1:" + std::to_string(srv->port()) +
              " -servername localhost -CAfile " + certs.ca_cert +
              " </dev/null 2>/dev/null | openssl x509 -noout -subject 2>&1");
  }
};

TEST(Tls, CurlNegotiatesH2AndHttp11ByAlpn) {
  TlsServer t;
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.curl("-w ' %{http_version}'", "/livez"), "ok\n 2");
  EXPECT_EQ(t.curl("--http1.1 -w ' %{http_version}'", "/livez"), "ok\n 1.1");
  // The operator paths answer on their own listener only (404 here), over TLS as well.
  EXPECT_EQ(t.curl("-o /dev/null -w '%{http_code}'", "/metrics"), "404");
  EXPECT_TRUE(PollMetric(t.publish_port, "mcpfan_tls_handshakes_total", [](double v) { return v >= 3; }));
}

TEST(Tls, NoH2OffersOnlyHttp11) {
  TlsServer t({"--no-h2"});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.curl("--http2 -w ' %{http_version}'", "/livez"), "ok\n 1.1");
}

// A listen over h2 in TLS (curl --http2 -N) gets a publish, and its final result when the
// server stops; a SIGHUP with a new certificate meanwhile drops nothing, and the next
// handshake is served the new certificate.
TEST(Tls, ListenOverH2SurvivesACertificateReload) {
  TlsServer t;
  ASSERT_TRUE(t.ok());
  std::string out_file = t.dir.path() + "/listen.out";
  std::string body =
      RpcBody(R"("tls")", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})", kV2026);
  std::string body_file = t.dir.path() + "/listen.json";
  std::ofstream(body_file) << body;
  ChildProcess curl;
  ASSERT_TRUE(curl.Spawn({"/bin/sh", "-c",
                          "exec curl -sS -N --http2 --max-time 60 --cacert " + t.certs.ca_cert +
                              " -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'"
                              " -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: subscriptions/listen'"
                              " --data-binary @" +
                              body_file + " " + t.url("/mcp") + " > " + out_file}))
      << curl.error();
  auto out = [&] {
    std::ifstream in(out_file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  ASSERT_TRUE(PollMetricEq(t.publish_port, "mcpfan_listen_streams_open", 1));
  EXPECT_NE(t.served_subject().find("mcpfan-test-server"), std::string::npos);

  // The new pair replaces the files; SIGHUP reads them.
  std::filesystem::copy_file(t.certs.server2_cert, t.cert, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(t.certs.server2_key, t.key, std::filesystem::copy_options::overwrite_existing);
  t.srv->Signal(SIGHUP);
  ASSERT_TRUE(PollMetricEq(t.publish_port, "mcpfan_tls_reloads_total", 1));
  EXPECT_NE(t.served_subject().find("mcpfan-test-server-2"), std::string::npos);

  // A bad key: the reload is refused, says why, and the running certificate stays.
  std::filesystem::copy_file(t.certs.mismatched_key, t.key, std::filesystem::copy_options::overwrite_existing);
  t.srv->Signal(SIGHUP);
  ASSERT_TRUE(PollMetricEq(t.publish_port, "mcpfan_tls_reload_failures_total", 1));
  EXPECT_TRUE(t.srv->WaitForStderr("--tls-cert", kIo)) << t.srv->Stderr();
  EXPECT_NE(t.served_subject().find("mcpfan-test-server-2"), std::string::npos);

  // The stream opened before both reloads still delivers.
  ASSERT_TRUE(PublishOk(t.publish_port, R"([{"method":"notifications/tools/list_changed"}])"));
  Deadline end = After(Ms(10000));
  while (out().find("notifications/tools/list_changed") == std::string::npos && Clock::now() < end) {
    std::this_thread::sleep_for(Ms(20));  // the file fills as curl reads: bounded by `end`
  }
  EXPECT_NE(out().find("notifications/tools/list_changed"), std::string::npos) << out();
  t.srv->Signal(SIGTERM);
  EXPECT_TRUE(curl.WaitExit(kExitBound));
  EXPECT_EQ(curl.DescribeStatus(), "exit 0");
  EXPECT_NE(out().find(R"("resultType":"complete")"), std::string::npos) << out();
}

TEST(Tls, ASessionTicketResumes) {
  TlsServer t;
  ASSERT_TRUE(t.ok());
  std::string sess = t.dir.path() + "/sess.pem";
  std::string base = "timeout 10 openssl s_client -connect 127.0.0.1:" + std::to_string(t.srv->port()) +
                     " -servername localhost -CAfile " + t.certs.ca_cert;
  // TLS 1.3 tickets arrive after the handshake: -ign_eof with a short sleep on stdin lets s_client read them.
  Sh("(sleep 0.5) | " + base + " -sess_out " + sess + " >/dev/null 2>&1");
  std::string second = Sh("(sleep 0.5) | " + base + " -sess_in " + sess + " 2>&1");
  EXPECT_NE(second.find("Reused, TLSv1.3"), std::string::npos) << second.substr(0, 2000);
  EXPECT_TRUE(PollMetric(t.publish_port, "mcpfan_tls_resumed_total", [](double v) { return v >= 1; }));
}

TEST(Tls, AStalledHandshakeIsClosedAndCounted) {
  TlsServer t({"--tls-handshake-timeout-ms", "200"});
  ASSERT_TRUE(t.ok());
  Conn c;
  ASSERT_TRUE(c.Connect(t.srv->port()));
  EXPECT_TRUE(c.WaitClosed(Ms(10000)));  // nothing sent: the handshake never begins
  EXPECT_TRUE(PollMetric(t.publish_port, R"(mcpfan_limit_hits_total{limit="tls_handshake_timeout"})",
                         [](double v) { return v >= 1; }));
}

TEST(Tls, PlaintextOnATlsListenerIsAFailedHandshake) {
  TlsServer t;
  ASSERT_TRUE(t.ok());
  Conn c;
  ASSERT_TRUE(c.Connect(t.srv->port()));
  ASSERT_TRUE(c.Send("GET /livez HTTP/1.1\r\nHost: localhost\r\n\r\n"));
  EXPECT_TRUE(c.WaitClosed(Ms(10000)));
  EXPECT_TRUE(PollMetric(t.publish_port, "mcpfan_tls_handshake_failures_total", [](double v) { return v >= 1; }));
  // The server goes on.
  EXPECT_EQ(t.curl("", "/livez"), "ok\n");
}

// --tls-client-ca: a publisher presenting a certificate the CA signed, named by a "cert:NAME
// TENANT" line of the keys file, publishes to that tenant without a key; a self-signed one or
// none is refused as a missing key is.
TEST(Tls, AClientCertificateAuthenticatesAPublisher) {
  TempDir dir;
  auto certs = mcpfan::testing::make_test_certs(dir.path());
  ASSERT_TRUE(certs.ok) << certs.error;
  std::string keys = dir.path() + "/keys";
  std::ofstream(keys) << "cert:mcpfan-test-client tenant-a\n" << std::string(24, 'k') << " *\n";
  ServerProcess srv({"--publish-listen", "127.0.0.1:0", "--publish-tls-cert", certs.server_cert, "--publish-tls-key",
                     certs.server_key, "--tls-client-ca", certs.ca_cert, "--publish-keys-file", keys});
  ASSERT_TRUE(srv.ok()) << srv.error();
  int port = PublishPort(srv);
  ASSERT_GT(port, 0);
  auto publish = [&](std::string_view client, std::string_view body) {
    return Sh("curl -sS --max-time 10 --cacert " + certs.ca_cert + " " + std::string(client) +
              " -H 'Content-Type: application/json' -o /dev/null -w '%{http_code}' -d '" + std::string(body) +
              "' https://localhost:" + std::to_string(port) + "/v1/publish 2>&1");
  };
  const std::string mine = "--cert " + certs.client_cert + " --key " + certs.client_key;
  const std::string rogue = "--cert " + certs.rogue_client_cert + " --key " + certs.rogue_client_key;
  EXPECT_EQ(publish(mine, R"({"method":"notifications/tools/list_changed"})"), "202");
  EXPECT_EQ(publish(mine, R"({"method":"notifications/tools/list_changed","tenant":"tenant-b"})"), "403");
  EXPECT_EQ(publish("", R"({"method":"notifications/tools/list_changed"})"), "401");
  EXPECT_EQ(publish(rogue, R"({"method":"notifications/tools/list_changed"})"), "401");
  // The key still works beside it.
  EXPECT_EQ(publish("-H 'Authorization: Bearer " + std::string(24, 'k') + "'",
                    R"({"method":"notifications/tools/list_changed"})"),
            "202");
}

}  // namespace
}  // namespace itest

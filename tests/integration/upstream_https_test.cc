// --upstream https://... (docs/protocol.md "Front proxy"): the front mcpfan speaks TLS to its
// upstream, trusting --upstream-ca-file (or the system's roots), with SNI and the certificate
// checked for the upstream's name. The upstream here is a second real mcpfan serving TLS with a
// certificate the test makes (tests/support/test_certs.h): it answers the lists itself, so what
// the front forwards comes back from across the TLS connection.
#include <filesystem>

#include "harness.h"
#include "stdio_client.h"
#include "support/test_certs.h"
#include "test_helpers.h"

namespace itest {
namespace {

std::string ToolsList(std::string_view id_json) {
  return McpPost(RpcBody(id_json, "tools/list", {}), McpHeaders(kV2026, "tools/list"));
}

struct HttpsUpstream {
  TempDir dir;
  mcpfan::testing::TestCerts certs = mcpfan::testing::make_test_certs(dir.path());
  std::unique_ptr<ServerProcess> srv;
  int metrics_port = 0;

  // `client_pair`: serve the client certificate (CN mcpfan-test-client, no name of this host).
  explicit HttpsUpstream(bool client_pair = false) {
    if (!certs.ok) return;
    srv = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--tls-cert", client_pair ? certs.client_cert : certs.server_cert, "--tls-key",
                                 client_pair ? certs.client_key : certs.server_key, "--publish-listen", "127.0.0.1:0"});
    if (srv->ok()) metrics_port = PublishPort(*srv);
  }
  ::testing::AssertionResult ok() const {
    if (!certs.ok) return ::testing::AssertionFailure() << certs.error;
    if (!srv->ok()) return ::testing::AssertionFailure() << srv->error();
    return ::testing::AssertionSuccess();
  }
  std::string url(std::string_view host) const {
    return "https://" + std::string(host) + ":" + std::to_string(srv->port()) + "/mcp";
  }
};

TEST(UpstreamHttps, RequestsAreForwardedOverTlsAndConnectionsReused) {
  HttpsUpstream up;
  ASSERT_TRUE(up.ok());
  ServerProcess front({"--workers", "1", "--upstream", up.url("localhost"), "--upstream-ca-file", up.certs.ca_cert});
  ASSERT_TRUE(front.ok()) << front.error();
  for (const char* id : {"1", "2", "3"}) {
    RpcReply r = McpCall(front.port(), ToolsList(id));
    ASSERT_EQ(r.http.status, 200) << r.http.body << front.Stderr();
    EXPECT_NE(r.http.body.find(R"("tools":[])"), std::string::npos) << r.http.body;
  }
  EXPECT_EQ(ReadMetric(front.port(), "mcpfan_upstream_requests_total").value_or(-1), 3);
  // Pooled: one TLS connection carried the three (the upstream counts its handshakes).
  EXPECT_EQ(ReadMetric(front.port(), "mcpfan_upstream_connects_total").value_or(-1), 1);
  EXPECT_EQ(ReadMetric(up.metrics_port, "mcpfan_tls_handshakes_total").value_or(-1), 1);
}

TEST(UpstreamHttps, AnUntrustedCertificateIs502NamingTheProblem) {
  HttpsUpstream up;
  ASSERT_TRUE(up.ok());
  // No --upstream-ca-file: the system's roots do not know the test's CA.
  ServerProcess front({"--workers", "1", "--upstream", up.url("localhost")});
  ASSERT_TRUE(front.ok()) << front.error();
  auto r = Roundtrip(front.port(), ToolsList("1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 502) << r->body;
  EXPECT_NE(r->body.find("certificate"), std::string::npos) << r->body;
  EXPECT_EQ(ReadMetric(up.metrics_port, "mcpfan_tls_handshakes_total").value_or(-1), 0);
}

TEST(UpstreamHttps, ACertificateForAnotherNameIs502) {
  HttpsUpstream up(/*client_pair=*/true);  // signed by the trusted CA, but not for "localhost"
  ASSERT_TRUE(up.ok());
  ServerProcess front({"--workers", "1", "--upstream", up.url("localhost"), "--upstream-ca-file", up.certs.ca_cert});
  ASSERT_TRUE(front.ok()) << front.error();
  auto r = Roundtrip(front.port(), ToolsList("1"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 502) << r->body;
  EXPECT_NE(r->body.find("certificate"), std::string::npos) << r->body;
}

TEST(UpstreamHttps, CaFileWithoutHttpsIsRefusedAtStart) {
  TempDir dir;
  auto certs = mcpfan::testing::make_test_certs(dir.path());
  ASSERT_TRUE(certs.ok) << certs.error;
  ServerProcess srv({"--upstream", "http://127.0.0.1:3000/mcp", "--upstream-ca-file", certs.ca_cert}, Ms(5000));
  ASSERT_FALSE(srv.ok());
  EXPECT_TRUE(srv.WaitExit(Ms(5000)));
  EXPECT_NE(srv.Stderr().find("--upstream-ca-file is for an https:// --upstream"), std::string::npos) << srv.Stderr();
}

}  // namespace
}  // namespace itest

// Running as a service (docs/operations.md "The operator listener", "Reload (SIGHUP)"): the operator listener
// (--publish-listen) and the SIGHUP reload of keys and limits, with streams open across it.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "child_process.h"
#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

constexpr std::string_view kKeyA = "publisher-key-A-0123456789";
constexpr std::string_view kKeyB = "publisher-key-B-0123456789";
constexpr std::string_view kSecretA = "secret-A-of-more-than-32-bytes-0123456789";
constexpr std::string_view kSecretB = "secret-B-of-more-than-32-bytes-0123456789";

Header Bearer(std::string_view token) { return {"Authorization", "Bearer " + std::string(token)}; }

std::optional<HttpResponse> Get(int port, std::string_view path) {
  return Roundtrip(port, BuildRequest("GET", path, {}));
}

std::optional<HttpResponse> PublishWith(int port, std::string_view key, std::string_view body) {
  std::vector<Header> h;
  if (!key.empty()) h.push_back(Bearer(key));
  return Publish(port, body, h);
}

int StatusOf(const std::optional<HttpResponse>& r) { return r ? r->status : -1; }

std::size_t Count(const std::string& text, std::string_view needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Sends SIGHUP and waits for the reload's outcome line (the `n`th "mcpfan: reload" line).
::testing::AssertionResult Reload(ServerProcess& srv) {
  std::size_t before = Count(srv.Stderr(), "mcpfan: reloaded") + Count(srv.Stderr(), "mcpfan: reload failed");
  if (!srv.Signal(SIGHUP)) return ::testing::AssertionFailure() << "kill(SIGHUP) failed";
  bool seen = srv.WaitStderrUntil(
      [&](const std::string& log) {
        return Count(log, "mcpfan: reloaded") + Count(log, "mcpfan: reload failed") > before;
      },
      kIo);
  if (!seen) return ::testing::AssertionFailure() << "no reload line after SIGHUP:\n" << srv.Stderr();
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Receives(SseStream& s, std::string_view uri) {
  std::string err;
  auto msg = s.NextMessage(kIo, &err);
  if (!msg) return ::testing::AssertionFailure() << "nothing arrived: " << err;
  if (msg->GetString({"params", "uri"}) != std::string(uri))
    return ::testing::AssertionFailure() << "unexpected: " << msg->text();
  return ::testing::AssertionSuccess();
}

void Write(const std::string& path, std::string_view text) { std::ofstream(path, std::ios::trunc) << text; }

// ---------------------------------------------------------------- --publish-listen

TEST(PublishListen, OperatorPathsMoveToTheInternalListener) {
  ServerProcess srv({"--publish-listen", "127.0.0.1:0", "--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  int ops = PublishPort(srv);
  ASSERT_GT(ops, 0) << srv.Stderr();
  ASSERT_NE(ops, srv.port());

  // The public listener: /mcp and /healthz; the operator paths answer 404 naming the flag.
  auto refused = Publish(srv.port(), Updated("file:///a"));
  ASSERT_EQ(StatusOf(refused), 404);
  EXPECT_NE(refused->body.find("--publish-listen"), std::string::npos) << refused->body;
  auto metrics = Get(srv.port(), "/metrics");
  ASSERT_EQ(StatusOf(metrics), 404);
  EXPECT_NE(metrics->body.find("operator listener"), std::string::npos) << metrics->body;
  EXPECT_EQ(StatusOf(Get(srv.port(), "/healthz")), 200);

  // The operator listener: publish reaches a listen opened on the public one; /metrics, /healthz.
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("l1")", R"({"resourceSubscriptions":["file:///a"]})"));
  EXPECT_TRUE(PublishOk(ops, Updated("file:///a")));
  EXPECT_TRUE(Receives(s, "file:///a"));
  auto m = Get(ops, "/metrics");
  ASSERT_EQ(StatusOf(m), 200);
  EXPECT_NE(m->body.find("mcpfan_published_total"), std::string::npos);
  EXPECT_EQ(StatusOf(Get(ops, "/healthz")), 200);

  // MCP clients belong on the public listener: /mcp on the operator one is 404.
  auto mcp = McpCall(ops, McpPost(RpcBody("1", "server/discover"), McpHeaders(kV2026, "server/discover")));
  EXPECT_EQ(mcp.http.status, 404);
  EXPECT_NE(mcp.http.body.find("public listener"), std::string::npos) << mcp.http.body;
}

TEST(PublishListen, ManyConnectionsAllServed) {
  // Every worker has its own SO_REUSEPORT socket on the operator listener and the kernel
  // spreads connections over them by hash: a socket nobody accepted on would leave the
  // connections it got unanswered (30 connections over 3 sockets miss one with p < 1e-5).
  ServerProcess srv({"--publish-listen", "127.0.0.1:0", "--workers", "3"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  int ops = PublishPort(srv);
  ASSERT_GT(ops, 0);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(PublishOk(ops, Updated("file:///n"))) << i;
}

TEST(PublishListen, OpenOperatorListenerNeedsPublisherKeys) {
  ServerProcess srv({"--publish-listen", "0.0.0.0:0"});
  EXPECT_FALSE(srv.ok());
  EXPECT_NE(srv.Stderr().find("refusing --publish-listen on 0.0.0.0 without authentication (--publish-keys-file)"),
            std::string::npos)
      << srv.Stderr();
}

TEST(PublishListen, OpenPublicListenerNeedsOnlyClientTokensWhenPublishingMoved) {
  // The public listener serves no publishing with --publish-listen: client tokens suffice there.
  TempDir dir;
  Write(dir.path() + "/secret", kSecretA);
  ChildProcess refused;
  std::string err;
  EXPECT_EQ(LaunchMcpfan(refused, {"--listen", "0.0.0.0:0", "--publish-listen", "127.0.0.1:0"}, kStart, "mcpfan", &err),
            0);
  EXPECT_NE(refused.Stderr().find("refusing --listen on 0.0.0.0 without authentication (--jwt-secret-file, "
                                  "--jwt-public-key-file or --oauth-issuer)"),
            std::string::npos)
      << refused.Stderr();
  ChildProcess srv;
  EXPECT_GT(LaunchMcpfan(srv,
                         {"--listen", "0.0.0.0:0", "--publish-listen", "127.0.0.1:0", "--jwt-secret-file",
                          dir.path() + "/secret"},
                         kStart, "mcpfan", &err),
            0)
      << err;
}

// ---------------------------------------------------------------- SIGHUP reload

TEST(Reload, PublisherKeysAddedAndRemovedStreamsStayOpen) {
  TempDir dir;
  const std::string keys = dir.path() + "/keys";
  Write(keys, std::string(kKeyA) + " *\n");
  ServerProcess srv({"--publish-keys-file", keys, "--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("l1")", R"({"resourceSubscriptions":["file:///r"]})"));
  ASSERT_EQ(StatusOf(PublishWith(srv.port(), kKeyA, Updated("file:///r"))), 202);
  ASSERT_TRUE(Receives(s, "file:///r"));
  EXPECT_EQ(StatusOf(PublishWith(srv.port(), kKeyB, Updated("file:///r"))), 401);

  Write(keys, std::string(kKeyB) + " *\n");  // A removed, B added
  ASSERT_TRUE(Reload(srv));
  EXPECT_NE(srv.Stderr().find("mcpfan: reloaded: client token algorithms: none; publisher keys: 1"), std::string::npos)
      << srv.Stderr();
  EXPECT_EQ(StatusOf(PublishWith(srv.port(), kKeyA, Updated("file:///r"))), 401);
  ASSERT_EQ(StatusOf(PublishWith(srv.port(), kKeyB, Updated("file:///r"))), 202);
  EXPECT_TRUE(Receives(s, "file:///r")) << "the stream opened before SIGHUP stopped receiving";
}

TEST(Reload, BrokenKeysFileKeepsTheOldKeys) {
  TempDir dir;
  const std::string keys = dir.path() + "/keys";
  Write(keys, std::string(kKeyA) + " *\n");
  ServerProcess srv({"--publish-keys-file", keys});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("l1")", R"({"resourceSubscriptions":["file:///r"]})"));

  Write(keys, "short *\n");  // a key under 16 bytes: the file does not load
  ASSERT_TRUE(Reload(srv));
  EXPECT_NE(srv.Stderr().find("mcpfan: reload failed, the running configuration is kept: "), std::string::npos);
  EXPECT_NE(srv.Stderr().find(keys), std::string::npos) << "the error names the file:\n" << srv.Stderr();
  ASSERT_EQ(StatusOf(PublishWith(srv.port(), kKeyA, Updated("file:///r"))), 202);
  EXPECT_TRUE(Receives(s, "file:///r"));

  std::remove(keys.c_str());  // gone altogether: also kept
  ASSERT_TRUE(Reload(srv));
  EXPECT_EQ(Count(srv.Stderr(), "mcpfan: reload failed"), 2u) << srv.Stderr();
  EXPECT_EQ(StatusOf(PublishWith(srv.port(), kKeyA, Updated("file:///r"))), 202);
  EXPECT_TRUE(Receives(s, "file:///r"));
}

TEST(Reload, JwtSecretRotated) {
  TempDir dir;
  const std::string secret = dir.path() + "/secret";
  Write(secret, kSecretA);
  ServerProcess srv({"--jwt-secret-file", secret});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto listen = [&](SseStream& s, std::string_view token) {
    auto h = McpHeaders(kV2026, "subscriptions/listen");
    h.push_back(Bearer(token));
    return s.Open(srv.port(), McpPost(RpcBody(R"("l")", "subscriptions/listen",
                                              R"("notifications":{"resourceSubscriptions":["file:///j"]})"),
                                      h));
  };
  SseStream old_stream;
  ASSERT_TRUE(listen(old_stream, Hs256Token(kSecretA, "acme")));
  ASSERT_EQ(old_stream.head().status, 200);
  ASSERT_TRUE(old_stream.NextMessage());  // the acknowledgement

  Write(secret, kSecretB);
  ASSERT_TRUE(Reload(srv));
  SseStream refused, accepted;
  ASSERT_TRUE(listen(refused, Hs256Token(kSecretA, "acme")));
  EXPECT_EQ(refused.head().status, 401);
  ASSERT_TRUE(listen(accepted, Hs256Token(kSecretB, "acme")));
  ASSERT_EQ(accepted.head().status, 200);
  ASSERT_TRUE(accepted.NextMessage());
  // The stream authenticated with the old secret stays open and keeps receiving.
  ASSERT_TRUE(PublishOk(
      srv.port(), R"({"tenant":"acme","method":"notifications/resources/updated","params":{"uri":"file:///j"}})"));
  EXPECT_TRUE(Receives(old_stream, "file:///j"));
  EXPECT_TRUE(Receives(accepted, "file:///j"));
}

TEST(Reload, TenantCeilingsFromTheConfigFile) {
  TempDir dir;
  const std::string conf = dir.path() + "/mcpfan.toml";
  Write(conf, "max-streams-per-tenant = 1\nworkers = 2\n");
  ServerProcess srv({"--config", conf});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream first, second, third;
  ASSERT_TRUE(OpenListen(first, srv.port(), R"("1")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(second.Open(srv.port(), ListenRequest(R"("2")", R"({"toolsListChanged":true})")));
  EXPECT_EQ(second.head().status, 429);

  // A ceiling raised and a non-reloadable key changed: the first applies, the second is named.
  Write(conf, "max-streams-per-tenant = 2\nworkers = 3\n");
  ASSERT_TRUE(Reload(srv));
  EXPECT_NE(srv.Stderr().find("streams 2"), std::string::npos) << srv.Stderr();
  EXPECT_NE(srv.Stderr().find("mcpfan: reload: workers changed; it takes effect after a restart"), std::string::npos)
      << srv.Stderr();
  EXPECT_TRUE(OpenListen(third, srv.port(), R"("3")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  EXPECT_TRUE(first.NextMessage());
  EXPECT_TRUE(third.NextMessage());

  // A bad value in the file: nothing changes.
  Write(conf, "max-streams-per-tenant = lots\n");
  ASSERT_TRUE(Reload(srv));
  EXPECT_NE(srv.Stderr().find("mcpfan: reload failed, the running configuration is kept"), std::string::npos);
  SseStream fourth;
  ASSERT_TRUE(fourth.Open(srv.port(), ListenRequest(R"("4")", R"({"toolsListChanged":true})")));
  EXPECT_EQ(fourth.head().status, 429);
}

TEST(Reload, AuthCannotBeTurnedOnByAReload) {
  TempDir dir;
  const std::string conf = dir.path() + "/mcpfan.toml";
  Write(dir.path() + "/keys", std::string(kKeyA) + " *\n");
  Write(conf, "workers = 1\n");
  ServerProcess srv({"--config", conf});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Write(conf, "workers = 1\npublish-keys-file = \"" + dir.path() + "/keys\"\n");
  ASSERT_TRUE(Reload(srv));
  EXPECT_NE(srv.Stderr().find("cannot be turned on or off by a reload; restart"), std::string::npos) << srv.Stderr();
  EXPECT_TRUE(PublishOk(srv.port(), Updated("file:///x"), 1));  // still open, as configured at start
}

// Reloads while publishers and authenticating clients run on every worker: the swap of keys
// is what ThreadSanitizer checks here (the TSan pass runs this against a TSan-built server,
// halt_on_error=1: a race ends the server and fails the test).
TEST(Reload, UnderLoad) {
  TempDir dir;
  const std::string keys = dir.path() + "/keys", secret = dir.path() + "/secret";
  const std::string both = std::string(kKeyA) + " *\n" + std::string(kKeyB) + " *\n";
  Write(keys, both);
  Write(secret, kSecretA);
  ServerProcess srv(
      {"--publish-keys-file", keys, "--jwt-secret-file", secret, "--workers", "2", "--publish-rate", "100000"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string token = Hs256Token(kSecretA, "acme");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, published{0}, listened{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop) {
        int st = StatusOf(PublishWith(srv.port(), kKeyA, Updated("file:///load")));  // A is in every generation
        if (st == 202) ++published;
        else ++bad;
      }
    });
  }
  threads.emplace_back([&] {
    while (!stop) {
      SseStream s;
      auto h = McpHeaders(kV2026, "subscriptions/listen");
      h.push_back(Bearer(token));  // the secret is the same in every generation
      if (s.Open(
              srv.port(),
              McpPost(RpcBody(R"("l")", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"), h)) &&
          s.head().status == 200) {
        ++listened;
      } else {
        ++bad;
      }
    }
  });
  for (int i = 0; i < 20; ++i) {
    Write(keys, i % 2 ? both : std::string(kKeyA) + " *\n");
    if (!Reload(srv)) break;
    std::this_thread::sleep_for(Ms(10));  // let requests run on each generation
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(published.load(), 0);
  EXPECT_GT(listened.load(), 0);
  EXPECT_EQ(Count(srv.Stderr(), "mcpfan: reloaded"), 20u) << srv.Stderr();
  EXPECT_EQ(srv.Stderr().find("ThreadSanitizer"), std::string::npos) << srv.Stderr();
  EXPECT_EQ(srv.DescribeStatus(), "running");
}

}  // namespace
}  // namespace itest

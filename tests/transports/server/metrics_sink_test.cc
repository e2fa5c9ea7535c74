// Server::collect_metrics() (docs/embedding.md "The host's own metrics sink"): an embedded Server on an
// ephemeral loopback port, real sockets. The host's sink sees exactly what GET /metrics serves;
// counters move with a publish that reaches a listen; tenant rows are labelled; and several
// host threads collect while clients come and go, publishes flow and the server stops (the
// cross-thread path: run under ThreadSanitizer too).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mcpfan/mcp.h"
#include "mcpfan/version.h"
#include "mcpfan/transport/server.h"
#include "support/loopback.h"
#include "transports/metrics_recorder.h"

namespace {

using mcpfan::testing::RecordingSink;

using mcpfan::testing::read_until;
using mcpfan::testing::send_all;

/** A 2026 subscriptions/listen on `prefix`, acknowledged; the socket (close it), or -1. */
int open_listen(std::uint16_t port, const std::string& prefix, std::string& got) {
  int fd = mcpfan::testing::connect_loopback(port);
  if (fd < 0) return -1;
  const std::string rev(mcpfan::mcp::kRev2026);
  std::string body =
      R"({"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{)"
      R"("io.modelcontextprotocol/protocolVersion":")" +
      rev + R"(","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":[")" +
      prefix + R"("]}}})";
  std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: " +
      rev + "\r\nMcp-Method: subscriptions/listen\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
      body;
  if (!send_all(fd, req) || !read_until(fd, got, "notifications/subscriptions/acknowledged")) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/** GET `path` on the keep-alive connection `fd`: the body ("" on failure); the connection stays open. */
std::string get_keep_alive(int fd, const std::string& path) {
  if (!send_all(fd, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")) return "";
  std::string got;
  if (!read_until(fd, got, "\r\n\r\n")) return "";
  std::size_t head_end = got.find("\r\n\r\n") + 4;
  std::size_t cl = got.find("Content-Length: ");
  if (cl == std::string::npos || cl > head_end) return "";
  std::size_t length = std::strtoul(got.c_str() + cl + 16, nullptr, 10);
  while (got.size() < head_end + length) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) <= 0) return "";
    char buf[8192];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got.substr(head_end, length);
}

mcpfan::ServerConfig loopback_config() {
  mcpfan::ServerConfig config;
  config.listen.port = 0;
  config.workers = 2;
  config.http.keepalive_ms = 600000;  // no SSE comment moves a counter while the test compares
  return config;
}

class MetricsSink : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
};

TEST_F(MetricsSink, BeforeStartIsAnErrorAfterStopTheFinalTotals) {
  mcpfan::Server server(loopback_config());
  RecordingSink early;
  auto before = server.collect_metrics(early);
  ASSERT_FALSE(before.ok());
  EXPECT_NE(before.error().message.find("before start()"), std::string::npos) << before.error().message;
  EXPECT_TRUE(early.families.empty()) << "the sink is not called before start()";

  ASSERT_TRUE(server.start().ok());
  ASSERT_TRUE(server.hub().publish(mcpfan::mcp::resource_updated("file:///nobody")));
  ASSERT_TRUE(server.stop().ok());
  RecordingSink late;
  ASSERT_TRUE(server.collect_metrics(late).ok());
  EXPECT_EQ(late.value("mcpfan_published_total"), 1);
  EXPECT_EQ(late.value("mcpfan_workers"), 2);
}

TEST_F(MetricsSink, SeesExactlyWhatGetMetricsServes) {
  mcpfan::Server server(loopback_config());
  auto port = server.start();
  ASSERT_TRUE(port.ok());
  std::string stream;
  int listen = open_listen(port.value(), "file:///project/", stream);
  ASSERT_GE(listen, 0);
  ASSERT_TRUE(server.hub().publish(mcpfan::mcp::resource_updated("file:///project/a")));
  ASSERT_TRUE(read_until(listen, stream, "file:///project/a"));

  // Quiescent: nothing is published, the listen is idle, and the connection that asked for
  // /metrics stays open, so the open connections and parsed requests are the same for both.
  int conn = mcpfan::testing::connect_loopback(port.value());
  ASSERT_GE(conn, 0);
  std::vector<mcpfan::testing::RecordedFamily> text;
  RecordingSink sink;
  for (int attempt = 0; attempt < 5; ++attempt) {  // a straggling counter (a write's completion) settles
    text = mcpfan::testing::parse_prometheus(get_keep_alive(conn, "/metrics"));
    // The process_* families are GET /metrics' alone (mcpfan/transport/metrics.h): a host's
    // own metrics library reports its process.
    const auto process_families = std::erase_if(text, [](const auto& f) { return f.name.rfind("process_", 0) == 0; });
    EXPECT_EQ(process_families, 6u) << "CPU, start time, resident and virtual memory, open and max fds";
    sink = RecordingSink{};
    ASSERT_TRUE(server.collect_metrics(sink).ok());
    if (sink.families == text) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(text.empty());
  EXPECT_FALSE(sink.sample_before_family);
  EXPECT_EQ(sink.families, text);
  EXPECT_EQ(sink.value("mcpfan_connections_open"), 2);
  EXPECT_EQ(sink.value("mcpfan_listen_streams_open"), 1);
  EXPECT_EQ(sink.value("mcpfan_build_info", {{"version", std::string(mcpfan::build::kVersion)},
                                             {"compiler", std::string(mcpfan::build::kCompiler)},
                                             {"build_type", std::string(mcpfan::build::kBuildType)}}),
            1);
  ::close(conn);
  ::close(listen);
}

TEST_F(MetricsSink, CountersMoveWhenAPublishReachesAListen) {
  mcpfan::Server server(loopback_config());
  auto port = server.start();
  ASSERT_TRUE(port.ok());
  RecordingSink before;
  ASSERT_TRUE(server.collect_metrics(before).ok());
  std::string stream;
  int listen = open_listen(port.value(), "file:///project/", stream);
  ASSERT_GE(listen, 0);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(server.hub().publish(mcpfan::mcp::resource_updated("file:///project/" + std::to_string(i))));
  ASSERT_TRUE(read_until(listen, stream, "file:///project/2"));
  RecordingSink after;
  ASSERT_TRUE(server.collect_metrics(after).ok());
  EXPECT_EQ(after.value("mcpfan_published_total") - before.value("mcpfan_published_total"), 3);
  EXPECT_EQ(after.value("mcpfan_deliveries_total") - before.value("mcpfan_deliveries_total"), 3);
  EXPECT_GT(after.value("mcpfan_stream_writes_total"), before.value("mcpfan_stream_writes_total"));
  // The client is tenant "default" (no auth configured): its row is labelled by name.
  EXPECT_EQ(after.value("mcpfan_tenant_streams", {{"tenant", "default"}}), 1);
  EXPECT_EQ(after.value("mcpfan_tenant_subscriptions", {{"tenant", "default"}}), 1);
  EXPECT_EQ(after.value("mcpfan_tenant_connections", {{"tenant", "default"}}), 1);
  EXPECT_EQ(after.value("mcpfan_tenants"), 1);
  ::close(listen);
}

TEST_F(MetricsSink, TenantsPastTheBoundAreOther) {
  mcpfan::ServerConfig config = loopback_config();
  config.tenants.metrics_tenants = 0;  // no tenant named: every row sums into "_other", as in /metrics
  mcpfan::Server server(config);
  auto port = server.start();
  ASSERT_TRUE(port.ok());
  std::string stream;
  int listen = open_listen(port.value(), "file:///x/", stream);
  ASSERT_GE(listen, 0);
  RecordingSink sink;
  ASSERT_TRUE(server.collect_metrics(sink).ok());
  EXPECT_EQ(sink.value("mcpfan_tenant_streams", {{"tenant", "_other"}}), 1);
  EXPECT_EQ(sink.value("mcpfan_tenant_streams", {{"tenant", "default"}}), -1);
  ::close(listen);
}

// Host threads collect while clients connect and listen, a host thread publishes, and then
// the controlling thread stops the server: collect_metrics() is thread-safe throughout.
TEST_F(MetricsSink, CollectFromSeveralThreadsWhileServing) {
  mcpfan::Server server(loopback_config());
  auto port = server.start();
  ASSERT_TRUE(port.ok());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::atomic<long> collections{0};
  std::vector<std::thread> collectors;
  for (int t = 0; t < 3; ++t) {
    collectors.emplace_back([&] {
      double last_published = 0;
      while (!done.load()) {
        RecordingSink sink;
        if (!server.collect_metrics(sink).ok() || sink.families.size() < 30 || sink.sample_before_family) ++failures;
        double published = sink.value("mcpfan_published_total");
        if (published < last_published) ++failures;  // a counter never goes back
        last_published = published;
        ++collections;
      }
    });
  }
  constexpr int kPublishes = 2000;
  std::thread publisher([&] {
    for (int i = 0; i < kPublishes; ++i) {
      if (!server.hub().publish(mcpfan::mcp::resource_updated("file:///load/" + std::to_string(i % 10)))) ++failures;
      if (i % 20 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  for (int i = 0; i < 30; ++i) {  // clients come and go meanwhile
    std::string stream;
    int listen = open_listen(port.value(), "file:///load/", stream);
    EXPECT_GE(listen, 0);
    int conn = mcpfan::testing::connect_loopback(port.value());
    EXPECT_NE(get_keep_alive(conn, "/healthz"), "");
    ::close(conn);
    if (listen >= 0) ::close(listen);
  }
  publisher.join();
  ASSERT_TRUE(server.stop().ok());  // while the collectors still run
  done = true;
  for (auto& c : collectors) c.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(collections.load(), 3);
  RecordingSink final_totals;
  ASSERT_TRUE(server.collect_metrics(final_totals).ok());
  EXPECT_EQ(final_totals.value("mcpfan_published_total"), kPublishes);
}

}  // namespace

namespace {

#if MCPFAN_WITH_NATS  // a build without the NATS backplane refuses --nats (server_check_test.cc)
// With --nats, stop() destroys the backplane while host threads may be reading its stats:
// an unreachable NATS URL is enough (the backplane starts and keeps reconnecting in the
// background), its families are walked until stop() and gone after it.
TEST_F(MetricsSink, CollectWhileStopDestroysTheBackplane) {
  mcpfan::ServerConfig config = loopback_config();
  config.nats.urls = "nats://127.0.0.1:1";  // nothing listens on port 1
  mcpfan::Server server(config);
  auto port = server.start();
  ASSERT_TRUE(port.ok()) << port.error().message;
  RecordingSink before;
  ASSERT_TRUE(server.collect_metrics(before).ok());
  EXPECT_EQ(before.value("mcpfan_backplane_connected"), 0);
  EXPECT_EQ(before.value("mcpfan_backplane_lag_seconds"), 0);

  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> collectors;
  for (int t = 0; t < 2; ++t) {
    collectors.emplace_back([&] {
      while (!done.load()) {
        RecordingSink sink;
        if (!server.collect_metrics(sink).ok()) ++failures;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(server.stop().ok());
  done = true;
  for (auto& c : collectors) c.join();
  EXPECT_EQ(failures.load(), 0);
  RecordingSink after;
  ASSERT_TRUE(server.collect_metrics(after).ok());
  EXPECT_EQ(after.value("mcpfan_backplane_connected"), -1) << "the backplane's families end with it";
  EXPECT_EQ(after.value("mcpfan_workers"), 2);
}
#endif

}  // namespace

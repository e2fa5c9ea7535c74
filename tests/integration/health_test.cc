// GET /livez, /readyz and /healthz (docs/operations.md "Health checks") and the process metrics of
// /metrics, on the real binary: /livez stays 200 through a NATS outage while /readyz follows
// --readyz-backplane; /readyz is 503 while a SIGTERM drains (--drain-delay-ms) with streams
// still open and served; all three on both listeners; process_* values that make sense.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "nats_server.h"
#include "test_helpers.h"

namespace itest {
namespace {

std::optional<HttpResponse> Get(int port, std::string_view path) {
  return Roundtrip(port, BuildRequest("GET", path, {}));
}

int StatusOf(int port, std::string_view path) {
  auto r = Get(port, path);
  return r ? r->status : -1;
}

// Polls (bounded) until GET `path` answers `want`.
::testing::AssertionResult PollStatus(int port, std::string_view path, int want, Ms timeout = Ms(15000)) {
  int last = -1;
  const Deadline end = After(timeout);
  while (true) {
    last = StatusOf(port, path);
    if (last == want) return ::testing::AssertionSuccess();
    if (Clock::now() >= end) break;
    std::this_thread::sleep_for(Ms(20));
  }
  return ::testing::AssertionFailure() << path << " answered " << last << ", not " << want << ", for "
                                       << timeout.count() << " ms";
}

Json Healthz(int port) {
  auto r = Get(port, "/healthz");
  return Json(r ? r->body : "");
}

TEST(Health, AFreshNodeIsLiveAndReadyAndSaysWhy) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto live = Get(srv.port(), "/livez");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  EXPECT_EQ(live->body, "ok\n");
  auto ready = Get(srv.port(), "/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(ready->body, "ready\n");
  auto h = Get(srv.port(), "/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_TRUE(h->ContentTypeIs("application/json"));
  Json j(h->body);
  ASSERT_TRUE(j.ok()) << h->body;
  EXPECT_EQ(j.GetString({"status"}).value_or(""), "ok");
  EXPECT_TRUE(JsonMatches(j.Get({"ready"}), "true")) << h->body;
  EXPECT_TRUE(JsonMatches(j.Get({"draining"}), "false")) << h->body;
  EXPECT_TRUE(JsonMatches(j.Get({"backplane"}), "null")) << h->body;
  EXPECT_TRUE(JsonMatches(j.Get({"upstream"}), "null")) << h->body;
  auto post = Roundtrip(srv.port(), BuildRequest("POST", "/readyz", {}, "x"));
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
}

TEST(Health, AllThreeAreServedOnBothListeners) {
  ServerProcess srv({"--workers", "2", "--publish-listen", "127.0.0.1:0"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  const int ops = PublishPort(srv);
  ASSERT_GT(ops, 0) << srv.Stderr();
  for (int port : {srv.port(), ops}) {
    for (std::string_view path : {"/livez", "/readyz", "/healthz"})
      EXPECT_EQ(StatusOf(port, path), 200) << path << " on " << port;
  }
  EXPECT_EQ(StatusOf(srv.port(), "/metrics"), 404) << "the operator paths stay on the operator listener";
}

// Built with the NATS backplane only (MCPFAN_WITH_NATS): without it --nats is refused.
#if MCPFAN_WITH_NATS
// Two nodes on one NATS server, one per --readyz-backplane policy, through an outage.
TEST(Health, LivezStaysUpThroughANatsOutageAndReadyzFollowsItsPolicy) {
  auto nats = std::make_unique<NatsServer>();
  ASSERT_TRUE(nats->ok()) << nats->error();
  std::vector<std::string> ignore_args = NodeArgs(*nats, "I");
  std::vector<std::string> require_args = NodeArgs(*nats, "R");
  require_args.insert(require_args.end(), {"--readyz-backplane", "require"});
  ServerProcess ignore(ignore_args), require(require_args);
  ASSERT_TRUE(ignore.ok()) << ignore.error();
  ASSERT_TRUE(require.ok()) << require.error();
  for (ServerProcess* n : {&ignore, &require}) {
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1, Ms(15000)));
    EXPECT_TRUE(PollStatus(n->port(), "/readyz", 200));
  }
  SseStream s;
  ASSERT_TRUE(OpenListen(s, require.port(), R"("r")", R"({"resourceSubscriptions":["mem://h"]})"));

  const int nats_port = nats->port();
  nats->Kill9();
  for (ServerProcess* n : {&ignore, &require}) ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 0));
  EXPECT_EQ(StatusOf(ignore.port(), "/readyz"), 200)
      << "ignore: a backplane outage on every node must not empty the pool";
  EXPECT_TRUE(PollStatus(require.port(), "/readyz", 503));
  auto why = Get(require.port(), "/readyz");
  ASSERT_TRUE(why);
  // The reason, then how long the node has been blind to other nodes' notifications.
  EXPECT_EQ(why->body.rfind("not ready: backplane disconnected, blind for ", 0), 0u) << why->body;
  EXPECT_NE(why->body.find(" s\n"), std::string::npos) << why->body;
  for (ServerProcess* n : {&ignore, &require}) {
    EXPECT_EQ(StatusOf(n->port(), "/livez"), 200) << "local delivery still works: the process is alive";
    Json h = Healthz(n->port());
    ASSERT_TRUE(h.ok()) << h.error();
    EXPECT_EQ(h.GetString({"status"}).value_or(""), "backplane disconnected") << h.text();
    EXPECT_TRUE(JsonMatches(h.Get({"backplane", "connected"}), "false")) << h.text();
  }
  EXPECT_EQ(StatusOf(ignore.port(), "/healthz"), 503) << "/healthz keeps its old meaning";
  // The node that is not ready still serves the streams it has.
  ASSERT_TRUE(PublishOk(require.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://h"}})"));
  std::string err;
  ASSERT_TRUE(s.NextMessage(kIo, &err)) << err;

  nats = std::make_unique<NatsServer>(nats_port);
  ASSERT_TRUE(nats->ok()) << nats->error();
  for (ServerProcess* n : {&ignore, &require}) {
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1, Ms(15000)));
    EXPECT_TRUE(PollStatus(n->port(), "/readyz", 200));
    EXPECT_EQ(StatusOf(n->port(), "/healthz"), 200);
  }
}

TEST(Health, RequireIsNotReadyUntilTheBackplaneFirstConnects) {
  int port = 0;
  {
    NatsServer probe;  // a port where no NATS server listens once it is gone
    ASSERT_TRUE(probe.ok()) << probe.error();
    port = probe.port();
    probe.Kill9();
  }
  ServerProcess srv(
      {"--nats", "nats://127.0.0.1:" + std::to_string(port), "--node-name", "S", "--readyz-backplane", "require"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  EXPECT_EQ(StatusOf(srv.port(), "/livez"), 200);
  EXPECT_EQ(StatusOf(srv.port(), "/readyz"), 503);
  NatsServer nats(port);
  ASSERT_TRUE(nats.ok()) << nats.error();
  EXPECT_TRUE(PollStatus(srv.port(), "/readyz", 200));
}
#endif

// SIGTERM with --drain-delay-ms: not ready at once, everything else served, the open
// streams held (and still delivered to) until the delay ends or a second signal comes.
TEST(Health, ReadyzIs503WhileDrainingAfterSigtermWithStreamsOpen) {
  ServerProcess srv({"--workers", "2", "--drain-delay-ms", "600000"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<std::unique_ptr<SseStream>> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenListen(*streams.back(), srv.port(), std::to_string(i), R"({"resourceSubscriptions":["mem://d"]})"));
  }
  ASSERT_EQ(StatusOf(srv.port(), "/readyz"), 200);
  ASSERT_TRUE(srv.Signal(SIGTERM));
  ASSERT_TRUE(PollStatus(srv.port(), "/readyz", 503, kIo));
  auto why = Get(srv.port(), "/readyz");
  ASSERT_TRUE(why);
  EXPECT_EQ(why->body, "not ready: draining\n");
  EXPECT_EQ(StatusOf(srv.port(), "/livez"), 200) << "draining is not dying: an orchestrator must not restart it";
  Json h = Healthz(srv.port());
  EXPECT_TRUE(JsonMatches(h.Get({"draining"}), "true")) << h.text();
  EXPECT_EQ(h.GetString({"status"}).value_or(""), "draining") << h.text();
  // The streams are open and served during the drain.
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://d"}})"));
  for (auto& s : streams) {
    std::string err;
    auto m = s->NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetString({"method"}).value_or(""), "notifications/resources/updated");
  }
  EXPECT_FALSE(srv.exited());
  // A second SIGTERM ends the wait: the usual graceful stop, each listen completed.
  ASSERT_TRUE(srv.Signal(SIGTERM));
  for (auto& s : streams) EXPECT_TRUE(s->WaitEnd(kIo)) << "stream not ended after the second SIGTERM";
  ASSERT_TRUE(srv.WaitExit(Ms(5000)));
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
}

TEST(Health, ProcessAndBuildMetricsHaveSaneValues) {
  const double launched = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  ServerProcess srv({"--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  const double up = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // Whole seconds of boot time plus clock ticks: within a couple of seconds of the launch.
  const double start = ReadMetric(srv.port(), "process_start_time_seconds").value_or(-1);
  EXPECT_GE(start, launched - 2);
  EXPECT_LE(start, up + 2);
  EXPECT_GT(ReadMetric(srv.port(), "process_resident_memory_bytes").value_or(0), 1 << 20);
  EXPECT_GE(ReadMetric(srv.port(), "process_virtual_memory_bytes").value_or(0),
            ReadMetric(srv.port(), "process_resident_memory_bytes").value_or(0));
  EXPECT_GE(ReadMetric(srv.port(), "process_cpu_seconds_total").value_or(-1), 0);
  const double max_fds = ReadMetric(srv.port(), "process_max_fds").value_or(-1);
  const double fds = ReadMetric(srv.port(), "process_open_fds").value_or(-1);
  EXPECT_GT(fds, 3);
  EXPECT_GE(max_fds, fds);

  // Open connections: the process holds one descriptor more for each.
  constexpr int kConns = 20;
  std::vector<Conn> conns(kConns);
  for (Conn& c : conns) ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(PollMetric(srv.port(), "mcpfan_connections_open", [](double v) { return v >= kConns; }));
  EXPECT_GE(ReadMetric(srv.port(), "process_open_fds").value_or(-1), fds + kConns);
  for (Conn& c : conns) c.Close();
  EXPECT_TRUE(PollMetric(srv.port(), "process_open_fds", [&](double v) { return v < fds + kConns; }));

  auto m = Get(srv.port(), "/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("\nmcpfan_build_info{version=\""), std::string::npos) << m->body.substr(0, 400);
  EXPECT_NE(m->body.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
  EXPECT_NE(m->body.find("# TYPE process_open_fds gauge"), std::string::npos);
  EXPECT_EQ(ReadMetric(srv.port(), "mcpfan_build_info").value_or(0), 1);
}

}  // namespace
}  // namespace itest

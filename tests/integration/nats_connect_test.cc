// How a node's NATS connection runs (docs/operations.md "IO and delivery"): its socket IO on the backplane's own
// libuv loop (the default) or on nats.c's threads (--nats-io threads); and a node started while
// no nats-server answers, which serves locally and joins once one does (on the loop nats.c
// cannot retry a first connect: the backplane does).
#include <signal.h>

#include <optional>
#include <set>
#include <thread>

#include "harness.h"
#include "nats_server.h"

namespace itest {
namespace {

::testing::AssertionResult CrossesFromAToB(int a, int b, std::string_view uri) {
  SseStream s;
  if (auto r = OpenListen(s, b, R"("x")", R"({"resourceSubscriptions":[")" + std::string(uri) + R"("]})"); !r) return r;
  // B's interest reaches the server asynchronously: publish until one arrives (bounded).
  std::string err;
  for (int n = 0; n < 200; ++n) {
    if (!PublishOk(a,
                   R"({"method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) + R"("}})")) {
      return ::testing::AssertionFailure() << "publish refused";
    }
    if (s.NextMessage(Ms(50), &err)) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "nothing crossed from A to B: " << err;
}

TEST(NatsConnect, NatsThreadsIoModeCrossesNodes) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  ServerProcess a({"--nats", nats.url(), "--node-name", "A", "--nats-io", "threads"});
  ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--nats-io", "threads", "--nats-publish-batching"});
  for (ServerProcess* n : {&a, &b}) {
    ASSERT_TRUE(n->ok()) << n->error();
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  EXPECT_TRUE(CrossesFromAToB(a.port(), b.port(), "mem://t"));
  EXPECT_TRUE(CrossesFromAToB(b.port(), a.port(), "mem://u"));
}

TEST(NatsConnect, ANodeStartedBeforeItsServerServesLocallyAndJoinsLater) {
  for (const char* io : {"libuv", "threads"}) {
    SCOPED_TRACE(io);
    int port = 0;
    {
      NatsServer probe;  // a loopback port that nats-server can take again, then nobody listening on it
      ASSERT_TRUE(probe.ok()) << probe.error();
      port = probe.port();
      probe.Kill9();
    }
    const std::string url = "nats://127.0.0.1:" + std::to_string(port);
    ServerProcess a({"--nats", url, "--node-name", "A", "--nats-io", io});
    ASSERT_TRUE(a.ok()) << a.error();
    EXPECT_TRUE(PollMetricEq(a.port(), "mcpfan_backplane_connected", 0));
    auto h = Roundtrip(a.port(), BuildRequest("GET", "/healthz", {}));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 503) << h->body;
    ASSERT_TRUE(ServesListenAndPublish(a.port())) << "local delivery without NATS";

    NatsServer nats(port);
    ASSERT_TRUE(nats.ok()) << nats.error();
    ASSERT_TRUE(PollMetricEq(a.port(), "mcpfan_backplane_connected", 1, Ms(15000))) << "A never joined";
    ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--nats-io", io});
    ASSERT_TRUE(b.ok()) << b.error();
    ASSERT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_connected", 1));
    EXPECT_TRUE(CrossesFromAToB(a.port(), b.port(), "mem://late"));
    EXPECT_TRUE(CrossesFromAToB(b.port(), a.port(), "mem://late2"));
  }
}

// A nats-server that stops reading (SIGSTOP): nats.c would buffer what the node sends without
// limit; the node holds it in its own bounded queue instead and refuses publishes past the
// bound (503) before delivering anything; once the server reads again, publishing works and
// what waited arrives.
TEST(NatsConnect, AServerThatStopsReadingFillsABoundedQueueThenPublishesAreRefused) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  // Pings far apart: this test is about the queue while the server does not read, not about the
  // node giving the connection up (AStalledServerIsNoticedWithinItsPingsAndReconnectedAfter).
  ServerProcess a({"--nats", nats.url(), "--node-name", "A", "--nats-outage-buffer-bytes", "65536",
                   "--nats-ping-interval-ms", "600000"});
  ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--nats-ping-interval-ms", "600000"});
  for (ServerProcess* n : {&a, &b}) {
    ASSERT_TRUE(n->ok()) << n->error();
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  SseStream s;
  ASSERT_TRUE(OpenListen(s, b.port(), R"("x")", R"({"resourceSubscriptions":["mem://x"]})"));
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B").size() == 1; }, "B's subject at NATS"));
  nats.Signal(SIGSTOP);
  const std::string pad(4000, 'p');
  std::optional<HttpResponse> refused;
  int accepted = 0;
  // The kernel's socket buffers take some megabytes first; then nats.c's buffer passes the
  // bound, the node's queue fills, and a publish is refused.
  for (int i = 0; i < 20000 && !refused; ++i) {
    auto r = Publish(
        a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://y","pad":")" + pad + R"("}})");
    if (!r) {
      nats.Signal(SIGCONT);
      FAIL() << "publish failed at " << i;
    }
    if (r->status == 503) refused = r;
    else if (r->status != 202) {
      nats.Signal(SIGCONT);
      FAIL() << r->status << " " << r->body;
    }
    accepted += r->status == 202;
  }
  nats.Signal(SIGCONT);
  ASSERT_TRUE(refused) << "never refused after " << accepted << " publishes";
  EXPECT_TRUE(refused->Get("retry-after"));
  EXPECT_NE(refused->body.find("not keeping up"), std::string::npos) << refused->body;
  EXPECT_TRUE(PollMetric(a.port(), "mcpfan_backplane_refused_total", [](double v) { return v >= 1; }));
  // Reading again: the queue drains and a new publish crosses.
  bool taken = false;
  for (int i = 0; i < 1000 && !taken; ++i) {
    auto r =
        Publish(a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","_meta":{"n":1}}})");
    taken = r && r->status == 202;
    if (!taken) std::this_thread::sleep_for(Ms(10));
  }
  ASSERT_TRUE(taken) << "publishing did not recover";
  std::string err;
  auto m = s.NextMessage(Ms(15000), &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), 1);
}

// A server that stops answering (SIGSTOP) while its TCP connection stays up: the node's pings go
// unanswered and it takes the connection as dead within seconds (nats.c's own default is two
// minutes per ping), so its health says so; once the server answers again it reconnects.
TEST(NatsConnect, AStalledServerIsNoticedWithinItsPingsAndReconnectedAfter) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  // nats.c's own threads for the socket: with the libuv adapter (the default IO), nats.c's timer
  // thread closes the stale socket while the backplane loop still polls it, the harmless
  // descriptor race of the adapter that tools/tsan/suppressions.cc explains for reconnects,
  // which the TSan pass would report here. The pings are nats.c's either way.
  ServerProcess node({"--nats", nats.url(), "--node-name", "P", "--nats-ping-interval-ms", "300",
                      "--nats-max-pings-out", "2", "--nats-io", "threads"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  nats.Signal(SIGSTOP);
  bool noticed = PollMetricEq(node.port(), "mcpfan_backplane_connected", 0, Ms(15000));
  // /healthz says for how long the node has been blind to the other nodes.
  auto blind = [&] {
    auto h = Roundtrip(node.port(), BuildRequest("GET", "/healthz", {}));
    if (!h) return -1.0;
    Json health(h->body);  // owns the document the element points into
    auto v = health.Get({"backplane", "blind_seconds"});
    double d = -1;
    return v && v->get(d) == simdjson::SUCCESS ? d : -1.0;
  };
  bool reported = noticed && Eventually([&] { return blind() >= 0.2; }, "blind_seconds growing");
  nats.Signal(SIGCONT);
  EXPECT_TRUE(noticed) << "the stalled server was not noticed within 15 s (pings every 300 ms, 2 may be missed)";
  EXPECT_TRUE(reported);
  EXPECT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1, Ms(15000)));
  EXPECT_EQ(blind(), 0.0) << "connected again: not blind";
}

// A miss this node can observe (its server killed: what other nodes sent meanwhile never
// reached it) is answered with re-read hints once it is back: every local listen gets a
// notifications/resources/updated for each URI it watches and a list_changed for each list kind
// it asked for, marked params._meta["mcpfan/reread"]; a task listen gets none.
TEST(NatsConnect, AfterAnOutageEveryListenerGetsReReadHintsForWhatItWatches) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  const int port = nats.port();
  ServerProcess node({"--nats", nats.url(), "--node-name", "H", "--nats-settle-ms", "100"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  SseStream s;
  ASSERT_TRUE(OpenListen(s, node.port(), R"("h")",
                         R"({"resourceSubscriptions":["mem://h/a","mem://h/dir/"],"toolsListChanged":true})"));
  nats.Kill9();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 0));
  NatsServer again(port);
  ASSERT_TRUE(again.ok()) << again.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_reread_waves_total", 1, Ms(15000)));
  std::set<std::string> hinted;
  for (int i = 0; i < 3; ++i) {
    std::string err;
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_TRUE(JsonMatches(m->Get({"params", "_meta", "mcpfan/reread"}), "true")) << m->text();
    hinted.insert(m->GetString({"method"}).value_or("") + " " + m->GetString({"params", "uri"}).value_or(""));
  }
  EXPECT_EQ(hinted, (std::set<std::string>{"notifications/resources/updated mem://h/a",
                                           "notifications/resources/updated mem://h/dir/",
                                           "notifications/tools/list_changed "}));
  EXPECT_FALSE(s.NextMessage(Ms(300))) << "more than one hint per watched key";
  EXPECT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_reread_hints_total", 3));
}

}  // namespace
}  // namespace itest

// Loss a node cannot see on its own connection, told by its peers' heartbeats (transports/src/nats/peers.h):
//  - a route between two nats-servers cut while both nodes stay connected: each node hears the
//    other's heartbeats stop, then skip, and its listeners get re-read hints once the route is
//    back (before heartbeats, what was published meanwhile was lost with no hint at all);
//  - a node whose server died fails over and announces its fault: a node on the other server,
//    whose own connection never dropped, sends its listeners hints;
//  - a node that could not reach NATS at its start sends its listeners hints at its first
//    connect (what other nodes sent until then never reached it);
//  - a node's own message, routed back to it by a server that stalled and resumed, is dropped.
#include <gtest/gtest.h>

#include <string>

#include "harness.h"
#include "json_util.h"
#include "nats_server.h"
#include "tcp_relay.h"
#include "test_helpers.h"

namespace itest {
namespace {

constexpr std::string_view kHint = "mcpfan/reread";

std::string UpdateOf(std::string_view uri, int n) {
  return R"({"method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) +
         R"(","_meta":{"n":)" + std::to_string(n) + "}}}";
}

// Reads until a message that `pred` accepts, bounded by `timeout`; the ones before it are counted in `skipped`.
std::optional<Json> NextWhere(SseStream& s, const std::function<bool(const Json&)>& pred, Ms timeout,
                              int* skipped = nullptr) {
  const Deadline end = After(timeout);
  for (int i = 0; i < 10'000 && Clock::now() < end; ++i) {
    auto m = s.NextMessage(std::chrono::duration_cast<Ms>(end - Clock::now()));
    if (!m) return std::nullopt;
    if (pred(*m)) return m;
    if (skipped) ++*skipped;
  }
  return std::nullopt;
}

bool IsHintFor(const Json& m, std::string_view uri) {
  return JsonMatches(m.Get({"params", "_meta", std::string(kHint)}), "true") &&
         m.GetString({"params", "uri"}).value_or("") == uri;
}

std::vector<std::string> PeerArgs(const std::string& urls, std::string_view name) {
  return {"--nats", urls, "--node-name", std::string(name), "--nats-heartbeat-ms", "200", "--nats-settle-ms", "100",
          "--nats-linger-ms", "100"};
}

TEST(NatsPeers, ARouteCutWhileBothNodesStayConnectedBringsReReadHintsOnceItIsBack) {
  NatsServer n1(-1, "-");
  ASSERT_TRUE(n1.ok()) << n1.error();
  TcpRelay route(std::stoi(n1.route_url().substr(n1.route_url().rfind(':') + 1)));
  ASSERT_TRUE(route.ok());
  NatsServer n2(-1, route.url());  // n2's one route to n1 goes through the relay
  ASSERT_TRUE(n2.ok()) << n2.error();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() == 1 && n2.Routes() == 1; }, "the route through the relay"));
  ServerProcess a(PeerArgs(n1.url(), "A"));
  ServerProcess b(PeerArgs(n2.url(), "B"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, b.port(), R"("r")", R"({"resourceSubscriptions":["mem://r/"]})"));
  // Interest crosses the route asynchronously: publish until one arrives.
  bool crossed = false;
  for (int n = 0; n < 200 && !crossed; ++n) {
    ASSERT_TRUE(PublishOk(a.port(), UpdateOf("mem://r/warm", n)));
    crossed = s.NextMessage(Ms(50)).has_value();
  }
  ASSERT_TRUE(crossed) << "nothing crossed the route";
  for (int p : {a.port(), b.port()}) ASSERT_TRUE(PollMetricEq(p, "mcpfan_backplane_peers", 1));
  const double waves_before = ReadMetric(b.port(), "mcpfan_backplane_reread_waves_total").value_or(-1);

  route.Cut();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() == 0 && n2.Routes() == 0; }, "the route down"));
  // Accepted by A, which is connected: lost between the servers, and nothing on B's own connection says so.
  ASSERT_TRUE(PublishOk(a.port(), UpdateOf("mem://r/lost", 1)));
  // B hears A's heartbeats stop: a first wave now (what A sent last may be lost)...
  ASSERT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_peers_silent", 1));
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_connected", 1, Ms(100))) << "B's own connection stayed up";
  auto first = NextWhere(s, [](const Json& m) { return IsHintFor(m, "mem://r/"); }, kIo);
  ASSERT_TRUE(first) << "no hint while A was unheard";

  // ...and once the route is back, A's next heartbeat shows the gap: a second wave, after the path healed.
  route.Restore();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() == 1 && n2.Routes() == 1; }, "the route back", Ms(15000)));
  ASSERT_TRUE(PollMetric(b.port(), "mcpfan_backplane_peer_misses_total{kind=\"gap\"}", [](double v) { return v >= 1; },
                         Ms(15000)));
  ASSERT_TRUE(PollMetric(b.port(), "mcpfan_backplane_reread_waves_total",
                         [&](double v) { return v >= waves_before + 2; }, Ms(15000)));
  auto second = NextWhere(s, [](const Json& m) { return IsHintFor(m, "mem://r/"); }, kIo);
  ASSERT_TRUE(second) << "no hint after the route came back";
  EXPECT_EQ(ReadMetric(b.port(), "mcpfan_backplane_peers_silent").value_or(-1), 0);
  // The same holds the other way: A heard B go quiet and come back with a gap.
  EXPECT_TRUE(
      PollMetric(a.port(), "mcpfan_backplane_peer_misses_total{kind=\"gap\"}", [](double v) { return v >= 1; }));

  // What is published after the heal arrives as it should (interest crossed the route again).
  bool after = false;
  for (int n = 0; n < 200 && !after; ++n) {
    ASSERT_TRUE(PublishOk(a.port(), UpdateOf("mem://r/after", n)));
    after = NextWhere(s, [](const Json& m) { return m.GetString({"params", "uri"}).value_or("") == "mem://r/after"; },
                      Ms(50))
                .has_value();
  }
  EXPECT_TRUE(after) << "nothing crossed the healed route";
}

TEST(NatsPeers, ANodeWhoseServerDiedAnnouncesItsFaultToANodeThatSawNothing) {
  NatsServer n1(-1, "-");
  ASSERT_TRUE(n1.ok()) << n1.error();
  NatsServer n2(-1, n1.route_url());
  ASSERT_TRUE(n2.ok()) << n2.error();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() >= 1 && n2.Routes() >= 1; }, "the cluster route"));
  // On n1; it fails over to n2, which n1 told it of (a cluster's servers gossip their client URLs).
  ServerProcess a(PeerArgs(n1.url(), "A"));
  ServerProcess b(PeerArgs(n2.url(), "B"));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, b.port(), R"("f")", R"({"resourceSubscriptions":["mem://f/x"]})"));
  for (int p : {a.port(), b.port()}) ASSERT_TRUE(PollMetricEq(p, "mcpfan_backplane_peers", 1));
  ASSERT_TRUE(Eventually([&] { return n1.Clients().size() == 1; }, "A on n1"));

  n1.Kill9();
  ASSERT_TRUE(PollMetric(a.port(), "mcpfan_backplane_faults_total", [](double v) { return v >= 1; }));
  // B hears of it by A's grown fault count, or first by the gap its lost heartbeat left (the one
  // written to n1 as it died): either kind is a miss, and brings the hint.
  ASSERT_TRUE(PollMetric(b.port(), "mcpfan_backplane_peer_misses_total", [](double v) { return v >= 1; }, Ms(15000)));
  auto hint = NextWhere(s, [](const Json& m) { return IsHintFor(m, "mem://f/x"); }, kIo);
  ASSERT_TRUE(hint) << "B's listener got no hint for what A may have lost";
  EXPECT_EQ(ReadMetric(b.port(), "mcpfan_backplane_faults_total").value_or(-1), 0)
      << "B's own connection never dropped";
}

// No echo is asked of NATS per connection. A node whose server stalls reconnects to another; what
// it had written to the stalled one is routed when that one resumes, to the node's new connection
// too. The node knows its own messages by their reply subject and drops them (counted), so its
// listener gets each of its publishes once.
TEST(NatsPeers, ANodesOwnMessageBackThroughAnotherServerIsDropped) {
  NatsServer n1(-1, "-");
  ASSERT_TRUE(n1.ok()) << n1.error();
  NatsServer n2(-1, n1.route_url());
  ASSERT_TRUE(n2.ok()) << n2.error();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() >= 1 && n2.Routes() >= 1; }, "the cluster route"));
  // nats.c's own IO threads, as in the stall test (nats_connect_test.cc says why).
  std::vector<std::string> a_args = PeerArgs(n1.url(), "A");
  // Pings far enough apart that the publish below is written to n1's socket before A gives n1 up.
  a_args.insert(a_args.end(), {"--nats-ping-interval-ms", "500", "--nats-max-pings-out", "2", "--nats-io", "threads"});
  ServerProcess a(a_args);
  ServerProcess c(PeerArgs(n2.url(), "C"));  // a witness on the other server
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(c.ok()) << c.error();
  SseStream at_a, at_c;
  ASSERT_TRUE(OpenListen(at_a, a.port(), R"("a")", R"({"resourceSubscriptions":["mem://o/"]})"));
  ASSERT_TRUE(OpenListen(at_c, c.port(), R"("c")", R"({"resourceSubscriptions":["mem://o/"]})"));
  ASSERT_TRUE(Eventually([&] { return n1.Clients().size() == 1 && n1.Subscriptions("A").size() == 1; }, "A on n1"));
  ASSERT_TRUE(Eventually([&] { return n2.Subscriptions("C").size() == 1; }, "C on n2"));

  n1.Signal(SIGSTOP);
  // Written to the stalled server's socket; A delivers it to its own listener at once.
  ASSERT_TRUE(PublishOk(a.port(), UpdateOf("mem://o/x", 1)));
  // Its pings go unanswered: a disconnect (a fault of its own), and a reconnect to n2 at once.
  ASSERT_TRUE(PollMetric(a.port(), "mcpfan_backplane_faults_total", [](double v) { return v >= 1; }, Ms(15000)));
  ASSERT_TRUE(PollMetricEq(a.port(), "mcpfan_backplane_connected", 1, Ms(15000)));
  const bool on_n2 = Eventually([&] { return n2.Subscriptions("A").size() == 1; }, "A's subject renewed on n2");
  n1.Signal(SIGCONT);
  ASSERT_TRUE(on_n2);
  // n1 resumes, reads what A wrote before and routes it to n2: C gets it, and A's new connection
  // would. (Or, if A's last write never left it or died with its old socket, C gets the hint that
  // A's announced fault brings: the guarantee either way; the echo is what this test is for.)
  auto at_c_first = NextWhere(
      at_c,
      [](const Json& m) { return m.GetInt({"params", "_meta", "n"}).value_or(0) == 1 || IsHintFor(m, "mem://o/"); },
      Ms(15000));
  ASSERT_TRUE(at_c_first) << "C got neither A's publish nor a hint";
  if (!IsHintFor(*at_c_first, "mem://o/")) {
    EXPECT_TRUE(
        PollMetric(a.port(), "mcpfan_backplane_rejected_total{reason=\"own\"}", [](double v) { return v >= 1; }));
  }
  int ones = 0;
  for (int i = 0; i < 50; ++i) {
    auto m = NextNotHint(at_a, nullptr, Ms(300));
    if (!m) break;
    ones += m->GetInt({"params", "_meta", "n"}).value_or(0) == 1;
  }
  EXPECT_EQ(ones, 1) << "A's listener got its own publish back from the backplane";
}

TEST(NatsPeers, ANodeThatCouldNotReachNatsAtItsStartSendsHintsAtItsFirstConnect) {
  const int port = PortBelowEphemeralRange();
  ServerProcess node({"--nats", "nats://127.0.0.1:" + std::to_string(port), "--node-name", "L", "--nats-settle-ms",
                      "100"});
  ASSERT_TRUE(node.ok()) << node.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, node.port(), R"("l")", R"({"resourceSubscriptions":["mem://l"]})"));
  EXPECT_EQ(ReadMetric(node.port(), "mcpfan_backplane_reread_waves_total").value_or(-1), 0) << "none before a connect";
  NatsServer nats(port);
  ASSERT_TRUE(nats.ok()) << nats.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1, Ms(15000)));
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_reread_waves_total", 1));
  auto hint = NextWhere(s, [](const Json& m) { return IsHintFor(m, "mem://l"); }, kIo);
  EXPECT_TRUE(hint) << "no hint at the first connect";
}

}  // namespace
}  // namespace itest

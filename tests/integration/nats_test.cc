// The NATS backplane (docs/operations.md "Several nodes") against a real nats-server (Debian's, started by the test on
// ephemeral loopback ports): a publish to any node reaches every matching stream on every
// node exactly once, a node receives only what its subscribers need (read from NATS's own
// /connz), and a nats-server killed with -9 and restarted costs no stream, is reported by
// /healthz, and the next publish arrives exactly once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>

#include "child_process.h"
#include "harness.h"
#include "nats_server.h"
#include "session_client.h"
#include "stdio_client.h"

namespace itest {
namespace {

class Nats : public ::testing::Test {
 protected:
  void SetUp() override {
    nats_ = std::make_unique<NatsServer>();
    ASSERT_TRUE(nats_->ok()) << nats_->error();
    for (const char* name : {"A", "B", "C"}) {
      nodes_.push_back(std::make_unique<ServerProcess>(NodeArgs(*nats_, name)));
      ASSERT_TRUE(nodes_.back()->ok()) << nodes_.back()->error();
    }
    for (auto& n : nodes_) ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  int port(std::size_t i) const { return nodes_[i]->port(); }
  std::unique_ptr<NatsServer> nats_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
};

TEST_F(Nats, APublishToAnyNodeReachesEveryMatchingStreamOnEveryNodeOnce) {
  SseStream a, b;
  ASSERT_TRUE(OpenListen(a, port(0), R"("a")", R"({"resourceSubscriptions":["file:///p/"]})"));
  ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"toolsListChanged":true,"resourceSubscriptions":["file:///p/"]})"));
  // The interest proof, read from NATS: B's subjects are there, C (no subscribers) has none.
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 2; }, "B's two subjects at the NATS server"));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("A").size() == 1; }, "A's subject at the NATS server"));
  EXPECT_TRUE(nats_->Subscriptions("C").empty());
  EXPECT_TRUE(HasSubject(nats_->Subscriptions("B"), ".l.tools"));

  // Published on C (no subscribers): reaches A and B once each.
  ASSERT_TRUE(PublishOk(
      port(2), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/x y.txt","_meta":{"n":1}}})"));
  ASSERT_TRUE(PublishOk(port(2), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"n":2}}})"));
  // Published on B itself: local delivery, and A through NATS (B never gets its own back).
  ASSERT_TRUE(PublishOk(
      port(1), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/z","_meta":{"n":3}}})"));
  std::string err;
  // Different publishers (C and B): no order between them, only each once.
  std::vector<std::string> at_a;
  for (int i = 0; i < 2; ++i) {
    auto m = a.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetString({"params", "_meta", std::string(kSubId)}), "a");
    at_a.push_back(m->GetString({"params", "uri"}).value_or("?") + "#" +
                   std::to_string(m->GetInt({"params", "_meta", "n"}).value_or(-1)));
  }
  std::sort(at_a.begin(), at_a.end());
  EXPECT_EQ(at_a, (std::vector<std::string>{"file:///p/x y.txt#1", "file:///p/z#3"}));
  std::vector<std::int64_t> at_b;
  for (int i = 0; i < 3; ++i) {
    auto m = b.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    at_b.push_back(m->GetInt({"params", "_meta", "n"}).value_or(-1));
  }
  std::sort(at_b.begin(), at_b.end());
  EXPECT_EQ(at_b, (std::vector<std::int64_t>{1, 2, 3}));
  // Exactly once: a last marker to each, and nothing before it.
  ASSERT_TRUE(PublishOk(port(2), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/end"}})"));
  for (SseStream* s : {&a, &b}) {
    auto end = s->NextMessage(kIo, &err);
    ASSERT_TRUE(end) << err;
    EXPECT_EQ(end->GetString({"params", "uri"}), "file:///p/end") << end->text();
  }
  EXPECT_TRUE(PollMetricEq(port(2), "mcpfan_backplane_received_total", 0)) << "C subscribes to nothing";
}

TEST_F(Nats, ATaskUpdatePublishedOnOneNodeReachesItsListenerOnAnotherOnce) {
  SseStream b;
  ASSERT_TRUE(OpenTaskListen(b, port(1), R"("b")", R"({"taskIds":["t1"]})", R"({"taskIds":["t1"]})"));
  // One interest per task id, on the task subject (nats/subjects.h: `.t.` and one hashed token).
  ASSERT_TRUE(Eventually([&] { return HasSubject(nats_->Subscriptions("B"), ".t."); }, "B's task subject at NATS"));
  EXPECT_EQ(nats_->Subscriptions("B").size(), 1u);
  ASSERT_TRUE(PublishOk(port(2), TaskPublish("t2", "working")));   // nobody's task
  ASSERT_TRUE(PublishOk(port(2), TaskPublish("t1", "working")));   // from C
  ASSERT_TRUE(NextTask(b, R"("b")", "t1", "working"));
  ASSERT_TRUE(PublishOk(port(0), TaskPublish("t1", "completed")));  // from A
  EXPECT_TRUE(NextTask(b, R"("b")", "t1", "completed"));
  // Exactly once: a marker from A is the next event.
  ASSERT_TRUE(PublishOk(port(0), TaskPublish("t1", "cancelled")));
  EXPECT_TRUE(NextTask(b, R"("b")", "t1", "cancelled"));
  // B kept what it received: a late listener on B gets the newest state at once.
  SseStream late;
  ASSERT_TRUE(OpenTaskListen(late, port(1), R"("late")", R"({"taskIds":["t1"]})", R"({"taskIds":["t1"]})"));
  EXPECT_TRUE(NextTask(late, R"("late")", "t1", "cancelled"));
  EXPECT_TRUE(PollMetricEq(port(1), "mcpfan_task_replays_total", 1));
}

TEST_F(Nats, InterestLeavesNatsAfterTheLingerWhenTheLastSubscriberGoes) {
  {
    SseStream b;
    ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"promptsListChanged":true})"));
    ASSERT_TRUE(Eventually([&] { return HasSubject(nats_->Subscriptions("B"), ".l.prompts"); }, "B's subject at NATS"));
  }  // the stream closes
  EXPECT_TRUE(Eventually([&] { return nats_->Subscriptions("B").empty(); }, "B's UNSUB after the 100 ms linger"));
}

TEST_F(Nats, AServerKilledAndRestartedCostsNoStreamAndTheNextPublishArrivesOnce) {
  SseStream b;
  ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"resourceSubscriptions":["mem://k"]})"));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 1; }, "B's subject at NATS"));
  const int nats_port = nats_->port();
  nats_->Kill9();
  for (std::size_t i : {0u, 1u}) {
    ASSERT_TRUE(PollMetricEq(port(i), "mcpfan_backplane_connected", 0));
    auto h = Roundtrip(port(i), BuildRequest("GET", "/healthz", {}));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 503) << "/healthz must not be ok while the backplane is down: " << h->body;
  }
  // Local delivery goes on meanwhile.
  ASSERT_TRUE(
      PublishOk(port(1), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":1}}})"));
  std::string err;
  auto local = b.NextMessage(kIo, &err);
  ASSERT_TRUE(local) << err;
  EXPECT_EQ(local->GetInt({"params", "_meta", "n"}), 1);

  // Published on A during the outage: held, and sent once A is back and settled (B has
  // re-subscribed by then).
  ASSERT_TRUE(PublishOk(port(0),
                        R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":10}}})"));
  EXPECT_TRUE(PollMetricEq(port(0), "mcpfan_backplane_queued", 1));
  EXPECT_TRUE(PollMetric(port(0), "mcpfan_backplane_lag_seconds", [](double v) { return v > 0; }))
      << "the wait is reported";
  nats_ = std::make_unique<NatsServer>(nats_port);  // the same address: the nodes reconnect by themselves
  ASSERT_TRUE(nats_->ok()) << nats_->error();
  for (std::size_t i : {0u, 1u}) ASSERT_TRUE(PollMetricEq(port(i), "mcpfan_backplane_connected", 1, Ms(15000)));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 1; }, "B's interest back at the new server"));
  auto h = Roundtrip(port(1), BuildRequest("GET", "/healthz", {}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  ASSERT_TRUE(
      PublishOk(port(0), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":2}}})"));
  ASSERT_TRUE(
      PublishOk(port(0), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":3}}})"));
  int hints = 0;  // B was cut off: it tells its listener to re-read mem://k (once), around these
  for (std::int64_t want : {10, 2, 3}) {
    auto m = NextNotHint(b, &hints, kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << "exactly once, in the publisher's order";
  }
  ASSERT_TRUE(PollMetricEq(port(1), "mcpfan_backplane_reread_hints_total", 1));
  if (hints == 0) {
    auto hint = b.NextMessage(kIo, &err);
    ASSERT_TRUE(hint) << err;
    EXPECT_TRUE(hint->Has({"params", "_meta", "mcpfan/reread"})) << hint->text();
  }
  EXPECT_TRUE(PollMetricEq(port(0), "mcpfan_backplane_lag_seconds", 0)) << "nothing waits any more";
  EXPECT_FALSE(b.ended()) << "the stream survived the outage";
}

// The outage policy: while NATS is unreachable, notifications for other nodes wait in a
// bounded buffer; a publish that would not fit is refused whole (503, Retry-After) and not
// delivered locally either.
TEST(NatsOutage, AFullOutageBufferRefusesThePublishWhole) {
  auto nats = std::make_unique<NatsServer>();
  ASSERT_TRUE(nats->ok()) << nats->error();
  const int nats_port = nats->port();
  ServerProcess node({"--nats", nats->url(), "--node-name", "solo", "--nats-outage-buffer-bytes", "65536"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  SseStream s;
  ASSERT_TRUE(OpenListen(s, node.port(), R"("x")", R"({"resourceSubscriptions":["mem://x"]})"));
  nats->Kill9();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 0));
  const std::string pad(4000, 'p');
  int accepted = 0;
  std::optional<HttpResponse> refused;
  for (int i = 0; i < 100 && !refused; ++i) {  // 64 KiB hold about 15 of these
    auto r = Publish(node.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://y","pad":")" +
                                      pad + R"("}})");
    ASSERT_TRUE(r);
    if (r->status == 503) refused = r;
    else ASSERT_EQ(r->status, 202) << r->body;
    accepted += r->status == 202;
  }
  ASSERT_TRUE(refused) << "the outage buffer never filled";
  EXPECT_GT(accepted, 5);
  EXPECT_TRUE(refused->Get("retry-after")) << "a refusal says when to retry";
  EXPECT_NE(refused->body.find("outage buffer"), std::string::npos) << refused->body;
  // Refused whole: not delivered here either.
  auto to_x = Publish(node.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","pad":")" +
                                       pad + R"(","_meta":{"n":0}}})");
  ASSERT_TRUE(to_x);
  EXPECT_EQ(to_x->status, 503);
  EXPECT_TRUE(PollMetric(node.port(), "mcpfan_backplane_refused_total", [](double v) { return v >= 2; }));
  // Back: the queue drains, publishing works, and the listen's first message is the new one.
  nats = std::make_unique<NatsServer>(nats_port);
  ASSERT_TRUE(nats->ok()) << nats->error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1, Ms(15000)));
  // What waited goes out a settle delay after the reconnect; then there is room again.
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_queued", 0));
  ASSERT_TRUE(PublishOk(node.port(),
                        R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","_meta":{"n":1}}})"));
  std::string err;
  auto m = NextNotHint(s, nullptr, kIo, &err);  // the outage's re-read hint may come first
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), 1)
      << "the refused publish must not have been delivered: " << m->text();
}

// Two nats-servers in a cluster, and every kind of client on nodes attached to either:
// interest crosses the route per subject, a publish reaches a 2025 session and a stdio client
// on other nodes exactly once, and a node killed with -9 takes only its own streams and its
// interest with it.
TEST(NatsCluster, EveryKindOfClientAcrossTwoServersAndANodeKilled) {
  NatsServer n1(-1, "-");
  ASSERT_TRUE(n1.ok()) << n1.error();
  NatsServer n2(-1, n1.route_url());
  ASSERT_TRUE(n2.ok()) << n2.error();
  ASSERT_TRUE(Eventually([&] { return n1.Routes() >= 1 && n2.Routes() >= 1; }, "the cluster route"));
  ServerProcess a({"--nats", n1.url(), "--node-name", "A", "--nats-linger-ms", "100"});
  ServerProcess b({"--nats", n2.url(), "--node-name", "B", "--nats-linger-ms", "100"});
  StdioChild c({"--nats", n2.url(), "--node-name", "C", "--nats-linger-ms", "100"});
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_TRUE(c.ok()) << c.error();
  for (int p : {a.port(), b.port(), c.port()}) ASSERT_TRUE(PollMetricEq(p, "mcpfan_backplane_connected", 1));

  // B: a 2025 session subscribed to mem://s. C: a stdio client listening for tools and mem://s.
  std::string sid;
  ASSERT_TRUE(Initialize(b.port(), &sid));
  SseStream session;
  ASSERT_TRUE(OpenSessionStream(session, b.port(), sid));
  ASSERT_TRUE(SessionSubscribe(b.port(), sid, "mem://s"));
  std::string err;
  ASSERT_TRUE(c.io().SendLine(StdioListen(R"("c")", R"({"toolsListChanged":true,"resourceSubscriptions":["mem://s"]})"),
                              kIo, &err))
      << err;
  auto ack = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(ack) << err;
  ASSERT_TRUE(IsAck(*ack, R"("c")"));
  // A 2025 session gets every list_changed kind (3 subjects) plus its URI.
  ASSERT_TRUE(Eventually([&] { return n2.Subscriptions("B").size() == 4 && n2.Subscriptions("C").size() == 2; },
                         "B's and C's subjects at their server"));
  EXPECT_TRUE(n1.Subscriptions("A").empty()) << "A subscribes to nothing";

  // Published on A (the other server): each reaches B's session and C once, across the route.
  // Interest crosses the route asynchronously: publish until the first arrives, with distinct
  // numbers, then check that every later one arrived exactly once.
  std::int64_t first = -1;
  for (int n = 0; n < 200 && first < 0; ++n) {
    ASSERT_TRUE(
        PublishOk(a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://s","_meta":{"n":)" +
                                std::to_string(n) + "}}}"));
    if (auto m = session.NextMessage(Ms(50))) first = m->GetInt({"params", "_meta", "n"}).value_or(-1);
  }
  ASSERT_GE(first, 0) << "nothing crossed the cluster";
  ASSERT_TRUE(PublishOk(
      a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://s","_meta":{"n":1000}}})"));
  ASSERT_TRUE(PublishOk(a.port(), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"n":1001}}})"));
  // B's session: the later ones, in order, ending with 1000 (tools is not in a session's URI set,
  // but a 2025 session gets every list_changed kind).
  std::vector<std::int64_t> at_b;
  while (at_b.empty() || at_b.back() < 1001) {
    auto m = session.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_FALSE(m->Has({"params", "_meta", std::string(kSubId)})) << "2025 notifications carry no subscriptionId";
    at_b.push_back(m->GetInt({"params", "_meta", "n"}).value_or(-1));
  }
  for (std::size_t i = 1; i < at_b.size(); ++i) {
    if (at_b[i] < 1000) {
      EXPECT_EQ(at_b[i], at_b[i - 1] + 1) << "once, in order";
    }
  }
  EXPECT_EQ(at_b.end()[-2], 1000);
  // C: the same sequence on its stdio, with its subscriptionId.
  std::int64_t last = -1;
  while (last < 1001) {
    auto m = c.io().NextJson(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetString({"params", "_meta", std::string(kSubId)}), "c");
    std::int64_t n = m->GetInt({"params", "_meta", "n"}).value_or(-1);
    if (last >= 0 && last < 1000) {
      EXPECT_TRUE(n == last + 1 || n == 1000) << "once, in order: " << last << " then " << n;
    }
    last = n;
  }

  // C killed with -9: its interest leaves the server with its connection; A and B go on.
  ASSERT_TRUE(c.Signal(SIGKILL));
  ASSERT_TRUE(c.WaitExit(kIo));
  ASSERT_TRUE(Eventually([&] {
    auto names = n2.Clients();
    return std::find(names.begin(), names.end(), "C") == names.end();
  }, "C's connection gone from its server"));
  ASSERT_TRUE(PublishOk(
      a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://s","_meta":{"n":2000}}})"));
  auto after = session.NextMessage(kIo, &err);
  ASSERT_TRUE(after) << err;
  EXPECT_EQ(after->GetInt({"params", "_meta", "n"}), 2000);
}

// Tenants stay apart across nodes: tenant t1's publish reaches t1's listen on another node
// and not t2's listen on the same URI; each node's NATS interest names its own tenant only.
TEST(NatsTenants, APublishCrossesNodesOnlyToItsTenant) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  TempDir dir;
  const std::string secret = "nats-tenant-test-secret-0123456789abcdef";
  std::ofstream(dir.path() + "/secret") << secret << "\n";
  auto node = [&](const char* name) {
    return std::make_unique<ServerProcess>(std::vector<std::string>{"--nats", nats.url(), "--node-name", name,
                                                                    "--jwt-secret-file", dir.path() + "/secret"});
  };
  auto a = node("A"), b = node("B"), c = node("C");
  for (auto* n : {a.get(), b.get(), c.get()}) {
    ASSERT_TRUE(n->ok()) << n->error();
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  SseStream at_b, at_c;
  ASSERT_TRUE(ListenAsTenant(at_b, b->port(), secret, "t1", "mem://shared"));
  ASSERT_TRUE(ListenAsTenant(at_c, c->port(), secret, "t2", "mem://shared"));
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B").size() == 1 && nats.Subscriptions("C").size() == 1; },
                         "B's and C's subjects"));
  EXPECT_TRUE(HasSubject(nats.Subscriptions("B"), ".v1.t1.r."));
  EXPECT_TRUE(HasSubject(nats.Subscriptions("C"), ".v1.t2.r."));
  // Published on A (no publisher keys configured: any tenant may be named there).
  ASSERT_TRUE(PublishOk(
      a->port(),
      R"({"tenant":"t1","method":"notifications/resources/updated","params":{"uri":"mem://shared","_meta":{"n":1}}})"));
  ASSERT_TRUE(PublishOk(
      a->port(),
      R"({"tenant":"t2","method":"notifications/resources/updated","params":{"uri":"mem://shared","_meta":{"n":2}}})"));
  std::string err;
  auto mb = at_b.NextMessage(kIo, &err);
  ASSERT_TRUE(mb) << err;
  EXPECT_EQ(mb->GetInt({"params", "_meta", "n"}), 1) << "t1's listen gets t1's publish only";
  auto mc = at_c.NextMessage(kIo, &err);
  ASSERT_TRUE(mc) << err;
  EXPECT_EQ(mc->GetInt({"params", "_meta", "n"}), 2) << "t2's listen gets t2's publish only";
  EXPECT_TRUE(PollMetricEq(b->port(), "mcpfan_backplane_received_total", 1)) << "B's interest is t1's only";
  EXPECT_TRUE(PollMetricEq(c->port(), "mcpfan_backplane_received_total", 1));
}

}  // namespace
}  // namespace itest

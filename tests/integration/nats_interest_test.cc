// The backplane's ingress rules and its interest as the NATS server sees it (docs/operations.md "Interest"):
// debouncing happens once, on the node that accepts a publish, so a suppressed update never
// crosses the backplane and a receiving node does not hold it again; subscribe/unsubscribe
// churn within the linger sends no SUB/UNSUB to NATS (counted by the server itself, /subsz);
// a node killed with -9 takes its interest out of the server; at --nats-max-subjects a
// tenant's subjects are folded into one and nothing is missed.
#include <signal.h>

#include <fstream>

#include "harness.h"
#include "nats_server.h"
#include "stdio_client.h"  // TempDir

namespace itest {
namespace {

// A publishes 5 updates of one key in one body; A debounces (400 ms) and B, where the only
// listener is, is configured with a debounce it must not apply to what arrives over NATS (an
// hour). The listener gets the first update at once and the newest after A's interval, and
// B receives exactly those two messages. The tenant has no clients on A: the debouncer keys
// forwarded notifications by tenant name.
TEST(NatsIngress, DebouncingHappensOnceWhereThePublishIsAccepted) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  TempDir dir;
  const std::string secret = "nats-ingress-test-secret-0123456789abcdef";
  std::ofstream(dir.path() + "/secret") << secret << "\n";
  ServerProcess a({"--nats", nats.url(), "--node-name", "A", "--debounce-ms", "400"});
  ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--debounce-ms", "3600000", "--jwt-secret-file",
                   dir.path() + "/secret"});
  for (ServerProcess* n : {&a, &b}) {
    ASSERT_TRUE(n->ok()) << n->error();
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  SseStream s;
  ASSERT_TRUE(ListenAsTenant(s, b.port(), secret, "t1", "mem://hot"));
  std::string err;
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B").size() == 1; }, "B's subject at NATS"));

  std::string burst = "[";
  for (int n = 1; n <= 5; ++n) {
    if (n > 1) burst += ",";
    burst += R"({"tenant":"t1","method":"notifications/resources/updated","params":{"uri":"mem://hot","_meta":{"n":)" +
             std::to_string(n) + "}}}";
  }
  burst += "]";
  ASSERT_TRUE(PublishOk(a.port(), burst, 5));
  for (std::int64_t want : {1, 5}) {
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "update " << want << " did not arrive (held again on B?): " << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << m->text();
  }
  EXPECT_TRUE(PollMetricEq(a.port(), "mcpfan_debounce_suppressed_total", 3));
  EXPECT_TRUE(PollMetricEq(a.port(), "mcpfan_backplane_sent_total", 2)) << "suppressed updates never leave A";
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_received_total", 2));
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_debounce_suppressed_total", 0)) << "B does not debounce what A debounced";
}

// Churn: a subject whose subscribers come and go within the linger costs NATS nothing (the
// server's own insert/remove counters do not move); then the node is killed with -9 and its
// interest leaves the server with its connection.
TEST(NatsInterest, ChurnWithinTheLingerSendsNoSubOrUnsubAndAKilledNodesInterestLeaves) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  const std::int64_t subs_without_b = nats.Subsz("num_subscriptions");
  ASSERT_GE(subs_without_b, 0) << "no /subsz";
  ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--nats-linger-ms", "600000"});
  ASSERT_TRUE(b.ok()) << b.error();
  ASSERT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_connected", 1));
  // B's first subscription is its heartbeat subject, whatever its listeners need.
  ASSERT_TRUE(Eventually([&] { return nats.Subsz("num_subscriptions") == subs_without_b + 1; }, "B's heartbeat SUB"));
  const std::int64_t subs_before = subs_without_b + 1;
  {
    SseStream first;
    ASSERT_TRUE(OpenListen(first, b.port(), R"("0")", R"({"resourceSubscriptions":["mem://churn"]})"));
    ASSERT_TRUE(Eventually([&] { return nats.Subsz("num_subscriptions") == subs_before + 1; }, "B's first SUB"));
  }
  const std::int64_t inserts = nats.Subsz("num_inserts");
  const std::int64_t removes = nats.Subsz("num_removes");
  for (int i = 1; i <= 20; ++i) {  // each stream closes before the next opens
    SseStream s;
    ASSERT_TRUE(
        OpenListen(s, b.port(), "\"" + std::to_string(i) + "\"", R"({"resourceSubscriptions":["mem://churn"]})"));
  }
  // A barrier: the interest thread applies its operations in order, so once this SUB is at
  // the server, any SUB/UNSUB the churn had caused would be there too.
  SseStream barrier;
  ASSERT_TRUE(OpenListen(barrier, b.port(), R"("b")", R"({"resourceSubscriptions":["mem://barrier"]})"));
  ASSERT_TRUE(Eventually([&] { return nats.Subsz("num_subscriptions") == subs_before + 2; }, "the barrier's SUB"));
  EXPECT_EQ(nats.Subsz("num_inserts"), inserts + 1) << "only the barrier was subscribed";
  EXPECT_EQ(nats.Subsz("num_removes"), removes) << "nothing was unsubscribed";
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_sub_ops_total", 2));

  ASSERT_TRUE(b.Signal(SIGKILL));
  ASSERT_TRUE(b.WaitExit(kIo));
  EXPECT_TRUE(
      Eventually([&] { return nats.Subsz("num_subscriptions") == subs_without_b; }, "B's interest leaving the server"));
}

// At the subject bound (3 here) the node folds the tenant into `<prefix>.v1.<tenant>.>`: the
// server then holds that one subject for it, every subscribed URI still receives what is
// published elsewhere, and what nobody here subscribed to arrives but is dropped and counted.
TEST(NatsInterest, AtTheSubjectBoundATenantIsFoldedAndNothingIsMissed) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  ServerProcess a({"--nats", nats.url(), "--node-name", "A"});
  ServerProcess b({"--nats", nats.url(), "--node-name", "B", "--nats-max-subjects", "3"});
  for (ServerProcess* n : {&a, &b}) {
    ASSERT_TRUE(n->ok()) << n->error();
    ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  SseStream s;
  ASSERT_TRUE(OpenListen(s, b.port(), R"("f")",
                         R"({"resourceSubscriptions":["mem://1","mem://2","mem://dir/"],"toolsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_compacted_tenants", 1));
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B") == std::vector<std::string>{"mcpfan.v1.default.>"}; },
                         "B's one folded subject at the server"))
      << "B holds: " << ::testing::PrintToString(nats.Subscriptions("B"));
  const char* uris[] = {"mem://1", "mem://2", "mem://dir/x/y", "mem://other"};
  for (int n = 0; n < 4; ++n) {
    ASSERT_TRUE(PublishOk(a.port(), R"({"method":"notifications/resources/updated","params":{"uri":")" +
                                        std::string(uris[n]) + R"(","_meta":{"n":)" + std::to_string(n) + "}}}"));
  }
  ASSERT_TRUE(PublishOk(a.port(), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"n":4}}})"));
  std::string err;
  for (std::int64_t want : {0, 1, 2, 4}) {  // mem://other (3) is nobody's here
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << m->text();
  }
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_received_total", 5));
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_unmatched_total", 1))
      << "mem://other: folded over-match, dropped";
}

}  // namespace
}  // namespace itest

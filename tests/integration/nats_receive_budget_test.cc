// Receive-side memory (docs/operations.md "Receive-side memory"): one byte budget for what a node has received from
// other nodes and not yet delivered (--nats-receive-buffer-bytes). A message that does not fit is dropped and counted
// by reason (receive_budget) in /metrics and /healthz, and the budget is given back once the
// worker loops have matched what it held, so the next messages are delivered again.
#include "harness.h"
#include "nats_server.h"

namespace itest {
namespace {

std::string Update(int n, std::size_t pad) {
  return R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","pad":")" + std::string(pad, 'p') +
         R"(","_meta":{"n":)" + std::to_string(n) + "}}}";
}

TEST(NatsReceiveBudget, AMessagePastTheBudgetIsDroppedAndCountedAndTheBudgetComesBack) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  ServerProcess a(NodeArgs(nats, "A"));
  auto b_args = NodeArgs(nats, "B");
  b_args.insert(b_args.end(), {"--nats-receive-buffer-bytes", "65536", "--shard-inbox-max", "1024"});
  ServerProcess b(b_args);
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  for (auto* n : {&a, &b}) ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  SseStream s;
  ASSERT_TRUE(OpenListen(s, b.port(), R"("x")", R"({"resourceSubscriptions":["mem://x"]})"));
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B").size() == 1; }, "B's subject at the NATS server"));
  // 40,000 bytes on the wire (under nats.c's per-subscription bound, which is the same 64 KiB)
  // become two encodings of them at B: past the budget.
  ASSERT_TRUE(PublishOk(a.port(), Update(1, 10)));
  ASSERT_TRUE(PublishOk(a.port(), Update(2, 40000)));
  ASSERT_TRUE(PublishOk(a.port(), Update(3, 10)));
  std::string err;
  for (int want : {1, 3}) {
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << m->text().substr(0, 200);
  }
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_rejected_total{reason=\"receive_budget\"}", 1));
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_backplane_receive_bytes", 0)) << "given back once matched";
  EXPECT_TRUE(PollMetricEq(b.port(), "mcpfan_shard_inbox_depth", 0));
  auto health = Roundtrip(b.port(), BuildRequest("GET", "/status.json", {}));  // the health JSON
  ASSERT_TRUE(health);
  EXPECT_NE(health->body.find(R"("receive_budget":1)"), std::string::npos) << health->body.substr(0, 2000);
}

}  // namespace
}  // namespace itest

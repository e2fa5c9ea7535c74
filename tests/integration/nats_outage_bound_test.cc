// The outage queue (docs/operations.md "Outage policy") never passes --nats-outage-buffer-bytes. Updates the
// debouncer holds were admitted against the bound and later queued with no second check, so
// a node cut off from NATS ended up holding about twice its bound. Now a publish reserves its
// bytes when it is admitted, and gives them back when it is sent or suppressed.
#include "harness.h"
#include "nats_server.h"

namespace itest {
namespace {

std::string Update(int key, int n, const std::string& pad) {
  return R"({"method":"notifications/resources/updated","params":{"uri":"mem://k)" + std::to_string(key) +
         R"(","pad":")" + pad + R"(","_meta":{"n":)" + std::to_string(n) + "}}}";
}

TEST(NatsOutageBound, WhatTheDebouncerHoldsCountsAgainstTheBound) {
  constexpr int kBound = 65536;
  const std::string pad(4000, 'p');  // each notification costs more than 4,000 bytes of the bound
  auto nats = std::make_unique<NatsServer>();
  ASSERT_TRUE(nats->ok()) << nats->error();
  ServerProcess node({"--nats", nats->url(), "--node-name", "solo", "--nats-outage-buffer-bytes",
                      std::to_string(kBound), "--debounce-ms", "3000"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  nats->Kill9();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 0));
  // Two updates per key: the first leaves the debouncer at once (into the outage queue), the
  // second is held for the interval. Until a publish is refused.
  int accepted = 0, held = 0;
  bool refused = false;
  for (int key = 0; key < 40 && !refused; ++key) {  // 64 KiB hold fewer than 16 of these
    for (int n = 0; n < 2 && !refused; ++n) {
      auto r = Publish(node.port(), Update(key, n, pad));
      ASSERT_TRUE(r);
      if (r->status == 503) {
        refused = true;
        break;
      }
      ASSERT_EQ(r->status, 202) << r->body;
      ++accepted;
      held += n;
    }
  }
  ASSERT_TRUE(refused) << "the outage bound never refused a publish";
  ASSERT_GT(held, 0);
  // The held updates go out when their interval has passed, into the same queue.
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_debounce_trailing_total", held));
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_queued", accepted));
  auto queued = ReadMetric(node.port(), "mcpfan_backplane_queued");
  ASSERT_TRUE(queued);
  EXPECT_LE(*queued * 4000, kBound) << accepted << " notifications of over 4,000 bytes each wait for other nodes, "
                                    << held << " of them admitted while the debouncer held them";
  auto bytes = ReadMetric(node.port(), "mcpfan_backplane_held_bytes");
  ASSERT_TRUE(bytes);
  EXPECT_LE(*bytes, kBound);
  EXPECT_GT(*bytes, kBound / 2);
}

}  // namespace
}  // namespace itest

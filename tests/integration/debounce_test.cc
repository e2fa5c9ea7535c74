// --debounce-ms against the real binary: a burst of updates to one URI reaches a stream as
// its first and newest members, and every update is either delivered or counted.
#include "harness.h"

namespace itest {
namespace {

std::string Update(int seq) {
  return R"({"method":"notifications/resources/updated","params":{"uri":"file:///hot","_meta":{"test/seq":)" +
         std::to_string(seq) + "}}}";
}

TEST(Debounce, BurstDeliversNewestAndCountsTheRest) {
  ServerProcess srv({"--workers", "2", "--debounce-ms", "200"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), "1", R"({"resourceSubscriptions":["file:///hot"]})"));
  constexpr int kN = 40;
  for (int i = 0; i < kN; ++i) ASSERT_TRUE(PublishOk(srv.port(), Update(i)));

  // Read until the newest update arrives (bounded), recording every seq delivered.
  std::vector<int64_t> seqs;
  while (seqs.empty() || seqs.back() != kN - 1) {
    std::string err;
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "newest update never arrived: " << err << "; got " << seqs.size();
    auto seq = m->GetInt({"params", "_meta", "test/seq"});
    ASSERT_TRUE(seq) << m->text();
    seqs.push_back(*seq);
  }
  EXPECT_EQ(seqs.front(), 0) << "a quiet URI's first update goes out at once";
  for (std::size_t i = 1; i < seqs.size(); ++i) EXPECT_LT(seqs[i - 1], seqs[i]) << "publish order";
  auto suppressed = ReadMetric(srv.port(), "mcpfan_debounce_suppressed_total");
  ASSERT_TRUE(suppressed);
  EXPECT_EQ(static_cast<double>(seqs.size()) + *suppressed, kN) << "each update is delivered or counted";
}

TEST(Debounce, OffByDefault) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), "1", R"({"resourceSubscriptions":["file:///hot"]})"));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(PublishOk(srv.port(), Update(i)));
  for (int i = 0; i < 5; ++i) {
    std::string err;
    auto m = s.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "test/seq"}), i);
  }
}

}  // namespace
}  // namespace itest

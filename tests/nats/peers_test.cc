// Heartbeats between nodes (nats/peers.h): the body as sent and read back, every refusal of a
// body, and the misses a PeerTable reads from what it hears: a skipped sequence, a peer's own
// faults, a peer first heard late, silence; and its bounds (peers tracked, silent ones forgotten).
#include "nats/peers.h"

#include <gtest/gtest.h>

#include <string>

namespace mcpfan::detail::nats {
namespace {

using Miss = PeerTable::Miss;

Heartbeat beat(std::uint64_t instance, std::uint64_t seq, std::uint64_t faults = 0, std::uint64_t interval = 500) {
  return Heartbeat{instance, "n" + std::to_string(instance), seq, faults, 0, interval};
}

TEST(Heartbeat, ReadsBackWhatItWrites) {
  Heartbeat hb{0x0123456789abcdefULL, "node \"one\"", 42, 3, 1000, 500};
  const std::string body = encode_heartbeat(hb);
  EXPECT_EQ(body,
            R"({"instance":"0123456789abcdef","node":"node \"one\"","seq":42,"faults":3,"sent":1000,"interval_ms":500})");
  std::optional<Heartbeat> back = decode_heartbeat(body);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->instance, hb.instance);
  EXPECT_EQ(back->node, hb.node);
  EXPECT_EQ(back->seq, 42u);
  EXPECT_EQ(back->faults, 3u);
  EXPECT_EQ(back->sent, 1000u);
  EXPECT_EQ(back->interval_ms, 500u);
}

TEST(Heartbeat, ALongNodeNameIsCutSoTheBodyStaysWithinItsBound) {
  Heartbeat hb{1, std::string(1000, 'x'), 1, 0, 0, 500};
  const std::string body = encode_heartbeat(hb);
  EXPECT_LE(body.size(), kMaxHeartbeatBytes);
  std::optional<Heartbeat> back = decode_heartbeat(body);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->node, std::string(kMaxHeartbeatNodeBytes, 'x'));
}

TEST(Heartbeat, RefusesWhatItWouldNotWrite) {
  const std::string ok = R"({"instance":"00000000000000ff","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":500})";
  ASSERT_TRUE(decode_heartbeat(ok));
  for (const std::string& bad : {
           std::string(),
           std::string("not json"),
           std::string("[1,2]"),
           std::string(R"({"instance":"ff","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"000000000000000g","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"0000000000000000","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"00000000000000ff","node":1,"seq":1,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":0,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":-1,"faults":0,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":1,"sent":0,"interval_ms":500})"),
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":0})"),
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":1,"faults":0,"sent":0})"),
           std::string(R"({"instance":"00000000000000ff","node":")") + std::string(600, 'x') + "\"}",
           std::string(R"({"instance":"00000000000000ff","node":"a","seq":1,"faults":0,"sent":0,"interval_ms":5,)"
                       R"("leaving":1})"),
       }) {
    EXPECT_FALSE(decode_heartbeat(bad)) << bad;
  }
}

TEST(PeerTable, ConsecutiveHeartbeatsRevealNothing) {
  PeerTable t(1, {});
  t.listening(1000);
  EXPECT_EQ(t.heard(beat(2, 1), 1100), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 2), 1600), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 3), 2100), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 3), 2150), Miss::None) << "a repeat";
  EXPECT_EQ(t.heard(beat(2, 2), 2160), Miss::None) << "an older one";
  const PeerTable::Stats s = t.stats();
  EXPECT_EQ(s.peers, 1u);
  EXPECT_EQ(s.heard, 5u);
  EXPECT_EQ(s.gaps + s.faults + s.late + s.silences, 0u);
}

TEST(PeerTable, ASkippedSequenceIsAGap) {
  PeerTable t(1, {});
  t.listening(1000);
  EXPECT_EQ(t.heard(beat(2, 1), 1100), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 4), 1200), Miss::Gap);
  EXPECT_EQ(t.heard(beat(2, 5), 1700), Miss::None);
  EXPECT_EQ(t.stats().gaps, 1u);
}

TEST(PeerTable, APeersOwnFaultsAreAMissEachTimeTheyGrow) {
  PeerTable t(1, {});
  t.listening(1000);
  EXPECT_EQ(t.heard(beat(2, 1, 0), 1100), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 2, 1), 1600), Miss::Faults);
  EXPECT_EQ(t.heard(beat(2, 3, 1), 2100), Miss::None);
  EXPECT_EQ(t.heard(beat(2, 4, 3), 2600), Miss::Faults);
  EXPECT_EQ(t.stats().faults, 2u);
}

TEST(PeerTable, AnOriginFirstHeardLateIsAMissButNotRightAfterThisNodeBeganListening) {
  PeerTable t(1, {});
  t.listening(10'000);
  // Just started listening: peers already running are first heard mid-sequence.
  EXPECT_EQ(t.heard(beat(2, 57), 10'400), Miss::None);
  // Two of its intervals later a new origin past its first heartbeat: the first ones were lost.
  EXPECT_EQ(t.heard(beat(3, 4), 11'000), Miss::Late);
  // A peer that starts later begins at 1.
  EXPECT_EQ(t.heard(beat(4, 1), 20'000), Miss::None);
  EXPECT_EQ(t.stats().late, 1u);
}

TEST(PeerTable, ItsOwnHeartbeatIsNotAPeer) {
  PeerTable t(7, {});
  t.listening(1000);
  EXPECT_EQ(t.heard(beat(7, 1), 1100), Miss::None);
  EXPECT_EQ(t.heard(beat(7, 9), 1200), Miss::None);
  EXPECT_EQ(t.stats().peers, 0u);
}

TEST(PeerTable, SilenceAfterFourOfThePeersIntervalsOnceThenForgotten) {
  PeerTable t(1, PeerTable::Limits{.max_peers = 16, .silent_beats = 4, .forget_ms = 60'000});
  t.listening(1000);
  ASSERT_EQ(t.heard(beat(2, 1, 0, 500), 1000), Miss::None);
  ASSERT_EQ(t.heard(beat(3, 1, 0, 2000), 1000), Miss::None);
  EXPECT_EQ(t.sweep(2999), 0u);
  EXPECT_EQ(t.sweep(3000), 1u) << "peer 2: 4 x 500 ms";
  EXPECT_EQ(t.sweep(3500), 0u) << "once";
  EXPECT_EQ(t.stats().silent, 1u);
  EXPECT_EQ(t.sweep(9000), 1u) << "peer 3 by its own interval: 4 x 2000 ms";
  // Back with the next number (it was stopped, and sent nothing meanwhile): nothing more was lost.
  EXPECT_EQ(t.heard(beat(2, 2, 0, 500), 9100), Miss::None);
  EXPECT_EQ(t.stats().silent, 1u);
  // Peer 3 never comes back: forgotten 60 s after it was last heard.
  EXPECT_EQ(t.sweep(60'999), 1u) << "peer 2, silent again";
  EXPECT_EQ(t.stats().peers, 2u);
  EXPECT_EQ(t.sweep(61'000), 0u);
  const PeerTable::Stats s = t.stats();
  EXPECT_EQ(s.peers, 1u);
  EXPECT_EQ(s.forgotten, 1u);
  EXPECT_EQ(s.silences, 3u);
}

TEST(PeerTable, APeerThatSaysItLeavesIsDroppedWithoutASilence) {
  PeerTable t(1, {});
  t.listening(1000);
  ASSERT_EQ(t.heard(beat(2, 1), 1000), Miss::None);
  Heartbeat bye = beat(2, 2);
  bye.leaving = true;
  ASSERT_TRUE(decode_heartbeat(encode_heartbeat(bye))->leaving);
  EXPECT_EQ(t.heard(bye, 1200), Miss::None);
  EXPECT_EQ(t.stats().peers, 0u);
  EXPECT_EQ(t.stats().left, 1u);
  EXPECT_EQ(t.sweep(100'000), 0u) << "no silence for a peer that left";
  // A leaving heartbeat that shows a gap is still a gap.
  ASSERT_EQ(t.heard(beat(3, 1), 2000), Miss::None);
  Heartbeat late_bye = beat(3, 5);
  late_bye.leaving = true;
  EXPECT_EQ(t.heard(late_bye, 2100), Miss::Gap);
  EXPECT_EQ(t.stats().peers, 0u);
}

TEST(PeerTable, NewOriginsPastTheBoundAreRefusedAndCounted) {
  PeerTable t(1, PeerTable::Limits{.max_peers = 3, .silent_beats = 4, .forget_ms = 60'000});
  t.listening(1000);
  for (std::uint64_t i = 2; i <= 10; ++i) EXPECT_EQ(t.heard(beat(i, 1), 1000), Miss::None);
  PeerTable::Stats s = t.stats();
  EXPECT_EQ(s.peers, 3u);
  EXPECT_EQ(s.refused, 6u);
  // A known one is still followed.
  EXPECT_EQ(t.heard(beat(2, 3), 1500), Miss::Gap);
}

}  // namespace
}  // namespace mcpfan::detail::nats

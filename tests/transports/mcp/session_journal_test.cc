// SessionJournal and SessionTap (transports/src/mcp/session_journal.h, sessions.h): event-id
// format and parsing, coalescing per (method, uri), the byte bound and its floor, resumes and
// the re-read answer, and two streams of one session recording from two threads (a GET taking
// over on another worker) — run under ThreadSanitizer in the TSan pass.
#include "mcp/session_journal.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "mcp/sessions.h"
#include "mcpfan/json_text.h"

namespace mcpfan::detail {
namespace {

PayloadRef update(std::string_view uri, int rev = 0) {
  std::string raw_uri, raw_rev = std::to_string(rev);
  append_json_string(raw_uri, uri);
  NotificationParts parts;
  parts.kind = Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params.emplace_back("uri", raw_uri);
  parts.params.emplace_back("rev", raw_rev);
  return encode_notification(parts);
}
// A GET with Last-Event-ID `<tag 7>-<seq>`.
SessionJournal::Resume resume_at(SessionJournal& j, std::uint64_t seq) {
  std::string cursor = format_cursor({7, seq});
  return j.start_live(&cursor);
}
PayloadRef list_changed(Kind k) {
  NotificationParts parts;
  parts.kind = k;
  return encode_notification(parts);
}

TEST(SessionCursor, FormatAndParseRoundTrip) {
  for (Cursor c : {Cursor{0, 0}, Cursor{0xdeadbeef, 1}, Cursor{1, 18446744073709551615ull}}) {
    std::string text = format_cursor(c);
    for (char ch : text) EXPECT_TRUE(ch > 0x20 && ch < 0x7f) << text;
    auto back = parse_cursor(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(back->tag, c.tag);
    EXPECT_EQ(back->seq, c.seq);
  }
  EXPECT_EQ(format_cursor({0xab, 17}), "000000ab-17");
}

TEST(SessionCursor, GarbageIsRejected) {
  for (std::string_view bad : {"", "17", "000000ab", "000000ab-", "000000AB-1", "000000ab-01", "000000ab-+1",
                               "000000ab--1", "000000ab-1 ", " 000000ab-1", "0000000g-1", "000000ab_1",
                               "000000ab-18446744073709551616", "000000ab-1x", "00000000ab-1"}) {
    EXPECT_FALSE(parse_cursor(bad)) << bad;
  }
  std::string nul("000000ab-1\0", 11);
  EXPECT_FALSE(parse_cursor(nul));
}

TEST(SessionCursor, AProxiedSessionsIdCarriesTheUpstreamsAfterATilde) {
  auto c = parse_cursor("000000ab-17~_GET_stream_1795_x~y");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->tag, 0xabu);
  EXPECT_EQ(c->seq, 17u);
  EXPECT_EQ(upstream_event_id("000000ab-17~_GET_stream_1795_x~y").value_or("?"), "_GET_stream_1795_x~y");
  EXPECT_EQ(upstream_event_id("000000ab-17~").value_or("?"), "");
  EXPECT_FALSE(upstream_event_id("000000ab-17"));            // mcpfan's alone
  EXPECT_FALSE(upstream_event_id("post-stream-5~000000ab-1"));  // not a cursor of ours
  EXPECT_FALSE(parse_cursor("~000000ab-1"));
  EXPECT_TRUE(carriable_event_id("up-1"));
  EXPECT_FALSE(carriable_event_id(""));
  EXPECT_FALSE(carriable_event_id("a b"));
  EXPECT_FALSE(carriable_event_id(std::string(257, 'a')));
}

TEST(SessionJournal, NumbersEveryRecordAndSendsOnlyLive) {
  SessionJournal j(7, 1 << 20);
  std::size_t ev = 0;
  EXPECT_EQ(j.record(update("a"), true, ev), 1u);
  EXPECT_EQ(j.record(update("b"), false, ev), std::nullopt);  // parked: recorded only
  EXPECT_EQ(j.record(update("c"), true, ev), 3u);
  EXPECT_EQ(j.last(), 3u);
  EXPECT_EQ(j.size(), 3u);
}

TEST(SessionJournal, CoalescesPerMethodAndUri) {
  SessionJournal j(7, 1 << 20);
  std::size_t ev = 0;
  auto a3 = update("a", 3);
  (void)j.record(update("a", 1), false, ev);
  (void)j.record(update("b", 1), false, ev);
  (void)j.record(update("a", 2), false, ev);
  (void)j.record(list_changed(Kind::ToolsListChanged), false, ev);
  (void)j.record(a3, false, ev);
  (void)j.record(list_changed(Kind::ToolsListChanged), false, ev);
  (void)j.record(list_changed(Kind::PromptsListChanged), false, ev);
  EXPECT_EQ(j.size(), 4u);  // a, b, tools, prompts
  auto r = resume_at(j, 0);
  ASSERT_FALSE(r.reread);
  EXPECT_EQ(r.prime, 0u);
  ASSERT_EQ(r.events.size(), 4u);
  // In number order: b (2), a (5), tools (6), prompts (7).
  EXPECT_EQ(r.events[0].first, 2u);
  EXPECT_EQ(r.events[0].second->uri(), "b");
  EXPECT_EQ(r.events[1].first, 5u);
  EXPECT_EQ(r.events[1].second.get(), a3.get());
  EXPECT_EQ(r.events[2].second->kind(), Kind::ToolsListChanged);
  EXPECT_EQ(r.events[3].second->kind(), Kind::PromptsListChanged);
}

TEST(SessionJournal, ResumeReturnsOnlyWhatFollowsTheCursor) {
  SessionJournal j(7, 1 << 20);
  std::size_t ev = 0;
  for (int i = 0; i < 5; ++i) (void)j.record(update("u" + std::to_string(i)), true, ev);
  auto r = resume_at(j, 3);
  ASSERT_FALSE(r.reread);
  EXPECT_EQ(r.prime, 3u);
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].first, 4u);
  EXPECT_EQ(r.events[1].first, 5u);
  EXPECT_TRUE(resume_at(j, 5).events.empty());
  // Without a cursor: nothing replayed, the priming id is the newest number.
  auto fresh = j.start_live(nullptr);
  EXPECT_FALSE(fresh.reread);
  EXPECT_TRUE(fresh.events.empty());
  EXPECT_EQ(fresh.prime, 5u);
}

TEST(SessionJournal, ForeignMalformedAndFutureCursorsGetReread) {
  SessionJournal j(7, 1 << 20);
  std::size_t ev = 0;
  (void)j.record(update("a"), true, ev);
  for (std::string bad : {format_cursor({8, 1}), format_cursor({7, 2}), std::string("junk"), std::string()}) {
    auto r = j.start_live(&bad);
    EXPECT_TRUE(r.reread) << bad;
    EXPECT_TRUE(r.events.empty()) << bad;
    EXPECT_EQ(r.prime, j.last()) << bad;
  }
}

TEST(SessionJournal, ByteBoundEvictsOldestAndRaisesTheFloor) {
  const std::size_t frame = update("u00").get()->plain(Framing::Sse).size() + SessionJournal::kEntryOverhead;
  SessionJournal j(7, 3 * frame);
  std::size_t ev = 0, total = 0;
  for (int i = 10; i < 16; ++i) {
    (void)j.record(update("u" + std::to_string(i)), false, ev);
    total += ev;
  }
  EXPECT_EQ(total, 3u);
  EXPECT_EQ(j.size(), 3u);
  EXPECT_LE(j.bytes(), 3 * frame);
  EXPECT_EQ(j.floor(), 3u);  // entries 1..3 went
  EXPECT_TRUE(resume_at(j, 2).reread);
  auto r = resume_at(j, 3);  // saw entry 3: nothing it missed is gone
  ASSERT_FALSE(r.reread);
  EXPECT_EQ(r.events.size(), 3u);
  // An entry larger than the whole bound is sent live but not kept.
  SessionJournal tiny(7, 10);
  EXPECT_EQ(tiny.record(update("big"), true, ev), 1u);
  EXPECT_EQ(ev, 1u);
  EXPECT_EQ(tiny.size(), 0u);
  EXPECT_EQ(tiny.floor(), 1u);
}

TEST(SessionJournal, SameNotificationFromTwoStreamsIsRecordedOnceAndSentOnce) {
  SessionJournal j(7, 1 << 20);
  std::size_t ev = 0;
  auto p = update("a", 1), q = update("b", 1);
  (void)j.start_live(nullptr);
  // Parked first, then live: sent on the live stream under the number it was recorded with.
  EXPECT_EQ(j.record(p, false, ev), std::nullopt);
  EXPECT_EQ(j.record(p, true, ev), 1u);
  // Live first, then parked: nothing more.
  EXPECT_EQ(j.record(q, true, ev), 2u);
  EXPECT_EQ(j.record(q, false, ev), std::nullopt);
  EXPECT_EQ(j.record(q, true, ev), std::nullopt);  // never twice on the live stream
  // Recorded parked, then something newer sent live: renumbered to keep ids increasing.
  auto r = update("c", 1), s = update("d", 1);
  EXPECT_EQ(j.record(r, false, ev), std::nullopt);  // 3
  EXPECT_EQ(j.record(s, true, ev), 4u);
  EXPECT_EQ(j.record(r, true, ev), 5u);
  EXPECT_EQ(j.size(), 4u);
}

// Two taps of one session on two threads, as when a GET on worker B takes over the session
// parked on worker A: both streams match the same notifications until A's stream closes.
// Each notification must be sent once on the live tap, with increasing ids. TSan checks the
// locking.
TEST(SessionTap, ParkedAndLiveTapsOnTwoThreadsSendEachNotificationOnce) {
  Limits limits({}, 2);
  SessionRegistry reg(limits, 16, 8);
  std::optional<Limit> refused;
  StreamUsage usage;
  ASSERT_FALSE(StreamUsage::acquire(limits, kDefaultTenant, 0, usage));
  auto s = reg.create(kDefaultTenant, "2025-11-25", 0, {}, std::move(usage), refused);
  ASSERT_TRUE(s);
  constexpr int kN = 2000;
  std::vector<PayloadRef> ps;
  for (int i = 0; i < kN; ++i) ps.push_back(update("u" + std::to_string(i)));
  SessionTap parked(s, 0);
  SessionTap live(s, 1);
  {
    std::lock_guard lock(s->mu);
    s->live_epoch = 1;
    (void)s->journal.start_live(nullptr);
  }
  std::vector<std::string> live_ids;
  std::thread a([&] {
    for (auto& p : ps) EXPECT_FALSE(parked.record(p));
  });
  std::thread b([&] {
    for (auto& p : ps) {
      if (auto id = live.record(p)) live_ids.push_back(*id);
    }
  });
  a.join();
  b.join();
  ASSERT_EQ(live_ids.size(), static_cast<std::size_t>(kN));
  std::uint64_t prev = 0;
  for (const auto& line : live_ids) {
    ASSERT_EQ(line.substr(0, 4), "id: ");
    auto c = parse_cursor(std::string_view(line).substr(4, line.size() - 5));
    ASSERT_TRUE(c) << line;
    EXPECT_GT(c->seq, prev) << line;
    prev = c->seq;
  }
  EXPECT_EQ(s->counters.journaled.load(), static_cast<std::uint64_t>(kN));
}

}  // namespace
}  // namespace mcpfan::detail

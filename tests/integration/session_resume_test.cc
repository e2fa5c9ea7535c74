// Resumable 2025 sessions (docs/protocol.md "Resumable 2025 sessions"): event ids on a
// session's GET stream, the priming event, Last-Event-ID replay of the newest notification
// per (method, uri) missed while the client was away, the re-read answer for a cursor that
// cannot be resumed (too old, another session's, malformed, from the future), a resuming GET
// that takes over a stream (also on another worker) without loss, and parking ended by DELETE
// and expiry.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "session_client.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

// The sequence number of an event id `<8 hex>-<decimal>` (0 if malformed).
uint64_t SeqOf(const std::string& id) {
  auto dash = id.find('-');
  if (dash != 8 || dash + 1 >= id.size()) return 0;
  return std::stoull(id.substr(dash + 1));
}

struct Got {
  std::string id;
  Json msg;
};

// The next message, with its id; fails when it has none.
::testing::AssertionResult NextWithId(SseStream& s, Got& out, Ms timeout = kIo) {
  std::string err;
  auto m = s.NextMessage(timeout, &err);
  if (!m) return ::testing::AssertionFailure() << err;
  out.msg = std::move(*m);
  out.id = s.last_event_id();
  if (SeqOf(out.id) == 0)
    return ::testing::AssertionFailure() << "event without a session event id: '" << out.id << "'";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult NextIsWithId(SseStream& s, std::string_view method, std::string_view params, std::string* id,
                                        Ms timeout = kIo) {
  Got g;
  if (auto r = NextWithId(s, g, timeout); !r) return r << " (waiting for " << method << " " << params << ")";
  if (auto r = IsPlainNotification(g.msg, method, params); !r) return r;
  *id = g.id;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult Quiet(SseStream& s, Ms quiet = Ms(300)) {
  auto ev = s.Next(quiet);
  if (ev) return ::testing::AssertionFailure() << "unexpected event: id '" << ev->id << "' " << ev->data;
  return ::testing::AssertionSuccess();
}

std::string Rev(std::string_view uri, int rev) {
  return R"({"uri":")" + std::string(uri) + R"(","_meta":{"rev":)" + std::to_string(rev) + "}}";
}
std::string PublishRev(std::string_view uri, int rev) {
  return R"({"method":"notifications/resources/updated","params":)" + Rev(uri, rev) + "}";
}

// The re-read answer: resources/updated for each subscribed URI (any order), then the three
// list_changed kinds; each with a fresh, increasing id above `after`.
::testing::AssertionResult IsRereadAnswer(SseStream& s, std::vector<std::string> uris, uint64_t after) {
  uint64_t last = after;
  std::set<std::string> want(uris.begin(), uris.end()), got;
  for (size_t i = 0; i < uris.size(); ++i) {
    Got g;
    if (auto r = NextWithId(s, g); !r) return r << " (re-read hint " << i << ")";
    if (g.msg.GetString({"method"}) != "notifications/resources/updated") {
      return ::testing::AssertionFailure() << "want a resources/updated hint, got " << g.msg.text();
    }
    got.insert(g.msg.GetString({"params", "uri"}).value_or(""));
    if (SeqOf(g.id) <= last) return ::testing::AssertionFailure() << "ids must increase: " << g.id << " after " << last;
    last = SeqOf(g.id);
  }
  if (got != want) return ::testing::AssertionFailure() << "hints for the wrong URIs";
  for (std::string_view kind : {"resources", "tools", "prompts"}) {
    Got g;
    if (auto r = NextWithId(s, g); !r) return r << " (" << kind << " hint)";
    if (auto r = IsPlainNotification(g.msg, "notifications/" + std::string(kind) + "/list_changed", "{}"); !r) return r;
    if (SeqOf(g.id) <= last) return ::testing::AssertionFailure() << "ids must increase: " << g.id << " after " << last;
    last = SeqOf(g.id);
  }
  return ::testing::AssertionSuccess();
}

struct Session {
  std::string sid;
  SseStream stream;
};

::testing::AssertionResult Start(int port, Session& s, std::vector<std::string> uris) {
  if (auto r = Initialize(port, &s.sid); !r) return r;
  int id = 1;
  for (const auto& u : uris) {
    if (auto r = SessionSubscribe(port, s.sid, u, std::to_string(id++)); !r) return r;
  }
  return OpenSessionStream(s.stream, port, s.sid);
}

// The client drops its GET stream; the server parks the session (`parked` sessions in all).
::testing::AssertionResult Drop(int port, Session& s, double parked = 1) {
  s.stream.conn().Close();
  return PollMetricEq(port, "mcpfan_sessions_parked", parked);
}

TEST(SessionResume, ReplaysNewestPerUriInOrderThenLive) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string a = "file:///r/a", b = "file:///r/b";
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {a, b}));
  const std::string priming = s.stream.last_event_id();
  ASSERT_GT(SeqOf(priming) + 1, 0u) << priming;
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev(a, 0)));
  std::string n;
  ASSERT_TRUE(NextIsWithId(s.stream, "notifications/resources/updated", Rev(a, 0), &n));
  EXPECT_GT(SeqOf(n), SeqOf(priming));
  ASSERT_TRUE(Drop(srv.port(), s));

  for (int rev = 1; rev <= 3; ++rev) ASSERT_TRUE(PublishOk(srv.port(), PublishRev(a, rev)));
  for (int rev = 1; rev <= 2; ++rev) ASSERT_TRUE(PublishOk(srv.port(), PublishRev(b, rev)));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("file:///r/other", 9)));  // not subscribed
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/prompts/list_changed"})"));
  // Journaled by the parked stream's loop (3 + 2 + the list_changed; not the other URI).
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_journaled_total", 6));

  SseStream resumed;
  ASSERT_TRUE(OpenSessionStream(resumed, srv.port(), s.sid, n));
  EXPECT_EQ(resumed.last_event_id(), n) << "the priming event of a resume carries the client's cursor";
  std::string id_a, id_b, id_p;
  ASSERT_TRUE(NextIsWithId(resumed, "notifications/resources/updated", Rev(a, 3), &id_a));
  ASSERT_TRUE(NextIsWithId(resumed, "notifications/resources/updated", Rev(b, 2), &id_b));
  ASSERT_TRUE(NextIsWithId(resumed, "notifications/prompts/list_changed", "{}", &id_p));
  EXPECT_LT(SeqOf(n), SeqOf(id_a));
  EXPECT_LT(SeqOf(id_a), SeqOf(id_b));
  EXPECT_LT(SeqOf(id_b), SeqOf(id_p));
  EXPECT_TRUE(Quiet(resumed));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_replayed_total", 3));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 0));

  // Live again, numbered after the replay.
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev(b, 4)));
  std::string live;
  ASSERT_TRUE(NextIsWithId(resumed, "notifications/resources/updated", Rev(b, 4), &live));
  EXPECT_LT(SeqOf(id_p), SeqOf(live));

  // A resume from the newest id replays nothing.
  resumed.conn().Close();
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 1));
  SseStream again;
  ASSERT_TRUE(OpenSessionStream(again, srv.port(), s.sid, live));
  EXPECT_TRUE(Quiet(again));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_replayed_total", 3));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 0));

  // Without Last-Event-ID: priming, then live only (nothing replayed).
  again.conn().Close();
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 1));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev(a, 5)));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  // Journaled before the GET (else they count as published after it, and arrive).
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_journaled_total", 8));
  SseStream fresh;
  ASSERT_TRUE(OpenSessionStream(fresh, srv.port(), s.sid));
  EXPECT_TRUE(Quiet(fresh));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev(a, 6)));
  std::string id6;
  ASSERT_TRUE(NextIsWithId(fresh, "notifications/resources/updated", Rev(a, 6), &id6));
}

TEST(SessionResume, AnotherSessionsIdGetsTheRereadAnswerNeverItsEvents) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session one, two;
  ASSERT_TRUE(Start(srv.port(), one, {"x:///one"}));
  ASSERT_TRUE(Start(srv.port(), two, {"x:///two", "x:///dir/"}));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///one", 1)));
  std::string id1;
  ASSERT_TRUE(NextIsWithId(one.stream, "notifications/resources/updated", Rev("x:///one", 1), &id1));
  ASSERT_TRUE(Drop(srv.port(), two));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///one", 2)));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///two", 2)));

  // Session two presents session one's id: the re-read answer, none of one's events.
  SseStream resumed;
  ASSERT_TRUE(OpenSessionStream(resumed, srv.port(), two.sid, id1));
  const uint64_t prime = SeqOf(resumed.last_event_id());
  ASSERT_TRUE(IsRereadAnswer(resumed, {"x:///two", "x:///dir/"}, prime));
  EXPECT_TRUE(Quiet(resumed));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_replayed_total", 0));

  // Malformed ids and ids from this session's future: the same answer. Each GET with a
  // Last-Event-ID takes the stream over; the one it replaces ends cleanly.
  std::string future = resumed.last_event_id();
  future = future.substr(0, 9) + "999999";
  SseStream* previous = &resumed;
  std::vector<SseStream> streams(5);
  const std::vector<std::string> bad = {future, "garbage", "0000000g-1", "00000000-01", std::string(200, '7')};
  for (size_t i = 0; i < bad.size(); ++i) {
    ASSERT_TRUE(OpenSessionStream(streams[i], srv.port(), two.sid, bad[i])) << bad[i];
    EXPECT_TRUE(IsRereadAnswer(streams[i], {"x:///two", "x:///dir/"}, SeqOf(streams[i].last_event_id()))) << bad[i];
    EXPECT_TRUE(previous->WaitEnd(kIo)) << "the taken-over stream must end: " << bad[i];
    previous = &streams[i];
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 1 + static_cast<double>(bad.size())));
  // Session one was never disturbed.
  std::string id2;
  ASSERT_TRUE(NextIsWithId(one.stream, "notifications/resources/updated", Rev("x:///one", 2), &id2));
  EXPECT_TRUE(Quiet(one.stream, Ms(100)));
}

TEST(SessionResume, CursorOlderThanTheBoundGetsTheRereadAnswer) {
  ServerProcess srv({"--session-replay-bytes", "2048"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {"x:///many/"}));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///many/0", 0)));
  std::string n;
  ASSERT_TRUE(NextIsWithId(s.stream, "notifications/resources/updated", Rev("x:///many/0", 0), &n));
  ASSERT_TRUE(Drop(srv.port(), s));
  // 40 distinct URIs: far more than 2048 bytes of entries, so the oldest are evicted.
  for (int i = 1; i <= 40; ++i) ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///many/" + std::to_string(i), i)));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_journaled_total", 40));
  ASSERT_TRUE(PollMetric(srv.port(), "mcpfan_session_journal_evictions_total", [](double v) { return v >= 30; }));
  SseStream resumed;
  ASSERT_TRUE(OpenSessionStream(resumed, srv.port(), s.sid, n));
  ASSERT_TRUE(IsRereadAnswer(resumed, {"x:///many/"}, SeqOf(resumed.last_event_id())));
  EXPECT_TRUE(Quiet(resumed));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 1));

  // A recent cursor is still resumable: the newest entries are kept.
  std::string hint_id = resumed.last_event_id();
  resumed.conn().Close();
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 1));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///many/41", 41)));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_journaled_total", 41));
  SseStream recent;
  ASSERT_TRUE(OpenSessionStream(recent, srv.port(), s.sid, hint_id));
  std::string id41;
  ASSERT_TRUE(NextIsWithId(recent, "notifications/resources/updated", Rev("x:///many/41", 41), &id41));
  EXPECT_TRUE(Quiet(recent));
}

// A resuming GET while the old stream is still open (the server has not noticed the drop,
// or the client reconnects early) takes the session over, on whichever worker accepted it.
// Every update published meanwhile reaches one stream or the other: none is lost.
TEST(SessionResume, TakeoverAcrossWorkersLosesNothing) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {"x:///t/"}));
  std::set<int> seen;
  std::vector<std::unique_ptr<SseStream>> streams;
  SseStream* cur = &s.stream;
  int published = 0;
  auto collect = [&](SseStream& st, Ms wait) {
    for (;;) {
      std::string err;
      auto m = st.NextMessage(wait, &err);
      if (!m) return;
      auto rev = m->GetInt({"params", "_meta", "rev"});
      if (rev) seen.insert(static_cast<int>(*rev));
    }
  };
  for (int round = 0; round < 12; ++round) {
    // Publish a burst, read only part of it, then resume from what was read.
    for (int i = 0; i < 5; ++i, ++published) {
      ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///t/" + std::to_string(published), published)));
    }
    std::string err;
    auto m = cur->NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "round " << round << ": " << err;
    if (auto rev = m->GetInt({"params", "_meta", "rev"})) seen.insert(static_cast<int>(*rev));
    std::string cursor = cur->last_event_id();
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenSessionStream(*streams.back(), srv.port(), s.sid, cursor)) << "round " << round;
    // The old stream ends; whatever it had queued before the takeover still arrives on it.
    ASSERT_TRUE(cur->WaitEnd(kIo)) << "round " << round << ": the taken-over stream must end";
    collect(*cur, Ms(0));
    cur = streams.back().get();
  }
  collect(*cur, Ms(500));
  for (int i = 0; i < published; ++i) EXPECT_TRUE(seen.count(i)) << "update " << i << " was lost";
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1));
}

// A GET without Last-Event-ID on a parked session (perhaps parked on the other worker) replays
// nothing from before it, but nothing published after its 200 may be missed, even while the
// parked stream is still being ended on its worker.
TEST(SessionResume, FreshGetOnAParkedSessionMissesNothingPublishedAfterIt) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {"x:///f"}));
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///f", 0)));
  std::string id;
  ASSERT_TRUE(NextIsWithId(s.stream, "notifications/resources/updated", Rev("x:///f", 0), &id));
  std::unique_ptr<SseStream> cur;
  for (int round = 1; round <= 20; ++round) {
    (cur ? cur->conn() : s.stream.conn()).Close();
    ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 1)) << "round " << round;
    cur = std::make_unique<SseStream>();
    ASSERT_TRUE(OpenSessionStream(*cur, srv.port(), s.sid)) << "round " << round;
    ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///f", round)));
    ASSERT_TRUE(NextIsWithId(*cur, "notifications/resources/updated", Rev("x:///f", round), &id)) << "round " << round;
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 0));
}

TEST(SessionResume, DeleteAndExpiryEndParking) {
  ServerProcess srv({"--workers", "2", "--session-idle-ms", "400"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session del, idle;
  ASSERT_TRUE(Start(srv.port(), del, {"x:///d"}));
  ASSERT_TRUE(Start(srv.port(), idle, {"x:///e"}));
  del.stream.conn().Close();
  idle.stream.conn().Close();
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 2));
  EXPECT_EQ(DeleteSession(srv.port(), del.sid), 200);
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_active", 0, Ms(10000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0));
  // The ended sessions answer 404, resumes included.
  SseStream gone;
  std::string err;
  ASSERT_TRUE(gone.Open(srv.port(), SessionGetRequest(idle.sid, "00000000-1"), kIo, &err)) << err;
  EXPECT_EQ(gone.head().status, 404);
}

// resources/subscribe while the session is parked (the request on any worker, the parked
// stream on another): the new URI is journaled from the `{}` on, and a resume replays it.
TEST(SessionResume, SubscribeWhileParkedIsJournaledAndReplayed) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {"x:///p/0"}));
  SseStream* cur = &s.stream;
  std::vector<std::unique_ptr<SseStream>> streams;
  std::string cursor = s.stream.last_event_id();
  for (int round = 1; round <= 10; ++round) {
    cur->conn().Close();
    ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 1)) << "round " << round;
    const std::string uri = "x:///p/" + std::to_string(round);
    ASSERT_TRUE(SessionSubscribe(srv.port(), s.sid, uri, std::to_string(round + 1)));
    ASSERT_TRUE(PublishOk(srv.port(), PublishRev(uri, round)));
    ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_journaled_total", round)) << "round " << round;
    streams.push_back(std::make_unique<SseStream>());
    cur = streams.back().get();
    ASSERT_TRUE(OpenSessionStream(*cur, srv.port(), s.sid, cursor)) << "round " << round;
    ASSERT_TRUE(NextIsWithId(*cur, "notifications/resources/updated", Rev(uri, round), &cursor)) << "round " << round;
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_replayed_total", 10));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_session_rereads_total", 0));
}

// Parked sessions are sessions without a GET stream: --max-idle-sessions bounds them (and so
// their journals: --session-replay-bytes each).
TEST(SessionResume, ParkedSessionsCountAgainstMaxIdleSessions) {
  ServerProcess srv({"--max-idle-sessions", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session a;
  ASSERT_TRUE(Start(srv.port(), a, {"x:///a"}));  // streaming: not idle
  std::string b;
  ASSERT_TRUE(Initialize(srv.port(), &b));  // the one idle session
  ASSERT_TRUE(Drop(srv.port(), a));         // parked: idle too (admitted once, counted now)
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_idle", 2));
  std::string c;
  EXPECT_FALSE(Initialize(srv.port(), &c)) << "a new session past --max-idle-sessions must be refused";
  EXPECT_EQ(DeleteSession(srv.port(), a.sid), 200);
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 0));
}

TEST(SessionResume, SecondGetWithoutLastEventIdIsStill409) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Session s;
  ASSERT_TRUE(Start(srv.port(), s, {"x:///a"}));
  SseStream second;
  std::string err;
  ASSERT_TRUE(second.Open(srv.port(), SessionGetRequest(s.sid), kIo, &err)) << err;
  EXPECT_EQ(second.head().status, 409);
  ASSERT_TRUE(PublishOk(srv.port(), PublishRev("x:///a", 1)));
  std::string id;
  EXPECT_TRUE(NextIsWithId(s.stream, "notifications/resources/updated", Rev("x:///a", 1), &id));
}

}  // namespace
}  // namespace itest

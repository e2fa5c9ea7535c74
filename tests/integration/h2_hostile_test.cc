// Hostile HTTP/2 peers (raw frames over h2c): each attack is bounded, counted in
// mcpfan_limit_hits_total{limit="h2_..."}, and ends the connection with a GOAWAY naming it,
// while the server goes on serving everyone else.
#include "h2_client.h"
#include "harness.h"
#include "test_helpers.h"

namespace itest {
namespace {

using Frames = std::string;

struct Attack {
  std::uint32_t code = 0;
  std::string reason;
};

// Connects, sends `frames` after the handshake, and waits for the GOAWAY.
::testing::AssertionResult Survives(const ServerProcess& srv, const Frames& frames, Attack& seen) {
  H2Client c;
  if (auto ok = c.Connect(srv.port()); !ok) return ok;
  if (!c.SendRaw(frames)) {
    // The server may close while we still write: the GOAWAY is in what we read next.
  }
  if (!c.RunUntil([&] { return c.goaway(); }, Ms(15000))) {
    return ::testing::AssertionFailure() << "no GOAWAY (peer closed: " << c.peer_closed() << ")";
  }
  seen.code = c.goaway_code();
  seen.reason = c.goaway_reason();
  // ...and the server still serves a fresh client.
  return ServesListenAndPublish(srv.port());
}

::testing::AssertionResult Counted(const ServerProcess& srv, std::string_view limit) {
  return PollMetric(srv.port(), "mcpfan_limit_hits_total{limit=\"" + std::string(limit) + "\"}",
                    [](double v) { return v >= 1; });
}

TEST(Http2Hostile, RapidResetGetsGoaway) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Frames f;
  std::string cancel("\x00\x00\x00\x08", 4);  // RST_STREAM(CANCEL)
  for (int i = 0; i < 3000; ++i) {
    std::int32_t id = 1 + 2 * i;
    f += H2Client::Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                         H2Client::GetBlock("/livez"));
    f += H2Client::Frame(NGHTTP2_RST_STREAM, 0, id, cancel);
  }
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_EQ(a.code, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_NE(a.reason.find("rapid reset"), std::string::npos) << a.reason;
  EXPECT_TRUE(Counted(srv, "h2_rapid_reset"));
}

TEST(Http2Hostile, PingFloodGetsGoaway) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Frames f;
  for (int i = 0; i < 500; ++i) f += H2Client::Frame(NGHTTP2_PING, 0, 0, std::string(8, static_cast<char>(i)));
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_EQ(a.code, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_NE(a.reason.find("PING"), std::string::npos) << a.reason;
  EXPECT_TRUE(Counted(srv, "h2_ping_flood"));
}

TEST(Http2Hostile, SettingsFloodGetsGoaway) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Frames f;
  std::string entry("\x00\x04\x00\x01\x00\x00", 6);  // INITIAL_WINDOW_SIZE 65536
  for (int i = 0; i < 500; ++i) f += H2Client::Frame(NGHTTP2_SETTINGS, 0, 0, entry);
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_NE(a.reason.find("SETTINGS"), std::string::npos) << a.reason;
  EXPECT_TRUE(Counted(srv, "h2_settings_flood"));
}

TEST(Http2Hostile, PriorityFloodGetsGoaway) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Frames f;
  std::string prio("\x00\x00\x00\x00\x10", 5);  // depends on 0, weight 17
  for (int i = 0; i < 5000; ++i) f += H2Client::Frame(NGHTTP2_PRIORITY, 0, 1 + 2 * i, prio);
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_NE(a.reason.find("PRIORITY"), std::string::npos) << a.reason;
  EXPECT_TRUE(Counted(srv, "h2_priority_flood"));
}

TEST(Http2Hostile, ContinuationFloodGetsGoaway) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION after
  // CONTINUATION, each with one more small field (literal, not indexed).
  std::string field(
      "\x00\x03x-a\x01"
      "b",
      7);
  Frames f = H2Client::Frame(NGHTTP2_HEADERS, 0, 1, H2Client::GetBlock("/livez"));
  for (int i = 0; i < 100; ++i) f += H2Client::Frame(NGHTTP2_CONTINUATION, 0, 1, field);
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_EQ(a.code, static_cast<std::uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_NE(a.reason.find("CONTINUATION"), std::string::npos) << a.reason;
  EXPECT_TRUE(Counted(srv, "h2_continuation_flood"));
}

// An HPACK bomb: a few bytes on the wire that decode to a huge header list (600 KB from ~3 KB).
TEST(Http2Hostile, HeaderListBombIsRefusedWith431) {
  ServerProcess srv({"--max-header-bytes", "16384"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  // nghttp2's own encoder makes the bomb: the first copy is a literal it indexes, each
  // further copy a one-byte reference to it.
  std::vector<Header> bomb(200, Header{"x-big", std::string(3000, 'v')});  // under 3/4 of the table: indexed
  std::int32_t id = c.Request("GET", "/livez", bomb);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(c.RunUntil([&] { return c.stream(id).closed || c.goaway(); }));
  EXPECT_EQ(c.stream(id).status, 431) << "reset " << c.stream(id).rst_code << ", GOAWAY " << c.goaway_reason();
  EXPECT_NE(c.stream(id).data.find("request headers longer than 16384 bytes"), std::string::npos) << c.stream(id).data;
  EXPECT_TRUE(Counted(srv, "h2_header_list"));
}

TEST(Http2Hostile, UndecodableHpackGetsCompressionError) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  // An index far past both tables.
  Frames f = H2Client::Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1,
                             std::string("\xff\xff\x7f", 3));
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_EQ(a.code, static_cast<std::uint32_t>(NGHTTP2_COMPRESSION_ERROR));
  EXPECT_TRUE(Counted(srv, "h2_header_list"));
}

TEST(Http2Hostile, GarbageAfterThePrefaceGetsProtocolError) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Frames f = H2Client::Frame(NGHTTP2_DATA, 0, 7, "data on a stream never opened");
  Attack a;
  ASSERT_TRUE(Survives(srv, f, a));
  EXPECT_NE(a.code, 0u);
}

}  // namespace
}  // namespace itest

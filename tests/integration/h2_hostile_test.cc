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

// A fresh server, sent `frames` after the handshake: it ends the connection with a GOAWAY of
// `code` whose reason names the attack, counts `limit`, and goes on serving a fresh client.
::testing::AssertionResult EndsWithGoAway(const Frames& frames, std::uint32_t code, std::string_view reason,
                                          std::string_view limit) {
  ServerProcess srv;
  if (!srv.ok()) return ::testing::AssertionFailure() << srv.error();
  Attack a;
  if (auto ok = Survives(srv, frames, a); !ok) return ok;
  if (a.code != code) return ::testing::AssertionFailure() << "GOAWAY code " << a.code << ", want " << code;
  if (a.reason.find(reason) == std::string::npos) {
    return ::testing::AssertionFailure() << "GOAWAY reason \"" << a.reason << "\" does not name " << reason;
  }
  return Counted(srv, limit);
}

TEST(Http2Hostile, RapidResetGetsGoaway) {
  Frames f;
  std::string cancel("\x00\x00\x00\x08", 4);  // RST_STREAM(CANCEL)
  for (int i = 0; i < 3000; ++i) {
    std::int32_t id = 1 + 2 * i;
    f += H2Client::Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id,
                         H2Client::GetBlock("/livez"));
    f += H2Client::Frame(NGHTTP2_RST_STREAM, 0, id, cancel);
  }
  EXPECT_TRUE(EndsWithGoAway(f, NGHTTP2_ENHANCE_YOUR_CALM, "rapid reset", "h2_rapid_reset"));
}

TEST(Http2Hostile, PingFloodGetsGoaway) {
  Frames f;
  for (int i = 0; i < 500; ++i) f += H2Client::Frame(NGHTTP2_PING, 0, 0, std::string(8, static_cast<char>(i)));
  EXPECT_TRUE(EndsWithGoAway(f, NGHTTP2_ENHANCE_YOUR_CALM, "PING", "h2_ping_flood"));
}

TEST(Http2Hostile, SettingsFloodGetsGoaway) {
  Frames f;
  std::string entry("\x00\x04\x00\x01\x00\x00", 6);  // INITIAL_WINDOW_SIZE 65536
  for (int i = 0; i < 500; ++i) f += H2Client::Frame(NGHTTP2_SETTINGS, 0, 0, entry);
  EXPECT_TRUE(EndsWithGoAway(f, NGHTTP2_ENHANCE_YOUR_CALM, "SETTINGS", "h2_settings_flood"));
}

TEST(Http2Hostile, PriorityFloodGetsGoaway) {
  Frames f;
  std::string prio("\x00\x00\x00\x00\x10", 5);  // depends on 0, weight 17
  for (int i = 0; i < 5000; ++i) f += H2Client::Frame(NGHTTP2_PRIORITY, 0, 1 + 2 * i, prio);
  EXPECT_TRUE(EndsWithGoAway(f, NGHTTP2_ENHANCE_YOUR_CALM, "PRIORITY", "h2_priority_flood"));
}

TEST(Http2Hostile, ContinuationFloodGetsGoaway) {
  // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION after
  // CONTINUATION, each with one more small field (literal, not indexed).
  std::string field(
      "\x00\x03x-a\x01"
      "b",
      7);
  Frames f = H2Client::Frame(NGHTTP2_HEADERS, 0, 1, H2Client::GetBlock("/livez"));
  for (int i = 0; i < 100; ++i) f += H2Client::Frame(NGHTTP2_CONTINUATION, 0, 1, field);
  EXPECT_TRUE(EndsWithGoAway(f, NGHTTP2_ENHANCE_YOUR_CALM, "CONTINUATION", "h2_continuation_flood"));
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

// Request bodies are bounded per connection (4 x --max-body across its streams): the stream
// that goes past is refused, and what a refused or answered stream held is given back, so the
// connection takes as much again afterwards (raw frames: bodies left unfinished on purpose).
TEST(Http2Hostile, BodiesHeldAtOnceAreBoundedPerConnection) {
  ServerProcess srv({"--max-body", "1024"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  H2Client c;
  ASSERT_TRUE(c.Connect(srv.port()));
  const std::string kilo(1000, 'x');
  auto open_with_body = [&](std::int32_t id) {  // HEADERS, then 1,000 bytes of a body that does not end
    return c.SendRaw(H2Client::Frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, id, H2Client::GetBlock("/v1/publish")) +
                     H2Client::Frame(NGHTTP2_DATA, 0, id, kilo));
  };
  for (std::int32_t id : {1, 3, 5, 7}) ASSERT_TRUE(open_with_body(id));  // 4,000 of 4,096
  ASSERT_TRUE(open_with_body(9));                                        // past it
  ASSERT_TRUE(c.RunUntil([&] { return c.raw_reset(9).has_value(); }));
  EXPECT_EQ(*c.raw_reset(9), static_cast<std::uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_TRUE(Counted(srv, "body_bytes"));
  // Stream 1 ends (answered: a GET body is not a publish) and gives its 1,000 back; stream 9's
  // went with its reset. So 11 fits (4,000 again) and 13 does not.
  ASSERT_TRUE(c.SendRaw(H2Client::Frame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, 1, "")));
  ASSERT_TRUE(open_with_body(11));
  ASSERT_TRUE(open_with_body(13));
  ASSERT_TRUE(c.RunUntil([&] { return c.raw_reset(13).has_value(); }));
  EXPECT_FALSE(c.raw_reset(11).has_value());
  EXPECT_FALSE(c.raw_reset(3).has_value());
  EXPECT_FALSE(c.goaway());
}

}  // namespace
}  // namespace itest

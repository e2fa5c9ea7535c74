// Graceful shutdown: every open listen gets the final `complete` result as its
// last event, then the stream ends; the process exits 0 (SERVER_CONTRACT.md).
#include <signal.h>
#include <sys/wait.h>

#include <cstring>
#include <iostream>

#include "harness.h"

namespace itest {
namespace {

// The last event of `s` is the final result for `id_json`, and the stream ended.
void ExpectCompletedStream(SseStream& s, std::string_view id_json) {
  ASSERT_TRUE(s.WaitEnd(kIo)) << id_json << ": stream did not end (terminator seen=" << s.ended()
                              << ", closed=" << s.eof() << ")" << (s.protocol_error().empty() ? "" : ", framing: ")
                              << s.protocol_error() << "; events:" << DescribeEvents(s.events());
  ASSERT_FALSE(s.events().empty()) << id_json << ": no final result before the stream ended";
  const SseEvent& last = s.events().back();
  EXPECT_EQ(last.event, "message");
  Json j(last.data);
  ASSERT_TRUE(j.ok()) << last.data;
  EXPECT_EQ(j.GetString({"jsonrpc"}), "2.0") << j.text();
  EXPECT_TRUE(JsonMatches(j.Get({"id"}), id_json)) << j.text();
  EXPECT_FALSE(j.Has({"method"})) << "the final message is a result, not a notification: " << j.text();
  std::string want = R"({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":)" +
                     std::string(id_json) + "}}";
  EXPECT_TRUE(JsonMatches(j.Get({"result"}), want)) << j.text();
  // Anything before the result is an ordinary notification of this stream.
  for (size_t i = 0; i + 1 < s.events().size(); ++i) {
    Json e(s.events()[i].data);
    EXPECT_TRUE(JsonMatches(e.Get({"params", "_meta", kSubId}), id_json)) << s.events()[i].data;
  }
  EXPECT_TRUE(s.id_lines().empty());
}

TEST(Shutdown, SigtermCompletesOpenListensAndExitsZero) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::vector<std::string> ids = {R"("listen:0")", "7", R"("x")", "0", R"("")"};
  std::vector<std::unique_ptr<SseStream>> streams;
  for (const auto& id : ids) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenListen(*streams.back(), srv.port(), id, R"({"toolsListChanged":true})"));
  }
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", double(ids.size())));

  auto t0 = Clock::now();
  ASSERT_TRUE(srv.Signal(SIGTERM));
  for (size_t i = 0; i < ids.size(); ++i) ExpectCompletedStream(*streams[i], ids[i]);
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after SIGTERM";
  auto took = std::chrono::duration_cast<Ms>(Clock::now() - t0).count();
  RecordProperty("sigterm_to_exit_ms", std::to_string(took));
  ASSERT_TRUE(srv.wait_status());
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
  EXPECT_TRUE(srv.WaitForStderr("mcpfan: stopped (signal=SIGTERM)", Ms(2000))) << srv.Stderr();
  if (took > 2000) {
    std::cerr << "note: exit took " << took << " ms (contract says within 2 s; asserted bound is 5 s)\n";
  }
}

// SIGTERM right after a burst: whatever notifications made it out come first,
// in order, and the final result is still the last event.
TEST(Shutdown, SigtermDuringBurstFinalResultStillLast) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<std::unique_ptr<SseStream>> streams;
  for (int i = 0; i < 8; ++i) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(
        OpenListen(*streams.back(), srv.port(), std::to_string(i), R"({"resourceSubscriptions":["file:///b/"]})"));
  }
  std::string body = "[";
  for (int i = 0; i < 500; ++i) {
    body += std::string(i ? "," : "") + R"({"method":"notifications/resources/updated","params":{"uri":"file:///b/)" +
            std::to_string(i) + R"("}})";
  }
  body += "]";
  ASSERT_TRUE(PublishOk(srv.port(), body, 500));
  ASSERT_TRUE(srv.Signal(SIGTERM));
  for (int i = 0; i < 8; ++i) {
    ExpectCompletedStream(*streams[i], std::to_string(i));
    auto& evs = streams[i]->events();
    for (size_t k = 0; k + 1 < evs.size(); ++k) {
      Json e(evs[k].data);
      ASSERT_EQ(e.GetString({"params", "uri"}), "file:///b/" + std::to_string(k)) << "stream " << i;
    }
  }
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
}

// A client that never reads cannot hold the process up past a bound.
TEST(Shutdown, SigtermWithStalledClientStillExits) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream stalled, healthy;
  stalled.conn().set_rcvbuf(4096);
  ASSERT_TRUE(OpenListen(stalled, srv.port(), R"("stalled")", R"({"resourceSubscriptions":["file:///s/"]})"));
  ASSERT_TRUE(OpenListen(healthy, srv.port(), R"("healthy")", R"({"toolsListChanged":true})"));
  for (int p = 0; p < 4; ++p) {  // a few MB the stalled client will not read
    std::string body = "[";
    for (int i = 0; i < 200; ++i) {
      body += std::string(i ? "," : "") + R"({"method":"notifications/resources/updated","params":{"uri":"file:///s/)" +
              std::to_string(p * 200 + i) + R"(","pad":")" + std::string(4000, 'x') + R"("}})";
    }
    body += "]";
    ASSERT_TRUE(PublishOk(srv.port(), body, 200));
  }
  auto t0 = Clock::now();
  ASSERT_TRUE(srv.Signal(SIGTERM));
  ExpectCompletedStream(healthy, R"("healthy")");
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after SIGTERM with a stalled client";
  RecordProperty("sigterm_to_exit_ms",
                 std::to_string(std::chrono::duration_cast<Ms>(Clock::now() - t0).count()));
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
}

TEST(Shutdown, SigintExitsZeroAndCompletesListen) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), "99", R"({"resourceSubscriptions":["file:///q"]})"));
  ASSERT_TRUE(srv.Signal(SIGINT));
  ExpectCompletedStream(s, "99");
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after SIGINT";
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
  EXPECT_TRUE(srv.WaitForStderr("mcpfan: stopped", Ms(2000))) << srv.Stderr();
}

TEST(Shutdown, SigtermIdleServerExitsZero) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  ASSERT_TRUE(srv.Signal(SIGTERM));
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
  EXPECT_TRUE(srv.WaitForStderr("mcpfan: stopped (signal=SIGTERM)", Ms(2000))) << srv.Stderr();
}

// A SIGTERM, SIGINT or SIGHUP the moment the port is announced is never lost. With
// uv_signal_t handlers the ThreadSanitizer build lost about 1 SIGTERM in 20 sent at this
// moment (CI failed twice on it); signals are now read from a signalfd. Twelve starts, so that
// a return of the old loss is likely to show here rather than as a stray failure elsewhere.
TEST(Shutdown, SignalAtStartUpIsNeverLost) {
  for (int i = 0; i < 12; ++i) {
    SCOPED_TRACE("start " + std::to_string(i));
    ServerProcess srv;
    ASSERT_TRUE(srv.ok()) << srv.error();
    // Every third start: a reload request first, which must be served and must not end the process.
    if (i % 3 == 2) {
      ASSERT_TRUE(srv.Signal(SIGHUP));
      ASSERT_TRUE(srv.WaitForStderr("mcpfan: reloaded", Ms(5000))) << srv.Stderr();
    }
    const int sig = i % 2 == 0 ? SIGTERM : SIGINT;
    ASSERT_TRUE(srv.Signal(sig));
    ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "mcpfan still running 5 s after " << strsignal(sig);
    EXPECT_TRUE(WIFEXITED(*srv.wait_status()) && WEXITSTATUS(*srv.wait_status()) == 0) << srv.DescribeStatus();
    EXPECT_TRUE(srv.WaitForStderr(sig == SIGTERM ? "stopped (signal=SIGTERM)" : "stopped (signal=SIGINT)", Ms(2000)))
        << srv.Stderr();
  }
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// SIGTERM with 1,000 open streams (docs/operations.md "Signals"), right after a publish: every client gets the
// notification whole, then its final result, then the end of the stream; no event is cut;
// the process exits 0.
TEST(Shutdown, SigtermDrainsThousandStreamsCleanly) {
  constexpr size_t kStreams = 1000;
  ASSERT_GE(RaiseFdLimit(2 * kStreams + 256), 2 * kStreams + 64) << "RLIMIT_NOFILE too low for this test";
  ServerProcess srv({"--workers", "2", "--shutdown-grace-ms", "10000"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<std::unique_ptr<SseStream>> streams;
  std::vector<SseStream*> ptrs;
  for (size_t i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<SseStream>());
    std::string err;
    std::string body = RpcBody(std::to_string(i), "subscriptions/listen",
                               R"("notifications":{"toolsListChanged":true})", "2026-07-28");
    ASSERT_TRUE(
        streams.back()->Start(srv.port(), McpPost(body, McpHeaders("2026-07-28", "subscriptions/listen")), &err))
        << i << ": " << err;
    ptrs.push_back(streams.back().get());
  }
  ASSERT_EQ(PumpAll(ptrs, [](SseStream& s) { return !s.events().empty(); }, Ms(30000)), kStreams) << "acks";
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", double(kStreams)));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed","params":{"pad":")" +
                                        std::string(2000, 'p') + "\"}}"));
  ASSERT_TRUE(srv.Signal(SIGTERM));
  size_t ended = PumpAll(ptrs, [](SseStream& s) { return s.ended() || s.eof(); }, Ms(30000));
  EXPECT_EQ(ended, kStreams);
  for (size_t i = 0; i < kStreams; ++i) {
    SseStream& s = *streams[i];
    ASSERT_TRUE(s.ended()) << "stream " << i << " closed without the chunked terminator";
    ASSERT_TRUE(s.protocol_error().empty()) << "stream " << i << ": " << s.protocol_error();
    ASSERT_EQ(s.events().size(), 3u) << "stream " << i
                                     << ": ack, notification, final result:" << DescribeEvents(s.events());
    Json note(s.events()[1].data);
    ASSERT_EQ(note.GetString({"method"}), "notifications/tools/list_changed") << "stream " << i;
    ASSERT_EQ(note.GetString({"params", "pad"}).value_or("").size(), 2000u) << "stream " << i << ": event cut";
    Json last(s.events()[2].data);
    ASSERT_EQ(last.GetString({"result", "resultType"}), "complete") << "stream " << i << ": " << last.text();
  }
  ASSERT_TRUE(srv.WaitExit(Ms(15000)));
  EXPECT_EQ(srv.DescribeStatus(), "exit 0");
}

}  // namespace
}  // namespace itest

// Slow consumers (design.md 4): a stream that does not read gets newer
// notifications for the same (method, uri) in place of unwritten older ones, so
// the latest change is never lost and memory stays bounded; past the byte bound
// (distinct URIs, nothing to coalesce) the stream is closed. Other streams are
// never stalled by a slow one.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>

#include "harness.h"
#include "stdio_client.h"

namespace itest {
namespace {

std::string Pad(size_t n) { return std::string(n, 'p'); }

std::string Item(std::string_view uri, int seq, size_t pad) {
  return R"({"method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) +
         R"(","_meta":{"test/seq":)" + std::to_string(seq) + R"(},"pad":")" + Pad(pad) + R"("}})";
}

// Reads `s` until an event with seq `last` arrives, the stream ends, or the
// deadline. Returns the seqs seen; fails the test on foreign events.
std::vector<int64_t> DrainSeqs(SseStream& s, std::string_view sid, std::string_view uri_prefix, int64_t last,
                               Ms timeout) {
  std::vector<int64_t> seqs;
  Deadline end = After(timeout);
  while (Clock::now() < end) {
    auto ev = s.Next(std::chrono::duration_cast<Ms>(end - Clock::now()));
    if (!ev) break;
    Json j(ev->data);
    auto seq = j.GetInt({"params", "_meta", "test/seq"});
    auto uri = j.GetString({"params", "uri"});
    if (!seq || !uri || uri->rfind(uri_prefix, 0) != 0 || !JsonMatches(j.Get({"params", "_meta", kSubId}), sid)) {
      ADD_FAILURE() << "unexpected event on slow stream: " << ev->data.substr(0, 300);
      break;
    }
    seqs.push_back(*seq);
    if (*seq == last) break;
  }
  return seqs;
}

TEST(SlowConsumer, SameUriIsCoalescedLatestNeverLost) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream slow, fast;
  slow.conn().set_rcvbuf(4096);
  ASSERT_TRUE(OpenListen(slow, srv.port(), R"("slow")", R"({"resourceSubscriptions":["file:///hot"]})"));
  ASSERT_TRUE(OpenListen(fast, srv.port(), R"("fast")", R"({"resourceSubscriptions":["file:///cold/"]})"));

  // ~12 MB of updates to one URI while `slow` reads nothing: far past any
  // socket buffer, so without coalescing the stream would have to be closed.
  constexpr int kPublishes = 30, kPerPublish = 200;
  constexpr int kTotal = kPublishes * kPerPublish;
  for (int p = 0; p < kPublishes; ++p) {
    std::string body = "[";
    for (int i = 0; i < kPerPublish; ++i) body += (i ? "," : "") + Item("file:///hot", p * kPerPublish + i, 2000);
    body += "]";
    ASSERT_TRUE(PublishOk(srv.port(), body, kPerPublish)) << "publish " << p;
    // The fast stream is not held up by the slow one.
    ASSERT_TRUE(PublishOk(srv.port(), Item("file:///cold/" + std::to_string(p), p, 10)));
    std::string err;
    auto m = fast.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "fast stream stalled at " << p << ": " << err;
    ASSERT_EQ(m->GetInt({"params", "_meta", "test/seq"}), p) << m->text().substr(0, 300);
  }

  auto seqs = DrainSeqs(slow, R"("slow")", "file:///hot", kTotal - 1, Ms(30000));
  ASSERT_FALSE(seqs.empty()) << "slow stream delivered nothing; ended=" << slow.ended() << " eof=" << slow.eof();
  for (size_t i = 1; i < seqs.size(); ++i) {
    ASSERT_LT(seqs[i - 1], seqs[i]) << "order broken or duplicate at position " << i;
  }
  EXPECT_EQ(seqs.back(), kTotal - 1) << "the latest change was lost (stream ended=" << slow.ended()
                                     << " eof=" << slow.eof() << ", " << seqs.size() << " events)";
  RecordProperty("delivered_of_published", std::to_string(seqs.size()) + "/" + std::to_string(kTotal));
  EXPECT_FALSE(slow.eof()) << "a coalescible slow stream should stay open";
  // Still alive and in sync.
  ASSERT_TRUE(PublishOk(srv.port(), Item("file:///hot", kTotal, 1)));
  auto more = DrainSeqs(slow, R"("slow")", "file:///hot", kTotal, kIo);
  ASSERT_FALSE(more.empty()) << "no event after the drain";
  EXPECT_EQ(more.back(), kTotal);
  EXPECT_EQ(more.size(), 1u) << "events after the drain beyond the new one";
}

TEST(SlowConsumer, PastByteBoundStreamIsClosedOthersUnaffected) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream slow, fast;
  slow.conn().set_rcvbuf(4096);
  ASSERT_TRUE(OpenListen(slow, srv.port(), R"("slow")", R"({"resourceSubscriptions":["file:///flood/"]})"));
  ASSERT_TRUE(OpenListen(fast, srv.port(), R"("fast")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 2));

  // ~64 MB of distinct URIs (nothing can be coalesced) to a stream that never reads.
  constexpr int kPublishes = 66, kPerPublish = 240;
  for (int p = 0; p < kPublishes; ++p) {
    std::string body = "[";
    for (int i = 0; i < kPerPublish; ++i) {
      int seq = p * kPerPublish + i;
      body += (i ? "," : "") + Item("file:///flood/" + std::to_string(seq), seq, 4000);
    }
    body += "]";
    ASSERT_TRUE(PublishOk(srv.port(), body, kPerPublish)) << "publish " << p;
  }
  // The slow subscription is dropped; the fast one stays.
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 1, Ms(15000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1, Ms(15000)));
  EXPECT_TRUE(srv.WaitForStderr("WARN mcpfan: stream closed as a slow consumer", kIo)) << srv.Stderr();  // docs "Logs"
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = fast.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("fast")"));

  // What the slow stream did get is a gap-free prefix, then the connection closes.
  auto seqs = DrainSeqs(slow, R"("slow")", "file:///flood/", -1, Ms(30000));
  EXPECT_TRUE(slow.eof()) << "slow stream not closed; got " << seqs.size() << " events";
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(seqs[i], int64_t(i)) << "not a gap-free prefix at position " << i;
  }
  EXPECT_LT(seqs.size(), size_t(kPublishes * kPerPublish)) << "everything was buffered: no byte bound";
  RecordProperty("slow_stream_received", std::to_string(seqs.size()));
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// Regression: answers to a stdio client's requests were queued with no bound, so a
// client that pipelined requests and never read grew the server's memory until the write
// timeout. Every byte queued to a stream is now under --max-pending-bytes.
TEST(SlowConsumer, AStdioClientThatPipelinesRequestsAndNeverReadsIsClosedAtTheBound) {
  TempDir dir;
  const std::string sock = dir.path() + "/s";
  ServerProcess srv({"--workers", "1", "--unix", sock, "--max-pending-bytes", "65536"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, sock.c_str(), sock.size() + 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << std::strerror(errno);
  std::string window;
  for (int i = 0; i < 100; ++i)
    window += R"({"jsonrpc":"2.0","id":)" + std::to_string(i) +
              R"(,"method":"initialize","params":{}})"
              "\n";
  // Pipeline (bounded: 40,000 windows, 60 s) until the server closes this client.
  bool closed = false;
  auto deadline = After(Ms(60000));
  for (int i = 0; i < 40000 && !closed && Clock::now() < deadline; ++i) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, 100) != 1) {
      auto closes = ReadMetric(srv.port(), "mcpfan_slow_consumer_closes_total");
      closed = closes && *closes >= 1;
      continue;
    }
    if (::send(fd, window.data(), window.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) closed = true;
  }
  ::close(fd);
  EXPECT_TRUE(closed) << "the server kept queueing answers for a client that does not read";
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_slow_consumer_closes_total", 1));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

}  // namespace
}  // namespace itest

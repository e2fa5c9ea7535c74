// HTTP flow control and closing (docs/security.md "Closing without losing answers"): a connection that pipelines and
// never reads stops being read instead of growing the server's memory; answers sent before a
// close stay readable (lingering close), so a client that uploads a whole oversize body
// before reading gets its 413, and a publisher at --max-requests-per-connection gets an
// answer for every publish that was executed, and no publish after that one is executed.
#include <poll.h>
#include <sys/socket.h>

#include <cstring>

#include "harness.h"

namespace itest {
namespace {


// Writes as much of `data` as the socket takes now (non-blocking). Returns bytes written, or
// -1 on an error.
long SendSome(int fd, std::string_view data) {
  ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return n;
  return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
}

TEST(HttpFlow, APipeliningClientThatNeverReadsStopsBeingRead) {
  // No request limit: the connection must be held back by reading, not ended by a count.
  ServerProcess srv({"--workers", "1", "--max-requests-per-connection", "0"});
  ASSERT_TRUE(srv.ok()) << srv.error();
#ifndef MCPFAN_SANITIZED
  const long rss_before = ProcessRssKib(srv.pid());
#endif
  Conn greedy;
  greedy.set_rcvbuf(4096);  // its answers back up in the server soon
  ASSERT_TRUE(greedy.Connect(srv.port()));
  const std::string one = BuildRequest("GET", "/livez", {});  // the cheapest answer: "ok\n"
  std::string window;
  for (int i = 0; i < 256; ++i) window += one;

  // Pipeline until the server says it stopped reading (bounded: 2,000,000 requests, 60 s).
  long requests = 0;
  std::size_t partial = 0;  // bytes of `window` already sent of the current round
  auto deadline = After(Ms(60000));
  bool paused = false;
  for (int round = 0; round < 8000 && !paused && Clock::now() < deadline; ++round) {
    pollfd p{greedy.fd(), POLLOUT, 0};
    if (::poll(&p, 1, 20) == 1) {
      long n = SendSome(greedy.fd(), std::string_view(window).substr(partial));
      ASSERT_GE(n, 0) << "send failed after " << requests << " requests: " << std::strerror(errno);
      partial += static_cast<std::size_t>(n);
      if (partial == window.size()) {
        requests += 256;
        partial = 0;
        continue;  // keep pushing while the socket takes it
      }
    }
    auto pauses = ReadMetric(srv.port(), "mcpfan_read_pauses_total");
    paused = pauses && *pauses >= 1;
  }
  ASSERT_TRUE(paused) << "after " << requests << " pipelined requests the server was still reading";
  // Finish the round in flight so every request sent is whole (the server resumes reading as
  // answers drain, so these bytes go out once we read).
#ifndef MCPFAN_SANITIZED
  // Without pausing, this client alone made the server queue every answer: megabytes.
  EXPECT_LT(ProcessRssKib(srv.pid()) - rss_before, 32 * 1024) << "server RSS grew while a client did not read";
#endif

  // Now read: every request gets its answer, in order, none lost.
  long answered = 0;
  deadline = After(Ms(120000));
  while (answered < requests + (partial ? 256 : 0) && Clock::now() < deadline) {
    if (partial) {
      long n = SendSome(greedy.fd(), std::string_view(window).substr(partial));
      ASSERT_GE(n, 0);
      partial += static_cast<std::size_t>(n);
      if (partial == window.size()) {
        requests += 256;
        partial = 0;
      }
    }
    std::string err;
    auto r = greedy.ReadResponse(kIo, &err);
    ASSERT_TRUE(r) << "answer " << answered << " of " << requests << ": " << err;
    ASSERT_EQ(r->status, 200) << "answer " << answered;
    ASSERT_EQ(r->body, "ok\n");
    ++answered;
  }
  EXPECT_EQ(answered, requests);
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

// Before the fix, the server closed with the client's upload still unread in its receive
// buffer; the kernel then reset the connection and the client never saw the 413.
TEST(HttpFlow, AClientThatUploadsTheWholeOversizeBodyBeforeReadingGetsThe413) {
  ServerProcess srv({"--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string body(2u << 20, 'x');
  const std::string head =
      "POST /v1/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n";
  for (int attempt = 0; attempt < 20; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    Conn c;
    ASSERT_TRUE(c.Connect(srv.port()));
    std::string err;
    ASSERT_TRUE(c.Send(head + body, Ms(20000), &err)) << "the server stopped taking the upload: " << err;
    auto r = c.ReadResponse(kIo, &err);
    ASSERT_TRUE(r) << "no answer after the upload: " << err;
    EXPECT_EQ(r->status, 413);
    EXPECT_NE(r->body.find("larger than"), std::string::npos) << r->body;
    EXPECT_EQ(r->Get("Connection").value_or(""), "close");
  }
}

// At --max-requests-per-connection, pipelined publishes after the last one must not be
// executed, and every executed one must be answered (a publisher that retries the
// unanswered ones would otherwise publish twice).
TEST(HttpFlow, AtTheRequestLimitEveryExecutedPublishIsAnsweredAndNoLaterOneRuns) {
  ServerProcess srv({"--workers", "2", "--max-requests-per-connection", "100"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream listener;
  ASSERT_TRUE(OpenListen(listener, srv.port(), R"("l")", R"({"resourceSubscriptions":["mem://p/"]})"));
  // A pipelining publisher that sends everything before it reads, with bodies large enough
  // that requests keep arriving after the server answered the 100th. An abortive close (with
  // unread input) resets the connection: the upload fails, and what the reset drops (answers
  // not yet transmitted, or not yet read, depending on the peers) is lost; the publisher's
  // retry would then publish twice.
  // 400 requests of 32 KB: more than the socket buffers hold (4 MB + 6 MB at most here), so
  // the upload is still going when the server has answered the 100th.
  const std::string pad(32000, 'p');
  std::string burst;
  for (int i = 0; i < 400; ++i) {
    burst += BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}},
                          R"({"method":"notifications/resources/updated","params":{"uri":"mem://p/)" +
                              std::to_string(i) + R"(","pad":")" + pad + "\"}}");
  }
  Conn pub;
  ASSERT_TRUE(pub.Connect(srv.port()));
  std::string err;
  EXPECT_TRUE(pub.Send(burst, Ms(20000), &err)) << "the upload was reset: " << err;
  int answered = 0;
  bool saw_close = false;
  for (int i = 0; i < 300; ++i) {
    auto r = pub.ReadResponse(kIo, &err);
    if (!r) break;
    EXPECT_EQ(r->status, 202) << r->body;
    ++answered;
    if (r->Get("Connection").value_or("") == "close") {
      saw_close = true;
      break;
    }
  }
  EXPECT_TRUE(saw_close) << "answers read: " << answered << "; last error: " << err;
  EXPECT_TRUE(saw_close);
  EXPECT_EQ(answered, 100);
  EXPECT_TRUE(pub.WaitClosed(Ms(15000)));
  // Exactly the answered ones were published and delivered, in order.
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_published_total", 100));
  for (int i = 0; i < 100; ++i) {
    auto m = listener.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "delivery " << i << ": " << err;
    EXPECT_TRUE(IsNotification(*m, "notifications/resources/updated", R"("l")",
                               R"({"uri":"mem://p/)" + std::to_string(i) + R"(","pad":")" + pad + "\"}"));
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_deliveries_total", 100));
}

}  // namespace
}  // namespace itest

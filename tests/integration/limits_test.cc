// Connection limits (docs/security.md "Limits"): each limit, when hit, gives the documented answer, is
// counted in mcpfan_limit_hits_total{limit=...}, and leaves other clients served.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fstream>

#include "harness.h"

namespace itest {
namespace {

std::string Hits(std::string_view limit) { return "mcpfan_limit_hits_total{limit=\"" + std::string(limit) + "\"}"; }

std::string Healthz() { return BuildRequest("GET", "/healthz", {}); }


TEST(Limits, PartialRequestGets408AfterRequestTimeout) {
  ServerProcess srv({"--request-timeout-ms", "300", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn slow;
  ASSERT_TRUE(slow.Connect(srv.port()));
  ASSERT_TRUE(slow.Send("POST /v1/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n"));  // never finished
  std::string err;
  auto r = slow.ReadResponse(Ms(5000), &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->status, 408);
  EXPECT_EQ(r->Get("Connection").value_or(""), "close");
  EXPECT_NE(r->body.find("300 ms"), std::string::npos) << r->body;
  EXPECT_TRUE(slow.WaitClosed(kIo));
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("request_timeout"), 1));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

TEST(Limits, SilentConnectionIsClosedAfterRequestTimeout) {
  ServerProcess srv({"--request-timeout-ms", "300", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn silent;
  ASSERT_TRUE(silent.Connect(srv.port()));
  EXPECT_TRUE(silent.WaitClosed(Ms(5000)));
  EXPECT_TRUE(silent.in().empty()) << "nothing was asked, nothing should be answered: " << silent.in();
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("request_timeout"), 1));
}

TEST(Limits, IdleKeepAliveClosesButStreamsStayOpen) {
  ServerProcess srv({"--idle-timeout-ms", "300", "--request-timeout-ms", "5000", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream stream;
  ASSERT_TRUE(OpenListen(stream, srv.port(), R"("s")", R"({"toolsListChanged":true})"));
  Conn idle;
  ASSERT_TRUE(idle.Connect(srv.port()));
  ASSERT_TRUE(idle.Send(Healthz()));
  auto r = idle.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(idle.WaitClosed(Ms(5000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("idle_timeout"), 1));
  // The stream idled far longer than the timeout and is still served.
  std::this_thread::sleep_for(Ms(600));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = stream.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("s")"));
}

TEST(Limits, LastRequestOnAConnectionIsAnsweredWithClose) {
  ServerProcess srv({"--max-requests-per-connection", "3", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_TRUE(c.Send(Healthz()));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->Get("Connection").has_value(), i == 3) << "request " << i;
  }
  EXPECT_TRUE(c.WaitClosed(kIo));
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("requests_per_connection"), 1));
}

TEST(Limits, StalledWriterIsClosedAfterWriteTimeoutOthersKeepReceiving) {
  // One worker, so the stalled stream and the healthy one share a loop; a large pending
  // bound, so the write timeout (not the byte bound) is what ends the stalled stream.
  ServerProcess srv({"--write-timeout-ms", "500", "--workers", "1", "--max-pending-bytes", "268435456"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream stalled, healthy;
  stalled.conn().set_rcvbuf(4096);
  ASSERT_TRUE(OpenListen(stalled, srv.port(), R"("stalled")", R"({"resourceSubscriptions":["file:///big/"]})"));
  ASSERT_TRUE(OpenListen(healthy, srv.port(), R"("healthy")", R"({"resourceSubscriptions":["file:///small"]})"));
  long rss_before = ProcessRssKib(srv.pid());
  std::string pad(200000, 'x');
  for (int i = 0; i < 40; ++i) {  // 8 MB to a stream that reads nothing: past every socket buffer
    std::string body = R"({"method":"notifications/resources/updated","params":{"uri":"file:///big/)" +
                       std::to_string(i) + R"(","pad":")" + pad + R"("}})";
    ASSERT_TRUE(PublishOk(srv.port(), body)) << i;
    ASSERT_TRUE(
        PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///small"}})"));
    std::string err;
    auto m = healthy.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "healthy stream stalled behind the stalled one at " << i << ": " << err;
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), Hits("write_timeout"), 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_slow_consumer_closes_total", 0));
  // Memory held for the stalled stream is released with it.
  long rss_after = ProcessRssKib(srv.pid());
  RecordProperty("rss_growth_kib", std::to_string(rss_after - rss_before));
#ifndef MCPFAN_SANITIZED  // ASan keeps freed memory in its quarantine, resident by design
  EXPECT_LT(rss_after - rss_before, 32 * 1024) << "RSS grew from " << rss_before << " to " << rss_after << " KiB";
#endif
  // The stalled client, reading at last, finds its stream cut.
  Deadline end = After(Ms(10000));
  while (!stalled.eof() && Clock::now() < end) stalled.conn().ReadSome(After(Ms(200)));
  EXPECT_TRUE(stalled.eof());
}

// A peer that disappears without FIN or RST (a host powered off, a NAT entry dropped) is
// simulated by closing a socket in TCP repair mode, which sends nothing. The server's next
// keepalive write draws an RST from the kernel, and the stream is reaped.
TEST(Limits, PeerVanishingWithoutFinIsReaped) {
  ServerProcess srv({"--keepalive-ms", "100", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream gone;
  ASSERT_TRUE(OpenListen(gone, srv.port(), R"("gone")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 1));
  int on = 1;
  if (::setsockopt(gone.conn().fd(), IPPROTO_TCP, TCP_REPAIR, &on, sizeof on) != 0) {
    GTEST_SKIP() << "TCP_REPAIR needs CAP_NET_ADMIN (CI runs as root): " << std::strerror(errno);
  }
  gone.conn().Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_connections_open", 1));  // the /metrics request itself
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

TEST(Limits, SizeLimitsAreCounted) {
  ServerProcess srv({"--max-body", "1000", "--max-header-bytes", "2000", "--max-url-length", "500",
                     "--max-uri-length", "100", "--max-uris-per-listen", "2", "--workers", "1"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto status_of = [&](const std::string& request) {
    auto r = Roundtrip(srv.port(), request);
    return r ? r->status : 0;
  };
  EXPECT_EQ(
      status_of(BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}}, std::string(1001, ' '))),
      413);
  EXPECT_EQ(status_of(BuildRequest("GET", "/healthz", {{"X-Pad", std::string(2100, 'h')}})), 431);
  EXPECT_EQ(status_of(BuildRequest("GET", "/" + std::string(600, 'u'), {})), 414);
  std::string long_uri = "file:///" + std::string(200, 'l');
  auto listen = [&](std::string_view id, std::string_view uris) {
    std::string body = RpcBody(id, "subscriptions/listen",
                               R"("notifications":{"resourceSubscriptions":)" + std::string(uris) + "}", "2026-07-28");
    return McpCall(srv.port(), McpPost(body, McpHeaders("2026-07-28", "subscriptions/listen")));
  };
  EXPECT_TRUE(IsRpcError(listen("1", "[\"" + long_uri + "\"]"), 200, -32602, "1", {"longer than 100"}));
  EXPECT_TRUE(IsRpcError(listen("2", R"(["a:1","a:2","a:3"])"), 200, -32602, "2", {"more than 2"}));
  for (auto name : {"body_bytes", "header_bytes", "url_length", "uri_length", "uris_per_listen"}) {
    EXPECT_TRUE(PollMetricEq(srv.port(), Hits(name), 1)) << name;
  }
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

}  // namespace
}  // namespace itest

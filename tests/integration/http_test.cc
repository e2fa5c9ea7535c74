// HTTP/1.1 behaviour: keep-alive, pipelining, chunked request bodies, tiny
// TCP segments, garbage input, plain endpoints.
#include "harness.h"

namespace itest {
namespace {

std::string DiscoverReq(int id) {
  return McpPost(RpcBody(std::to_string(id), "server/discover"), McpHeaders(kV2026, "server/discover"));
}

void ExpectDiscoverReply(const std::optional<HttpResponse>& r, int id, const std::string& err) {
  ASSERT_TRUE(r) << err;
  ASSERT_EQ(r->status, 200) << r->body;
  Json j(r->body);
  ASSERT_TRUE(j.ok()) << r->body;
  EXPECT_EQ(j.GetInt({"id"}), id) << r->body;
  EXPECT_EQ(j.GetString({"result", "resultType"}), "complete") << r->body;
}

TEST(Http, HealthzAndStatusCodes) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto h = Roundtrip(srv.port(), BuildRequest("GET", "/healthz", {}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(h->body.substr(0, 14), R"({"status":"ok")") << h->body;
  auto nf = Roundtrip(srv.port(), BuildRequest("GET", "/no/such/path", {}));
  ASSERT_TRUE(nf);
  EXPECT_EQ(nf->status, 404);
  auto wm = Roundtrip(srv.port(), BuildRequest("GET", "/v1/publish", {}));
  ASSERT_TRUE(wm);
  EXPECT_EQ(wm->status, 405);
  auto m = Roundtrip(srv.port(), BuildRequest("GET", "/metrics", {}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_NE(m->body.find("mcpfan_listen_streams_open"), std::string::npos) << m->body.substr(0, 2000);
}

TEST(Http, KeepAliveTwoRequestsOneConnection) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  std::string err;
  ASSERT_TRUE(c.Connect(srv.port(), kIo, &err)) << err;
  ASSERT_TRUE(c.Send(DiscoverReq(1), kIo, &err)) << err;
  ExpectDiscoverReply(c.ReadResponse(kIo, &err), 1, err);
  ASSERT_FALSE(c.eof()) << "server closed a keep-alive connection";
  ASSERT_TRUE(c.Send(DiscoverReq(2), kIo, &err)) << err;
  ExpectDiscoverReply(c.ReadResponse(kIo, &err), 2, err);
  ASSERT_TRUE(c.Send(BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}},
                                  R"({"method":"notifications/tools/list_changed"})"),
                     kIo, &err))
      << err;
  auto p = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->status, 202) << p->body;
}

TEST(Http, PipelinedRequestsAnsweredInOrder) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  std::string err;
  ASSERT_TRUE(c.Connect(srv.port(), kIo, &err)) << err;
  std::string batch = BuildRequest("GET", "/healthz", {}) + DiscoverReq(11) + DiscoverReq(12) +
                      BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}},
                                   R"([{"method":"notifications/tools/list_changed"},
                                       {"method":"notifications/prompts/list_changed"}])") +
                      DiscoverReq(13) + BuildRequest("GET", "/healthz", {});
  ASSERT_TRUE(c.Send(batch, kIo, &err)) << err;
  auto h1 = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(h1) << err;
  EXPECT_EQ(h1->status, 200);
  EXPECT_EQ(h1->body.substr(0, 14), R"({"status":"ok")") << h1->body;
  ExpectDiscoverReply(c.ReadResponse(kIo, &err), 11, err);
  ExpectDiscoverReply(c.ReadResponse(kIo, &err), 12, err);
  auto p = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->status, 202) << p->body;
  Json pj(p->body);
  EXPECT_EQ(pj.GetInt({"accepted"}), 2) << p->body;
  ExpectDiscoverReply(c.ReadResponse(kIo, &err), 13, err);
  auto h2 = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(h2) << err;
  EXPECT_EQ(h2->status, 200);
  EXPECT_EQ(h2->body.substr(0, 14), R"({"status":"ok")") << h2->body;
}

TEST(Http, ChunkedRequestBodyOnPublish) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  ASSERT_TRUE(OpenListen(s, srv.port(), R"("ch")", R"({"resourceSubscriptions":["file:///chunked"]})"));
  std::string body = R"({"method":"notifications/resources/updated","params":{"uri":"file:///chunked","n":1}})";
  auto r = Roundtrip(srv.port(), BuildRequest("POST", "/v1/publish",
                                              {{"Content-Type", "application/json"}, {"Transfer-Encoding", "chunked"}},
                                              Chunked(body, 7)));
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 202) << r->body;
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/resources/updated", R"("ch")", R"({"uri":"file:///chunked","n":1})"));
}

TEST(Http, ChunkedRequestBodyOnMcp) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto headers = McpHeaders(kV2026, "server/discover");
  headers.push_back({"Transfer-Encoding", "chunked"});
  std::string err;
  auto r = Roundtrip(srv.port(), BuildRequest("POST", "/mcp", headers, Chunked(RpcBody("21", "server/discover"), 10)),
                     kIo, &err);
  ExpectDiscoverReply(r, 21, err);

  // A chunked listen opens a stream too.
  auto lh = McpHeaders(kV2026, "subscriptions/listen");
  lh.push_back({"Transfer-Encoding", "chunked"});
  SseStream s;
  std::string req = BuildRequest(
      "POST", "/mcp", lh,
      Chunked(RpcBody(R"("chl")", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"), 5));
  ASSERT_TRUE(s.Open(srv.port(), req, kIo, &err)) << err;
  ASSERT_TRUE(s.is_sse()) << s.head().status << " " << s.head().body;
  auto ack = s.NextMessage(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
}

TEST(Http, OneByteSegments) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string err;
  {
    Conn c;
    ASSERT_TRUE(c.Connect(srv.port(), kIo, &err)) << err;
    ASSERT_TRUE(c.SendBytewise(DiscoverReq(31), Ms(1), &err)) << err;
    ExpectDiscoverReply(c.ReadResponse(kIo, &err), 31, err);
  }
  // A listen dribbled in byte by byte, then a publish dribbled the same way.
  SseStream s;
  std::string listen = ListenRequest(R"("slow")", R"({"resourceSubscriptions":["file:///slow"]})");
  ASSERT_TRUE(s.conn().Connect(srv.port(), kIo, &err)) << err;
  ASSERT_TRUE(s.conn().SendBytewise(listen, Ms(1), &err)) << err;
  auto ack = s.NextMessage(kIo, &err);
  ASSERT_TRUE(ack) << err << " (head status " << s.head().status << ")";
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
  Conn p;
  ASSERT_TRUE(p.Connect(srv.port(), kIo, &err)) << err;
  ASSERT_TRUE(
      p.SendBytewise(BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}},
                                  R"({"method":"notifications/resources/updated","params":{"uri":"file:///slow"}})"),
                     Ms(1), &err))
      << err;
  auto pr = p.ReadResponse(kIo, &err);
  ASSERT_TRUE(pr) << err;
  EXPECT_EQ(pr->status, 202) << pr->body;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/resources/updated", R"("slow")", R"({"uri":"file:///slow"})"));
}

TEST(Http, HeaderNamesAreCaseInsensitive) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<Header> h = {{"content-type", "application/json"},
                           {"ACCEPT", "application/json, text/event-stream"},
                           {"mcp-protocol-version", std::string(kV2026)},
                           {"MCP-METHOD", "subscriptions/listen"}};
  SseStream s;
  std::string err;
  ASSERT_TRUE(s.Open(srv.port(),
                     McpPost(RpcBody("40", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"), h),
                     kIo, &err))
      << err;
  ASSERT_TRUE(s.is_sse()) << s.head().status << " " << s.head().body;
  auto ack = s.NextMessage(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_EQ(ack->GetString({"method"}), "notifications/subscriptions/acknowledged");
  auto p = Roundtrip(srv.port(), BuildRequest("POST", "/v1/publish", {{"CONTENT-TYPE", "application/json"}},
                                              R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 202) << p->body;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", "40"));
}

TEST(Http, ConnectionCloseIsHonoured) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  std::string err;
  ASSERT_TRUE(c.Connect(srv.port(), kIo, &err)) << err;
  ASSERT_TRUE(c.Send(BuildRequest("GET", "/healthz", {{"Connection", "close"}}), kIo, &err)) << err;
  auto r = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(c.WaitClosed(kIo)) << "server kept a Connection: close connection open";
}

TEST(Http, GarbageGets400AndCloseOthersUnaffected) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream other;
  ASSERT_TRUE(OpenListen(other, srv.port(), R"("other")", R"({"toolsListChanged":true})"));

  using namespace std::string_literals;
  for (const std::string& garbage : {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n"s,
                                     "HELLO THERE\r\n\r\n"s,
                                     "GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\nbroken header\r\n\r\n"s}) {
    Conn c;
    std::string err;
    ASSERT_TRUE(c.Connect(srv.port(), kIo, &err)) << err;
    ASSERT_TRUE(c.Send(garbage, kIo, &err)) << err;
    auto r = c.ReadResponse(kIo, &err);
    ASSERT_TRUE(r) << err << " for garbage " << ::testing::PrintToString(garbage);
    EXPECT_EQ(r->status, 400) << ::testing::PrintToString(garbage);
    EXPECT_TRUE(c.WaitClosed(kIo)) << "connection not closed after 400 for " << ::testing::PrintToString(garbage);
  }
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = other.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("other")"));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

}  // namespace
}  // namespace itest

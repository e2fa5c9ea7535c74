// Bad requests to POST /mcp: right status, JSON-RPC code and message, and the
// server keeps serving afterwards. Also clients vanishing mid-request/stream.
#include "harness.h"

namespace itest {
namespace {

constexpr int kMaxBody = 2048;
constexpr int kMaxUri = 128;

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--workers", "2", "--max-body", std::to_string(kMaxBody), "--max-uri-length", std::to_string(kMaxUri)});
    ASSERT_TRUE(srv_->ok()) << srv_->error();
  }
  void TearDown() override {
    if (srv_ && srv_->ok() && !HasFatalFailure()) {
      EXPECT_TRUE(ServesListenAndPublish(srv_->port())) << "server must keep serving after bad input";
      EXPECT_FALSE(srv_->exited()) << srv_->DescribeStatus();
    }
  }
  int port() const { return srv_->port(); }
  RpcReply Raw(std::string_view body, std::string_view method = "server/discover") {
    return McpCall(port(), McpPost(body, McpHeaders(kV2026, method)));
  }
  std::unique_ptr<ServerProcess> srv_;
};

TEST_F(BadInput, MalformedJsonIsParseError) {
  EXPECT_TRUE(IsRpcError(Raw(R"({"jsonrpc":"2.0","id":1,"method":"server/discover",)"), 400, -32700, "null",
                         {"parse", "json"}));
  EXPECT_TRUE(IsRpcError(Raw("not json at all"), 400, -32700, "null", {"parse", "json"}));
  EXPECT_TRUE(IsRpcError(Raw(std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\xff\xfe\"}")), 400, -32700,
                         "null", {"parse", "json", "utf"}));
}

TEST_F(BadInput, BatchArrayIsInvalidRequest) {
  std::string one = RpcBody("1", "server/discover");
  EXPECT_TRUE(IsRpcError(Raw("[" + one + "," + one + "]"), 400, -32600, "null", {"batch", "array"}));
  EXPECT_TRUE(IsRpcError(Raw("[]"), 400, -32600, "null", {"batch", "array", "empty"}));
}

TEST_F(BadInput, NonObjectBodyIsInvalidRequest) {
  for (const char* body : {"42", R"("a string")", "null", "true"}) {
    EXPECT_TRUE(IsRpcError(Raw(body), 400, -32600, "null", {"object"})) << "body " << body;
  }
}

TEST_F(BadInput, MissingJsonrpcOrMethodIsInvalidRequest) {
  std::string env = Envelope(kV2026);
  EXPECT_TRUE(IsRpcError(Raw(R"({"id":1,"method":"server/discover","params":{"_meta":)" + env + "}}"), 400, -32600,
                         "1|null", {"jsonrpc"}));
  EXPECT_TRUE(IsRpcError(Raw(R"({"jsonrpc":"1.0","id":2,"method":"server/discover","params":{"_meta":)" + env + "}}"),
                         400, -32600, "2|null", {"jsonrpc", "2.0"}));
  // Without a method there is no Mcp-Method header to send: use the draft
  // revision, whose requests may omit the headers, so only the body is at fault.
  std::string draft = Envelope(kDraft);
  auto no_headers = [&](std::string body) {
    return McpCall(port(), McpPost(body, McpHeaders("", "")));
  };
  EXPECT_TRUE(IsRpcError(no_headers(R"({"jsonrpc":"2.0","id":3,"params":{"_meta":)" + draft + "}}"), 400, -32600,
                         "3|null", {"method"}));
  EXPECT_TRUE(IsRpcError(no_headers(R"({"jsonrpc":"2.0","id":4,"method":17,"params":{"_meta":)" + draft + "}}"), 400,
                         -32600, "4|null", {"method"}));
}

// Streamable HTTP, 2026-07-28: a method the server does not have is 404 with -32601.
TEST_F(BadInput, UnknownMethodIs404MethodNotFound) {
  auto r = Raw(RpcBody(R"("u1")", "foo/bar"), "foo/bar");
  EXPECT_TRUE(IsRpcError(r, 404, -32601, R"("u1")", {"foo/bar", "method"}));
}

TEST_F(BadInput, ResourceSubscriptionsNotStringArrayIsInvalidParams) {
  for (const char* value : {R"([1,2])", R"("file:///x")", R"(["file:///ok",null])", R"({"a":"b"})"}) {
    std::string fields = std::string(R"("notifications":{"resourceSubscriptions":)") + value + "}";
    auto r = Raw(RpcBody("9", "subscriptions/listen", fields), "subscriptions/listen");
    EXPECT_TRUE(IsRpcError(r, 200, -32602, "9", {"resourceSubscriptions"})) << "value " << value;
  }
  EXPECT_TRUE(PollMetricEq(port(), "mcpfan_subscriptions_active", 0));
}

TEST_F(BadInput, UriOverMaxLengthIsInvalidParams) {
  std::string longuri = "file:///" + std::string(kMaxUri, 'u');
  std::string fields = R"("notifications":{"resourceSubscriptions":["file:///fine",")" + longuri + R"("]})";
  auto r = Raw(RpcBody("10", "subscriptions/listen", fields), "subscriptions/listen");
  EXPECT_TRUE(IsRpcError(r, 200, -32602, "10", {"uri", "length", "long"}));
  // Exactly at the limit is fine.
  std::string atlimit = "file:///" + std::string(kMaxUri - 8, 'k');
  SseStream s;
  EXPECT_TRUE(OpenListen(s, port(), "11", R"({"resourceSubscriptions":[")" + atlimit + R"("]})"));
}

TEST_F(BadInput, BodyOverMaxBodyIs413) {
  std::string pad(kMaxBody + 100, ' ');
  auto r = McpCall(port(), McpPost(RpcBody("12", "server/discover") + pad, McpHeaders(kV2026, "server/discover")));
  EXPECT_EQ(r.http.status, 413) << r.err << " " << r.http.body;
  // Chunked: the limit applies to the decoded body too.
  auto h = McpHeaders(kV2026, "server/discover");
  h.push_back({"Transfer-Encoding", "chunked"});
  auto c = Roundtrip(port(), BuildRequest("POST", "/mcp", h, Chunked(RpcBody("13", "server/discover") + pad, 512)));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 413) << c->body;
}

TEST_F(BadInput, WrongContentTypeIs415) {
  auto h = McpHeaders(kV2026, "server/discover");
  h[0].value = "text/plain";
  auto r = Roundtrip(port(), McpPost(RpcBody("14", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415) << r->body;
  h[0].value = "application/x-www-form-urlencoded";
  r = Roundtrip(port(), McpPost(RpcBody("15", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415) << r->body;
  // A charset parameter is still JSON.
  h[0].value = "application/json; charset=utf-8";
  r = Roundtrip(port(), McpPost(RpcBody("16", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(BadInput, AcceptHtmlIs406MissingAcceptIsFine) {
  auto h = McpHeaders(kV2026, "server/discover");
  h[1].value = "text/html";
  auto r = Roundtrip(port(), McpPost(RpcBody("17", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 406) << r->body;
  h.erase(h.begin() + 1);
  r = Roundtrip(port(), McpPost(RpcBody("18", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(BadInput, ForeignOriginIs403) {
  auto h = McpHeaders(kV2026, "server/discover");
  h.push_back({"Origin", "http://evil.example"});
  auto r = Roundtrip(port(), McpPost(RpcBody("19", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
  // A foreign-origin listen opens nothing.
  auto lh = McpHeaders(kV2026, "subscriptions/listen");
  lh.push_back({"Origin", "https://attacker.example:8443"});
  auto l = Roundtrip(
      port(), McpPost(RpcBody("20", "subscriptions/listen", R"("notifications":{"toolsListChanged":true})"), lh));
  ASSERT_TRUE(l);
  EXPECT_EQ(l->status, 403) << l->body;
  // Loopback origins are allowed by default.
  h.back().value = "http://localhost:5173";
  r = Roundtrip(port(), McpPost(RpcBody("21", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  h.back().value = "http://127.0.0.1:9999";
  r = Roundtrip(port(), McpPost(RpcBody("22", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST(BadInputOrigin, AllowOriginFlagAllowsThatOrigin) {
  ServerProcess srv({"--allow-origin", "https://app.example.com"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  auto h = McpHeaders(kV2026, "server/discover");
  h.push_back({"Origin", "https://app.example.com"});
  auto r = Roundtrip(srv.port(), McpPost(RpcBody("1", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  h.back().value = "https://other.example.com";
  r = Roundtrip(srv.port(), McpPost(RpcBody("2", "server/discover"), h));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403) << r->body;
}

// Absurd request heads are refused (any 4xx, or a close) without harm.
TEST_F(BadInput, OversizedHeadIsRefused) {
  for (size_t n : {size_t(64 * 1024), size_t(1024 * 1024)}) {
    Conn c;
    std::string err;
    ASSERT_TRUE(c.Connect(port(), kIo, &err)) << err;
    std::string req = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(n, 'b') + "\r\n\r\n";
    c.Send(req, kIo, &err);  // the server may close before taking it all
    auto r = c.ReadResponse(kIo, &err);
    if (r) {
      EXPECT_GE(r->status, 400) << n << "-byte header";
      EXPECT_LT(r->status, 500) << n << "-byte header";
    } else {
      EXPECT_TRUE(c.eof()) << n << "-byte header: neither a response nor a close: " << err;
    }
  }
}

TEST_F(BadInput, ClientDisconnectsMidRequest) {
  std::string full = McpPost(RpcBody("30", "server/discover"), McpHeaders(kV2026, "server/discover"));
  for (size_t cut : {size_t(5), full.find("\r\n\r\n") - 3, full.find("\r\n\r\n") + 10}) {
    for (bool rst : {false, true}) {
      Conn c;
      std::string err;
      ASSERT_TRUE(c.Connect(port(), kIo, &err)) << err;
      ASSERT_TRUE(c.Send(full.substr(0, cut), kIo, &err)) << err;
      if (rst) {
        c.Reset();
      } else {
        c.Close();
      }
    }
  }
  // Half-closed after a complete request: the reply still comes.
  Conn c;
  std::string err;
  ASSERT_TRUE(c.Connect(port(), kIo, &err)) << err;
  ASSERT_TRUE(c.Send(full, kIo, &err)) << err;
  c.ShutdownWrite();
  auto r = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->status, 200);
  c.Close();
  EXPECT_TRUE(PollMetric(port(), "mcpfan_connections_open", [](double v) { return v <= 1; }));
}

TEST_F(BadInput, ClientDisconnectsMidStream) {
  std::vector<std::unique_ptr<SseStream>> streams;
  for (int i = 0; i < 6; ++i) {
    streams.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenListen(*streams.back(), port(), std::to_string(100 + i),
                           R"({"resourceSubscriptions":["file:///mid/"],"toolsListChanged":true})"));
  }
  // Publish a burst in slices that fit --max-body; vanish while it is written.
  for (int i = 0; i < 200; i += 5) {
    std::string slice = "[";
    for (int k = i; k < i + 5; ++k) {
      slice += std::string(k > i ? "," : "") +
               R"({"method":"notifications/resources/updated","params":{"uri":"file:///mid/)" + std::to_string(k) +
               R"(","pad":")" + std::string(200, 'p') + R"("}})";
    }
    slice += "]";
    ASSERT_TRUE(PublishOk(port(), slice, 5));
    if (i == 50) {
      streams[0]->conn().Reset();
      streams[1]->conn().Close();
    }
  }
  streams[2]->conn().Reset();
  streams[3]->conn().Close();
  // The remaining two still get everything, in order.
  for (int s = 4; s < 6; ++s) {
    for (int i = 0; i < 200; ++i) {
      std::string err;
      auto m = streams[s]->NextMessage(kIo, &err);
      ASSERT_TRUE(m) << "stream " << s << " event " << i << ": " << err;
      auto uri = m->GetString({"params", "uri"});
      ASSERT_EQ(uri, "file:///mid/" + std::to_string(i)) << m->text();
    }
  }
  for (int s = 4; s < 6; ++s) streams[s]->conn().Close();
  EXPECT_TRUE(PollMetricEq(port(), "mcpfan_listen_streams_open", 0));
  EXPECT_TRUE(PollMetricEq(port(), "mcpfan_subscriptions_active", 0));
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// Found by fuzz_http: a `ping` sent as a notification (no id) was answered with a result
// whose id was empty, i.e. invalid JSON. A notification gets 202 and no body.
TEST(FuzzFindings, PingNotificationGets202) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string body = R"({"jsonrpc":"2.0","method":"ping","params":{"_meta":)" + Envelope("2026-07-28") + "}}";
  auto r = Roundtrip(srv.port(), McpPost(body, McpHeaders("2026-07-28", "ping")));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202);
  EXPECT_TRUE(r->body.empty()) << r->body;
}

// Found by fuzz_http: invalid UTF-8 in a Host header or path, echoed in the error body.
TEST(FuzzFindings, ErrorBodiesStayValidJsonWithInvalidUtf8) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (std::string req : {std::string("GET /healthz HTTP/1.1\r\nHost: 12\xad""7.0.0.1\r\n\r\n"),
                          std::string("GET /\xff\xfe HTTP/1.1\r\nHost: localhost\r\n\r\n")}) {
    auto r = Roundtrip(srv.port(), req);
    ASSERT_TRUE(r);
    EXPECT_GE(r->status, 400);
    EXPECT_TRUE(Json(r->body).ok()) << r->body;
  }
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// Noticed while fuzzing: a HEAD answer carried a body, which a keep-alive client would read
// as the start of the next response.
TEST(FuzzFindings, HeadAnswerHasNoBody) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                     "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
  ASSERT_TRUE(c.WaitClosed(kIo));
  const std::string& in = c.in();
  std::size_t first_end = in.find("\r\n\r\n");
  ASSERT_NE(first_end, std::string::npos) << in;
  EXPECT_EQ(in.rfind("HTTP/1.1 405", 0), 0u) << in;
  EXPECT_EQ(in.substr(first_end + 4, 12), "HTTP/1.1 200") << "bytes after the HEAD answer's headers: " << in;
}

}  // namespace
}  // namespace itest

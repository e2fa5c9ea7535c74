// The front proxy's safety rules (docs/protocol.md "What is rejected, rewritten and never retried"), each against a
// scripted upstream that records what it received: no request smuggling (framing is mcpfan's, fields are forwarded only
// as parsed and checked), hop-by-hop fields and trailers stay at the hop, a proxied HEAD ends at its head, a request
// the upstream may have received is never sent twice, and a session's upstream cursor changes only for the caller
// granted the stream.
#include <string>
#include <vector>

#include "fake_upstream.h"
#include "harness.h"
#include "session_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

constexpr std::string_view kJson = "Content-Type: application/json\r\n";

std::vector<std::string> ProxyArgs(const std::string& upstream_url, std::vector<std::string> extra = {}) {
  // One worker: consecutive requests share its upstream pool.
  std::vector<std::string> args = {"--workers", "1", "--upstream", upstream_url};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::string ToolResult(std::string_view id_json) {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id_json) + R"(,"result":{"content":[]}})";
}

FakeUpstream::Handler AnswerEverything() {
  return [](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, ToolResult(IdOf(r))));
    return FakeUpstream::Next::Read;
  };
}

std::string ToolCallHead(std::string_view extra_fields) {
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, "
         "text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: t\r\n" +
         std::string(extra_fields);
}

std::string ToolCallBody(std::string_view id) { return RpcBody(id, "tools/call", R"("name":"t","arguments":{})"); }

// ---------------------------------------------------------------- 1. smuggling

// The review's probe: "Transfer-Encoding : chunked" was de-chunked by mcpfan and forwarded
// beside mcpfan's own Content-Length; an upstream that trims the space and lets TE win read
// the smuggled request that the chunked body held.
TEST(ProxySafety, AFramingFieldWithWhitespaceBeforeTheColonIsRefusedNotForwarded) {
  FakeUpstream up(AnswerEverything());
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string smuggled = "0\r\n\r\nPOST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nEVIL!";
  std::string body = ToolCallBody("1");
  std::string chunk = "";
  char hex[16];
  std::snprintf(hex, sizeof hex, "%zx\r\n", body.size() + smuggled.size());
  std::string req = ToolCallHead("Transfer-Encoding : chunked\r\n\r\n") + hex + body + smuggled + "\r\n0\r\n\r\n";
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send(req));
  std::string err;
  auto r = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_TRUE(c.WaitClosed(kIo)) << "the connection stays open after a request it could not frame";
  // Something later is forwarded; the refused request never was.
  RpcReply ok = McpCall(srv.port(), McpPost(ToolCallBody("2"), McpHeaders(kV2026, "tools/call", "t")));
  ASSERT_EQ(ok.http.status, 200) << ok.http.body;
  ASSERT_TRUE(up.WaitRequests(1));
  EXPECT_EQ(up.requests().size(), 1u);
  for (const auto& q : up.requests()) {
    for (const auto& h : q.headers) EXPECT_EQ(h.name.find(' '), std::string::npos) << "forwarded: '" << h.name << "'";
    EXPECT_EQ(q.body.find("EVIL"), std::string::npos);
  }
}

// Whatever framing the client used, the upstream gets mcpfan's: a Content-Length for the body
// mcpfan read whole, never the client's Transfer-Encoding or Content-Length.
TEST(ProxySafety, ChunkedRequestsAreForwardedWithMcpfansOwnLength) {
  FakeUpstream up(AnswerEverything());
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string body = ToolCallBody("3");
  RpcReply r = McpCall(srv.port(), ToolCallHead("Transfer-Encoding: chunked\r\n\r\n") + Chunked(body, 10));
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].body, body);
  EXPECT_EQ(seen[0].Get("content-length").value_or(""), std::to_string(body.size()));
  EXPECT_FALSE(seen[0].Get("transfer-encoding").has_value());
}

// ---------------------------------------------------------------- 4. hop-by-hop and trailers

TEST(ProxySafety, FieldsTheClientsConnectionNamesStayAtTheHop) {
  FakeUpstream up(AnswerEverything());
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string body = ToolCallBody("4");
  std::string req =
      ToolCallHead(
          "Connection: keep-alive, X-Hop-Secret\r\nX-Hop-Secret: s3cret\r\nX-Kept: k\r\nKeep-Alive: timeout=5\r\n"
          "Content-Length: " +
          std::to_string(body.size()) + "\r\n\r\n") +
      body;
  RpcReply r = McpCall(srv.port(), req);
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_FALSE(seen[0].Get("x-hop-secret").has_value()) << "a field the Connection header names was forwarded";
  EXPECT_FALSE(seen[0].Get("connection").has_value());
  EXPECT_FALSE(seen[0].Get("keep-alive").has_value());
  EXPECT_EQ(seen[0].Get("x-kept").value_or(""), "k");
}

TEST(ProxySafety, TrailersAreNotForwarded) {
  FakeUpstream up(AnswerEverything());
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string body = ToolCallBody("5");
  std::string chunked = Chunked(body, 16);
  chunked.erase(chunked.size() - 2);  // "0\r\n", then the trailers
  chunked += "X-Trailer-One: 1\r\nMcp-Session-Id: from-a-trailer\r\nX-Trailer-Last: 2\r\n\r\n";
  RpcReply r = McpCall(srv.port(), ToolCallHead("Transfer-Encoding: chunked\r\n\r\n") + chunked);
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].body, body);
  for (std::string_view name : {"x-trailer-one", "mcp-session-id", "x-trailer-last"}) {
    EXPECT_FALSE(seen[0].Get(name).has_value()) << "trailer " << name << " became a forwarded header";
  }
}

// ---------------------------------------------------------------- 2. HEAD

// The upstream's answer to a HEAD ends at its head (its Content-Length describes a GET's
// body). Before the fix the upstream leg waited for that body until --upstream-idle-ms (300 s),
// and the request pipelined behind the HEAD was never answered.
TEST(ProxySafety, AProxiedHeadEndsAtItsHeadAndThePipelinedRequestIsAnswered) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    if (r.method == "HEAD") {
      FakeUpstream::Write(
          fd,
          "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, POST, DELETE\r\nContent-Type: application/json\r\n"
          "Content-Length: 42\r\n\r\n");
      return FakeUpstream::Next::Read;
    }
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, ToolResult(IdOf(r))));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send("HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" +
                     McpPost(ToolCallBody("6"), McpHeaders(kV2026, "tools/call", "t"))));
  HttpResponse head;
  std::string err;
  ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
  EXPECT_EQ(head.status, 405);
  EXPECT_EQ(head.Get("content-length").value_or(""), "42") << "a HEAD answer keeps the GET's headers";
  // No body follows a HEAD answer: the next bytes are the pipelined request's answer.
  auto next = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(next) << "the request pipelined behind the HEAD was not answered: " << err;
  EXPECT_EQ(next->status, 200);
  EXPECT_EQ(next->body, ToolResult("6"));
  EXPECT_EQ(ReadMetric(srv.port(), "mcpfan_upstream_connects_total").value_or(-1), 1)
      << "the HEAD's connection was not reused";
}

// A HEAD the upstream never answers gets the 502 without a body, and the connection goes on.
TEST(ProxySafety, AFailedProxiedHeadGetsAnErrorWithoutABody) {
  ServerProcess srv(ProxyArgs("http://127.0.0.1:" + std::to_string(UnusedPort()) + "/mcp"));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send("HEAD /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  HttpResponse head;
  std::string err;
  ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
  EXPECT_EQ(head.status, 502);
  auto next = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(next) << err;
  EXPECT_EQ(next->status, 200) << "the 502's body was read as the next answer";
}

// ---------------------------------------------------------------- 3. never twice

// The upstream reads a POST on a pooled connection and closes it without answering (its
// keep-alive timer fired as the request arrived). The upstream may have run it: mcpfan
// answers 502 and does not send it again. Before the fix it was sent again on a fresh
// connection, and the tool ran twice.
TEST(ProxySafety, APostOnAPooledConnectionThatClosesIsNeverSentTwice) {
  std::atomic<int> seen{0};
  FakeUpstream up([&](int fd, const UpstreamRequest& r) {
    if (++seen == 2) return FakeUpstream::Next::Close;  // the second request: read, not answered
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, ToolResult(IdOf(r))));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply first = McpCall(srv.port(), McpPost(ToolCallBody("1"), McpHeaders(kV2026, "tools/call", "t")));
  ASSERT_EQ(first.http.status, 200) << first.http.body;
  RpcReply second = McpCall(srv.port(), McpPost(RpcBody("2", "tools/call", R"("name":"charge-card","arguments":{})"),
                                                McpHeaders(kV2026, "tools/call", "charge-card")));
  EXPECT_EQ(second.http.status, 502) << second.http.body;
  EXPECT_NE(second.http.body.find("not sent again"), std::string::npos) << second.http.body;
  EXPECT_EQ(up.CountBodies("charge-card"), 1) << "the POST reached the upstream twice";
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_upstream_not_retried_total", 1));
}

// An idempotent request in the same spot is sent once more, on a fresh connection.
TEST(ProxySafety, AGetOnAPooledConnectionThatClosesIsRetriedOnce) {
  std::atomic<int> seen{0};
  FakeUpstream up([&](int fd, const UpstreamRequest& r) {
    if (++seen == 2) return FakeUpstream::Next::Close;
    FakeUpstream::Write(fd,
                        FakeUpstream::Answer(200, kJson, r.method == "GET" ? "{\"get\":true}" : ToolResult(IdOf(r))));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply first = McpCall(srv.port(), McpPost(ToolCallBody("1"), McpHeaders(kV2026, "tools/call", "t")));
  ASSERT_EQ(first.http.status, 200) << first.http.body;
  auto get = Roundtrip(srv.port(), BuildRequest("GET", "/mcp?probe=1", {{"Accept", "text/event-stream"}}));
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200) << get->body;
  EXPECT_EQ(get->body, "{\"get\":true}");
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_upstream_retried_total", 1));
}

// ---------------------------------------------------------------- 9. the session cursor

// A second GET for a session whose stream is open is refused (409). Before the fix it had
// already overwritten the session's upstream cursor, so the open stream's next ids lost the
// upstream's event id (and a resume would have replayed the upstream's stream from the start).
TEST(ProxySafety, ARefusedSessionGetLeavesTheUpstreamCursorAlone) {
  ResumableUpstream ru;
  ServerProcess srv(ProxyArgs(ru.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "file:///r"));
  SseStream get;
  get.AllowIds();
  ASSERT_TRUE(OpenSessionStream(get, srv.port(), sid));
  std::optional<SseEvent> ev;
  for (int i = 0; i < 8 && !(ev && ev->id.find("~up-") != std::string::npos); ++i) ev = get.Next();
  ASSERT_TRUE(ev && ev->id.find("~up-") != std::string::npos) << "the upstream's event did not arrive";
  const std::string upstream_part = ev->id.substr(ev->id.find('~'));

  auto refused = Roundtrip(srv.port(), SessionGetRequest(sid));
  ASSERT_TRUE(refused);
  ASSERT_EQ(refused->status, 409) << refused->body;

  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///r")));
  std::optional<SseEvent> note;
  for (int i = 0; i < 8 && !(note && note->data.find("file:///r") != std::string::npos); ++i) note = get.Next();
  ASSERT_TRUE(note && note->data.find("file:///r") != std::string::npos) << "the notification did not arrive";
  EXPECT_NE(note->id.find(upstream_part), std::string::npos)
      << "the refused GET reset the session's upstream cursor: id " << note->id << ", expected it to carry "
      << upstream_part;
}

}  // namespace
}  // namespace itest

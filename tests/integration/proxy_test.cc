// The front proxy (--upstream, docs/protocol.md "Front proxy") against scripted upstreams (fake_upstream.h): what
// is forwarded and how (headers both ways, answers streamed as they come, pipelined requests
// in order), what mcpfan serves itself (listens; a 2025 session's subscriptions and GET
// stream notifications, merged with the upstream's own GET stream), what it adds
// (capabilities), and each way an upstream can misbehave — unreachable, silent, quiet
// mid-stream, cut short, oversize, not JSON, not HTTP — with the listens going on meanwhile.
// SDK servers and clients through the proxy: tests/interop.
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_upstream.h"
#include "harness.h"
#include "session_client.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

std::vector<std::string> ProxyArgs(const std::string& upstream_url, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--workers", "2", "--upstream", upstream_url};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

constexpr std::string_view kJson = "Content-Type: application/json\r\n";
constexpr std::string_view kSseChunked = "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n";

std::string SseHead(int status = 200) {
  return "HTTP/1.1 " + std::to_string(status) + " OK\r\n" + std::string(kSseChunked) + "\r\n";
}

std::string ToolCall(std::string_view id_json) {
  return McpPost(RpcBody(id_json, "tools/call", R"("name":"t","arguments":{})"), McpHeaders(kV2026, "tools/call", "t"));
}

std::string ToolResult(std::string_view id_json, std::string_view text) {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id_json) + R"(,"result":{"content":[{"type":"text","text":")" +
         std::string(text) + R"("}]}})";
}

TEST(Proxy, ForwardsARequestWithItsHeadersAndRelaysTheAnswer) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(
        fd, FakeUpstream::Answer(200, std::string(kJson) + "X-Upstream: yes\r\n", ToolResult(IdOf(r), "hi")));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::vector<Header> h = McpHeaders(kV2026, "tools/call", "t");
  h.push_back({"Authorization", "Bearer for-the-upstream"});
  h.push_back({"Last-Event-ID", "ev-9"});
  h.push_back({"X-Custom", "kept"});
  std::string body = RpcBody("7", "tools/call", R"("name":"t","arguments":{})");
  RpcReply r = McpCall(srv.port(), McpPost(body, h));
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  EXPECT_EQ(r.http.body, ToolResult("7", "hi"));
  EXPECT_EQ(r.http.Get("x-upstream").value_or(""), "yes");

  auto seen = up.requests();
  ASSERT_EQ(seen.size(), 1u);
  const UpstreamRequest& q = seen[0];
  EXPECT_EQ(q.method, "POST");
  EXPECT_EQ(q.target, "/mcp");
  EXPECT_EQ(q.body, body);
  EXPECT_EQ(q.Get("host").value_or(""), "127.0.0.1:" + std::to_string(up.port()));
  EXPECT_EQ(q.Get("authorization").value_or(""), "Bearer for-the-upstream");
  EXPECT_EQ(q.Get("mcp-method").value_or(""), "tools/call");
  EXPECT_EQ(q.Get("mcp-protocol-version").value_or(""), kV2026);
  EXPECT_EQ(q.Get("last-event-id").value_or(""), "ev-9");
  EXPECT_EQ(q.Get("x-custom").value_or(""), "kept");
  EXPECT_FALSE(q.Get("connection").has_value()) << "hop-by-hop headers stay at the hop";
}

TEST(Proxy, StreamsAnEventStreamAnswerAsItArrives) {
  Gate second;
  FakeUpstream up([&](int fd, const UpstreamRequest&) {
    FakeUpstream::Write(fd, SseHead());
    FakeUpstream::Write(
        fd,
        FakeUpstream::Chunk("event: message\ndata: "
                            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"n\":1}}\n\n"));
    if (!second.Wait(Ms(10000))) return FakeUpstream::Next::Close;
    FakeUpstream::Write(fd, FakeUpstream::Chunk("event: message\ndata: " + ToolResult("5", "done") + "\n\n"));
    FakeUpstream::Write(fd, FakeUpstream::Chunk(""));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  std::string err;
  ASSERT_TRUE(s.Open(srv.port(), ToolCall("5"), kIo, &err)) << err;
  ASSERT_TRUE(s.is_sse());
  EXPECT_EQ(s.head().Get("x-accel-buffering").value_or(""), "no");
  // The first event reaches the client while the upstream is still holding the rest back.
  auto first = s.Next();
  ASSERT_TRUE(first) << "no event before the upstream's answer ended: the proxy buffered it";
  EXPECT_NE(first->data.find("notifications/progress"), std::string::npos);
  second.Open();
  auto last = s.Next();
  ASSERT_TRUE(last);
  EXPECT_EQ(last->data, ToolResult("5", "done"));
  EXPECT_EQ(PumpAll({&s}, [](SseStream& x) { return x.ended(); }, kIo), 1u) << "the answer's end was not relayed";
}

TEST(Proxy, PipelinedRequestsAreAnsweredInOrder) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, ToolResult(IdOf(r), "ok")));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send(ToolCall("1") + ToolCall("2") + ToolCall("3")));
  for (const char* id : {"1", "2", "3"}) {
    HttpResponse head;
    std::string err;
    ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
    ASSERT_TRUE(c.ReadBody(head, After(kIo), &err)) << err;
    EXPECT_EQ(head.body, ToolResult(id, "ok"));
  }
}

TEST(Proxy, ListensAreServedByMcpfanNotTheUpstream) {
  FakeUpstream up([](int fd, const UpstreamRequest&) {
    FakeUpstream::Write(fd, FakeUpstream::Answer(500, kJson, "{}"));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
  EXPECT_TRUE(up.requests().empty()) << "a listen went to the upstream";
}

TEST(Proxy, DiscoverAnswersGainMcpfansCapabilities) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    std::string result =
        R"({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"logging":{},)"
        R"("resources":{"listChanged":false}},)"
        R"("serverInfo":{"name":"up","version":"1"}})";
    FakeUpstream::Write(
        fd, FakeUpstream::Answer(200, kJson, R"({"jsonrpc":"2.0","id":)" + IdOf(r) + R"(,"result":)" + result + "}"));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), McpPost(RpcBody("3", "server/discover"), McpHeaders(kV2026, "server/discover")));
  ASSERT_EQ(r.http.status, 200) << r.http.body;
  ASSERT_TRUE(r.msg.ok()) << r.msg.error();
  EXPECT_EQ(r.msg.GetString({"result", "serverInfo", "name"}).value_or(""), "up");
  EXPECT_TRUE(r.msg.Has({"result", "capabilities", "logging"}));
  auto flag = [&](std::initializer_list<std::string_view> path) {
    auto e = r.msg.Get(path);
    bool v = false;
    return e && e->get(v) == simdjson::SUCCESS && v;
  };
  EXPECT_TRUE(flag({"result", "capabilities", "tools", "listChanged"}));
  EXPECT_TRUE(flag({"result", "capabilities", "resources", "subscribe"}));
  EXPECT_TRUE(flag({"result", "capabilities", "resources", "listChanged"}));
  EXPECT_FALSE(r.msg.Has({"result", "capabilities", "prompts"})) << "mcpfan adds no capability kind the upstream lacks";
}

TEST(Proxy, AnUnreachableUpstreamIs502AndListensGoOn) {
  ServerProcess srv(ProxyArgs("http://127.0.0.1:" + std::to_string(UnusedPort()) + "/mcp"));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), ToolCall("7"));
  EXPECT_TRUE(IsRpcError(r, 502, -32603, "7", {"upstream", "connect"}));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
  EXPECT_TRUE(PollMetric(srv.port(), "mcpfan_upstream_failures_total", [](double v) { return v >= 1; }));
  EXPECT_TRUE(srv.WaitForStderr("WARN mcpfan: upstream request failed (connect)", kIo)) << srv.Stderr();  // docs "Logs"
}

TEST(Proxy, ASilentUpstreamIs504) {
  FakeUpstream up([&](int, const UpstreamRequest&) {
    up.WaitReleased(Ms(20000));
    return FakeUpstream::Next::Close;
  });
  ServerProcess srv(ProxyArgs(up.url(), {"--upstream-first-byte-ms", "300"}));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), ToolCall("8"));
  EXPECT_TRUE(IsRpcError(r, 504, -32603, "8", {"first byte"}));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
}

TEST(Proxy, AnUpstreamQuietMidStreamCutsTheClientsStream) {
  FakeUpstream up([&](int fd, const UpstreamRequest&) {
    FakeUpstream::Write(fd, SseHead());
    FakeUpstream::Write(
        fd,
        FakeUpstream::Chunk("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"));
    up.WaitReleased(Ms(20000));
    return FakeUpstream::Next::Close;
  });
  ServerProcess srv(ProxyArgs(up.url(), {"--upstream-idle-ms", "300"}));
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream s;
  std::string err;
  ASSERT_TRUE(s.Open(srv.port(), ToolCall("9"), kIo, &err)) << err;
  ASSERT_TRUE(s.Next());
  EXPECT_FALSE(s.WaitEnd(kIo)) << "the answer must not look complete";
  EXPECT_TRUE(s.eof()) << "the connection closes once the upstream has gone quiet";
}

TEST(Proxy, AnUpstreamClosingMidAnswerCutsTheClientsAnswer) {
  FakeUpstream up([](int fd, const UpstreamRequest&) {
    FakeUpstream::Write(
        fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":");
    return FakeUpstream::Next::Close;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send(ToolCall("4")));
  HttpResponse head;
  std::string err;
  ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.Get("content-length").value_or(""), "100");
  EXPECT_TRUE(c.WaitClosed(kIo));
  EXPECT_LT(c.in().size(), 100u);
}

TEST(Proxy, AnOversizeAnswerToRewriteIs502) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    std::string big(5000, 'x');
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson,
                                                 R"({"jsonrpc":"2.0","id":)" + IdOf(r) +
                                                     R"(,"result":{"capabilities":{},"pad":")" + big + "\"}}"));
    return FakeUpstream::Next::Read;
  });
  ServerProcess srv(ProxyArgs(up.url(), {"--upstream-max-answer-bytes", "1024"}));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), McpPost(RpcBody("2", "server/discover"), McpHeaders(kV2026, "server/discover")));
  EXPECT_TRUE(IsRpcError(r, 502, -32603, "2", {"larger than 1024"}));
}

TEST(Proxy, AnswersThatAreNotJsonAreRelayedAsSentAndNotHttpIs502) {
  FakeUpstream up([](int fd, const UpstreamRequest& r) {
    if (r.body.find("server/discover") != std::string::npos) {
      FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, "this is not json"));
      return FakeUpstream::Next::Read;
    }
    FakeUpstream::Write(fd, "SPDY/9 what\r\n\r\n");
    return FakeUpstream::Next::Close;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply d = McpCall(srv.port(), McpPost(RpcBody("2", "server/discover"), McpHeaders(kV2026, "server/discover")));
  EXPECT_EQ(d.http.status, 200);
  EXPECT_EQ(d.http.body, "this is not json");
  RpcReply t = McpCall(srv.port(), ToolCall("6"));
  EXPECT_TRUE(IsRpcError(t, 502, -32603, "6", {"protocol"}));
}

// An upstream's answer to `initialize`: session `sid`, protocol 2025-11-25, `capabilities`.
// A 2025-era upstream with sessions and a GET stream of its own.
struct SessionUpstream {
  Gate get_opened;
  std::unique_ptr<FakeUpstream> up;
  explicit SessionUpstream(bool has_get_stream = true) {
    up = std::make_unique<FakeUpstream>([this, has_get_stream](int fd, const UpstreamRequest& r) {
      if (r.method == "GET") {
        if (!has_get_stream) {
          FakeUpstream::Write(fd, FakeUpstream::Answer(405, kJson, R"({"error":"no GET stream"})"));
          return FakeUpstream::Next::Read;
        }
        FakeUpstream::Write(fd, SseHead());
        FakeUpstream::Write(fd, FakeUpstream::Chunk(
            "event: message\nid: up-1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
            "{\"level\":\"info\",\"data\":\"from upstream\"}}\n\n"));
        get_opened.Open();
        up->WaitReleased(Ms(30000));  // held until the proxy lets it go (the client's stream ended)
        return FakeUpstream::Next::Close;
      }
      if (r.method == "DELETE") {
        FakeUpstream::Write(fd, FakeUpstream::Answer(200, "", ""));
        return FakeUpstream::Next::Read;
      }
      if (r.body.find("\"initialize\"") != std::string::npos) {
        FakeUpstream::Write(fd, InitializeAnswer(r, "up-session-1", R"({"tools":{}})"));
        return FakeUpstream::Next::Read;
      }
      if (r.body.find("\"id\"") == std::string::npos) {  // a notification
        FakeUpstream::Write(fd, FakeUpstream::Answer(202, "", ""));
        return FakeUpstream::Next::Read;
      }
      FakeUpstream::Write(
          fd, FakeUpstream::Answer(200, kJson,
                                   R"({"jsonrpc":"2.0","id":)" + IdOf(r) +
                                       R"(,"error":{"code":-32601,"message":"upstream: no such method"}})"));
      return FakeUpstream::Next::Read;
    });
  }
};

TEST(Proxy, SessionsItInitializedHaveSubscriptionsAndNotificationsServedHere) {
  SessionUpstream su;
  ServerProcess srv(ProxyArgs(su.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  const int port = srv.port();
  std::string sid;
  ASSERT_TRUE(Initialize(port, &sid));
  EXPECT_EQ(sid, "up-session-1") << "the upstream's session id is the client's";
  RpcReply init = McpCall(
      port,
      McpPost(Rpc2025("0", "initialize",
                      R"({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}})"),
              {{"Content-Type", "application/json"}, {"Accept", "application/json, text/event-stream"}}));
  EXPECT_EQ(init.http.status, 409) << "an upstream reusing a session id mcpfan holds: " << init.http.body;

  ASSERT_TRUE(SessionSubscribe(port, sid, "file:///p"));
  EXPECT_EQ(su.up->CountBodies("resources/subscribe"), 0) << "subscriptions are served by mcpfan, not forwarded";

  SseStream get;
  ASSERT_TRUE(OpenSessionStream(get, port, sid));
  ASSERT_TRUE(su.get_opened.Wait(kIo)) << "the upstream's GET stream was not opened";
  auto from_upstream = get.Next();
  ASSERT_TRUE(from_upstream) << "the upstream's own event did not reach the client";
  EXPECT_NE(from_upstream->data.find("from upstream"), std::string::npos);
  ASSERT_TRUE(PublishOk(port, Updated("file:///p")));
  auto mine = get.Next();
  ASSERT_TRUE(mine);
  EXPECT_EQ(Json(mine->data).GetString({"params", "uri"}).value_or(""), "file:///p");

  EXPECT_EQ(DeleteSession(port, sid), 200);
  EXPECT_TRUE(get.WaitEnd(kIo)) << "DELETE ends the session's stream";
  bool forwarded = false;
  for (const auto& r : su.up->requests()) forwarded = forwarded || r.method == "DELETE";
  EXPECT_TRUE(forwarded) << "DELETE ends the upstream's session too";
  // The session is no longer mcpfan's: its requests pass through.
  RpcReply after = SessionCall(port, sid, Rpc2025("5", "resources/subscribe", R"({"uri":"file:///p"})"));
  EXPECT_EQ(su.up->CountBodies("resources/subscribe"), 1);
  EXPECT_NE(after.http.body.find("upstream: no such method"), std::string::npos) << after.http.body;
}

TEST(Proxy, AnUpstreamWithoutAGetStreamLeavesMcpfansNotifications) {
  SessionUpstream su(/*has_get_stream=*/false);
  ServerProcess srv(ProxyArgs(su.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  ASSERT_TRUE(SessionSubscribe(srv.port(), sid, "file:///q"));
  SseStream get;
  ASSERT_TRUE(OpenSessionStream(get, srv.port(), sid));
  ASSERT_TRUE(su.up->WaitRequests(2));  // initialize, then the GET answered 405
  ASSERT_TRUE(PublishOk(srv.port(), Updated("file:///q")));
  auto m = get.NextMessage();
  ASSERT_TRUE(m);
  EXPECT_TRUE(IsPlainNotification(*m, "notifications/resources/updated", R"({"uri":"file:///q"})"));
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// A client that stops reading a long answer stops the upstream too: what mcpfan holds for it
// stays bounded (socket buffers and one pause threshold), and nothing is lost once it reads.
TEST(Proxy, AClientThatStopsReadingPausesTheUpstream) {
  constexpr std::size_t kChunk = 64 * 1024, kChunks = 1024;  // 64 MiB in all
  std::atomic<std::size_t> written{0};
  FakeUpstream up([&](int fd, const UpstreamRequest&) {
    FakeUpstream::Write(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                                std::to_string(kChunk * kChunks) + "\r\n\r\n");
    std::string piece(kChunk, 'z');
    for (std::size_t i = 0; i < kChunks && !up.released(); ++i) {
      if (!FakeUpstream::Write(fd, piece)) break;
      written.fetch_add(kChunk);
    }
    return FakeUpstream::Next::Close;
  });
  ServerProcess srv(ProxyArgs(up.url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  Conn c;
  c.set_rcvbuf(64 * 1024);
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.Send(ToolCall("1")));
  // Not reading: the upstream's writes stall once the buffers on the way are full.
  std::size_t last = 0;
  int still = 0;
  for (int i = 0; i < 200 && still < 5; ++i) {
    std::this_thread::sleep_for(Ms(50));
    std::size_t now = written.load();
    still = now == last && now > 0 ? still + 1 : 0;
    last = now;
  }
  EXPECT_EQ(still, 5) << "the upstream never stalled";
  EXPECT_LT(last, kChunk * kChunks / 2) << "the upstream was not paused while the client did not read";
  // Now the client reads all of it.
  HttpResponse head;
  std::string err;
  ASSERT_TRUE(c.ReadHead(head, After(kIo), &err)) << err;
  ASSERT_TRUE(c.ReadBody(head, After(Ms(60000)), &err)) << err;
  EXPECT_EQ(head.body.size(), kChunk * kChunks);
  EXPECT_EQ(head.body.find_first_not_of('z'), std::string::npos);
}

}  // namespace
}  // namespace itest

namespace itest {
namespace {

// The next event that carries data, skipping the priming event (its data is empty).
std::optional<SseEvent> NextWithData(SseStream& s) {
  for (int i = 0; i < 8; ++i) {
    auto ev = s.Next();
    if (!ev || !ev->data.empty()) return ev;
  }
  return std::nullopt;
}

TEST(Proxy, AResumedGetRestoresBothHalves) {
  ResumableUpstream ru;
  ServerProcess srv(ProxyArgs(ru.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  const int port = srv.port();
  std::string sid;
  ASSERT_TRUE(Initialize(port, &sid));
  ASSERT_TRUE(SessionSubscribe(port, sid, "file:///r"));
  std::string last_id;
  {
    SseStream get;
    get.AllowIds();
    ASSERT_TRUE(OpenSessionStream(get, port, sid));
    auto ev = NextWithData(get);
    ASSERT_TRUE(ev);
    EXPECT_NE(ev->data.find("\"n\":1"), std::string::npos);
    // The upstream's event carries the session's cursor and the upstream's own id.
    EXPECT_NE(ev->id.find("~up-1"), std::string::npos) << ev->id;
    last_id = ev->id;
    get.conn().Close();
  }
  ASSERT_TRUE(PollMetricEq(port, "mcpfan_sessions_parked", 1));
  ASSERT_TRUE(PublishOk(port, Updated("file:///r")));  // while the client is away

  SseStream again;
  again.AllowIds();
  std::string err;
  ASSERT_TRUE(again.Open(port, SessionGetRequest(sid, last_id), kIo, &err)) << err;
  ASSERT_EQ(again.head().status, 200);
  std::vector<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    auto ev = NextWithData(again);
    ASSERT_TRUE(ev) << "after " << seen.size() << " events";
    seen.push_back(ev->data);
  }
  std::string all = seen[0] + seen[1];
  EXPECT_NE(all.find("file:///r"), std::string::npos) << "mcpfan's missed notification was not replayed: " << all;
  EXPECT_NE(all.find("\"n\":2"), std::string::npos) << "the upstream's stream did not resume: " << all;
  auto ids = ru.ids();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0], "");
  EXPECT_EQ(ids[1], "up-1") << "the upstream resumes from its own id";
}

TEST(Proxy, AGetResumingAnUpstreamStreamIsTheUpstreamsAlone) {
  ResumableUpstream ru;
  ServerProcess srv(ProxyArgs(ru.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  SseStream get;
  get.AllowIds();
  std::string err;
  ASSERT_TRUE(get.Open(srv.port(), SessionGetRequest(sid, "post-stream-5"), kIo, &err)) << err;
  auto ev = get.Next();
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->id, "up-1") << "a foreign id is forwarded, and the answer relayed untouched";
  ASSERT_TRUE(ru.up->WaitRequests(2));
  EXPECT_EQ(ru.ids().at(0), "post-stream-5");
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_sessions_parked", 0));
}

TEST(Proxy, ASessionGetAnswersOnceTheUpstreamsGetHasAnswered) {
  Gate head;
  ResumableUpstream ru;
  ru.head_gate = &head;
  ServerProcess srv(ProxyArgs(ru.up->url()));
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string sid;
  ASSERT_TRUE(Initialize(srv.port(), &sid));
  SseStream get;
  get.AllowIds();
  std::string err;
  ASSERT_TRUE(get.Start(srv.port(), SessionGetRequest(sid), &err)) << err;
  ASSERT_TRUE(ru.up->WaitRequests(2));  // the upstream has the GET, and holds its answer
  get.ReadAvailable();
  EXPECT_FALSE(get.head_done()) << "mcpfan answered before the upstream's GET was in place";
  head.Open();
  auto ev = NextWithData(get);
  ASSERT_TRUE(ev);
  EXPECT_EQ(get.head().status, 200);
  EXPECT_NE(ev->data.find("\"n\":1"), std::string::npos);
}

}  // namespace
}  // namespace itest

// stdio framing over real pipes (design §2.3; tests/interop/sdk_v2_stdio FINDINGS): a child
// `mcpfan --stdio --listen 127.0.0.1:0` serves one client on stdin/stdout; the test
// publishes over HTTP to the same process.
#include <signal.h>
#include <sys/wait.h>

#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

// Every line the server wrote to stdout is one JSON-RPC 2.0 message.
::testing::AssertionResult AllLinesAreJsonRpc(const LineChannel& ch) {
  for (const std::string& line : ch.transcript()) {
    Json j(line);
    if (!j.ok())
      return ::testing::AssertionFailure() << "stdout line is not JSON (" << j.error() << "): " << line.substr(0, 300);
    if (j.GetString({"jsonrpc"}) != "2.0")
      return ::testing::AssertionFailure() << "stdout line is not JSON-RPC 2.0: " << line.substr(0, 300);
  }
  if (!ch.partial().empty()) {
    return ::testing::AssertionFailure() << "stdout ends with an unterminated line: " << ch.partial().substr(0, 300);
  }
  return ::testing::AssertionSuccess();
}

// Writes `line` + '\n' and returns the next JSON line.
std::optional<Json> Ask(StdioChild& c, std::string_view line, std::string* err) {
  if (!c.io().SendLine(line, kIo, err)) return std::nullopt;
  return c.io().NextJson(kIo, err);
}

::testing::AssertionResult Listen(StdioChild& c, std::string_view id, std::string_view filter,
                                  std::string_view agreed = {}) {
  std::string err;
  auto ack = Ask(c, StdioListen(id, filter), &err);
  if (!ack) return ::testing::AssertionFailure() << "listen " << id << ": " << err;
  return IsAck(*ack, id, agreed.empty() ? filter : agreed);
}

TEST(Stdio, Initialize2025SubscribeReceiveWithoutSubscriptionId) {
  StdioChild c({"--workers", "2"});
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  auto init = Ask(c, StdioInitialize("0"), &err);
  ASSERT_TRUE(init) << err;
  EXPECT_EQ(init->GetString({"result", "protocolVersion"}), "2025-11-25") << init->text();
  EXPECT_TRUE(JsonMatches(init->Get({"id"}), "0"));
  EXPECT_FALSE(init->Has({"result", "resultType"})) << init->text();
  EXPECT_TRUE(JsonMatches(init->Get({"result", "capabilities", "resources", "subscribe"}), "true")) << init->text();
  ASSERT_TRUE(c.io().SendLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  auto ping = Ask(c, R"({"jsonrpc":"2.0","id":1,"method":"ping"})", &err);
  ASSERT_TRUE(ping) << err;
  EXPECT_TRUE(IsResult(*ping, "1", "{}")) << "no reply may come for notifications/initialized; ping must be {}";
  auto sub =
      Ask(c, R"({"jsonrpc":"2.0","id":"s1","method":"resources/subscribe","params":{"uri":"file:///io/a.txt"}})", &err);
  ASSERT_TRUE(sub) << err;
  EXPECT_TRUE(IsResult(*sub, R"("s1")", "{}"));
  auto sub2 =
      Ask(c, R"({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"file:///io/dir/"}})", &err);
  ASSERT_TRUE(sub2) << err;
  EXPECT_TRUE(IsResult(*sub2, "2", "{}"));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_listen_streams_open", 1));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));

  const std::string a = R"({"uri":"file:///io/a.txt","_meta":{"origin/rev":"r1","test/seq":1}})";
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/resources/updated","params":)" + a + "}"));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/b.txt")));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/dir/c.txt")));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  for (auto [method, params] : std::vector<std::pair<std::string, std::string>>{
           {"notifications/resources/updated", a},
           {"notifications/resources/updated", R"({"uri":"file:///io/dir/c.txt"})"},
           {"notifications/tools/list_changed", "{}"}}) {
    auto m = c.io().NextJson(kIo, &err);
    ASSERT_TRUE(m) << "waiting for " << method << ": " << err;
    EXPECT_TRUE(IsPlainNotification(*m, method, params));
  }
  EXPECT_TRUE(NothingMore(c.io()));

  auto unsub =
      Ask(c, R"({"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"file:///io/a.txt"}})", &err);
  ASSERT_TRUE(unsub) << err;
  EXPECT_TRUE(IsResult(*unsub, "3", "{}"));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/a.txt")));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/prompts/list_changed"})"));
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsPlainNotification(*m, "notifications/prompts/list_changed", "{}")) << "a.txt was unsubscribed";
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

// The same rules for a 2025 session on stdio: an exact URI and a '/'-prefix both matching
// deliver once; a repeated subscribe is idempotent (one unsubscribe ends it).
TEST(Stdio, SessionOverlappingAndRepeatedSubscribes) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  auto init = Ask(c, StdioInitialize("0"), &err);
  ASSERT_TRUE(init) << err;
  int id = 1;
  for (const char* uri : {"file:///ov/dir/", "file:///ov/dir/a", "file:///ov/b", "file:///ov/b"}) {
    std::string line = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                       R"(,"method":"resources/subscribe","params":{"uri":")" + uri + R"("}})";
    auto r = Ask(c, line, &err);
    ASSERT_TRUE(r) << err;
    ASSERT_TRUE(IsResult(*r, std::to_string(id++), "{}"));
  }
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///ov/dir/a")));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///ov/b")));
  for (const char* uri : {"file:///ov/dir/a", "file:///ov/b"}) {
    auto m = c.io().NextJson(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_TRUE(IsPlainNotification(*m, "notifications/resources/updated", std::string(R"({"uri":")") + uri + "\"}"));
  }
  EXPECT_TRUE(NothingMore(c.io())) << "each update exactly once";
  auto un =
      Ask(c, R"({"jsonrpc":"2.0","id":9,"method":"resources/unsubscribe","params":{"uri":"file:///ov/b"}})", &err);
  ASSERT_TRUE(un) << err;
  ASSERT_TRUE(IsResult(*un, "9", "{}"));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///ov/b")));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///ov/dir/z")));  // marker
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsPlainNotification(*m, "notifications/resources/updated", R"({"uri":"file:///ov/dir/z"})"))
      << "one unsubscribe ends a URI subscribed twice";
  EXPECT_TRUE(NothingMore(c.io()));
}

TEST(Stdio, ListenAsVeryFirstLine) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  // Nothing before it: no server/discover, no initialize (sdk_v2_stdio FINDINGS §0.1).
  ASSERT_TRUE(Listen(c, R"("listen:0")", R"({"resourceSubscriptions":["file:///io/a.txt"],"toolsListChanged":true})"));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_listen_streams_open", 1));

  const std::string a = R"({"uri":"file:///io/a.txt","_meta":{"test/seq":1,"origin/rev":"r1"}})";
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/resources/updated","params":)" + a + "}"));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/b.txt")));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/prompts/list_changed"})"));  // not requested
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"x":true}}})"));
  std::string err;
  auto m1 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m1) << err;
  EXPECT_TRUE(IsNotification(*m1, "notifications/resources/updated", R"("listen:0")", a));
  auto m2 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m2) << err;
  EXPECT_TRUE(IsNotification(*m2, "notifications/tools/list_changed", R"("listen:0")", R"({"_meta":{"x":true}})"));
  EXPECT_TRUE(NothingMore(c.io()));
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

TEST(Stdio, TwoListensAreDemultiplexedBySubscriptionId) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("a")", R"({"resourceSubscriptions":["file:///io/a"],"toolsListChanged":true})"));
  ASSERT_TRUE(Listen(c, "7", R"({"promptsListChanged":true,"toolsListChanged":true})"));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 2));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_listen_streams_open", 1)) << "one stdio connection";

  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/a")));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/prompts/list_changed"})"));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  // Expected, in publish order: a:updated, 7:prompts, then tools for both (either order).
  std::string err;
  auto m1 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m1) << err;
  EXPECT_TRUE(IsNotification(*m1, "notifications/resources/updated", R"("a")", R"({"uri":"file:///io/a"})"));
  auto m2 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m2) << err;
  EXPECT_TRUE(IsNotification(*m2, "notifications/prompts/list_changed", "7"));
  auto sid7 = m2->Get({"params", "_meta", kSubId});
  ASSERT_TRUE(sid7);
  EXPECT_TRUE(sid7->is_int64() || sid7->is_uint64()) << "id 7 must stay a number: " << m2->text();
  std::multiset<std::string> tools_ids;
  for (int i = 0; i < 2; ++i) {
    auto m = c.io().NextJson(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetString({"method"}), "notifications/tools/list_changed") << m->text();
    auto sid = m->Get({"params", "_meta", kSubId});
    ASSERT_TRUE(sid) << m->text();
    tools_ids.insert(Dump(*sid));
  }
  EXPECT_EQ(tools_ids, (std::multiset<std::string>{R"("a")", "7"}));
  EXPECT_TRUE(NothingMore(c.io()));
}

TEST(Stdio, CancelledEndsOnlyThatListen) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("listen:0")", R"({"resourceSubscriptions":["file:///io/a"],"toolsListChanged":true})"));
  ASSERT_TRUE(Listen(c, R"("listen:1")", R"({"promptsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 2));

  ASSERT_TRUE(c.io().SendLine(StdioCancel(R"("listen:0")")));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///io/a")));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/prompts/list_changed"})"));
  std::string err;
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  // No reply to the cancel (a notification), nothing more for listen:0.
  EXPECT_TRUE(IsNotification(*m, "notifications/prompts/list_changed", R"("listen:1")"));
  EXPECT_TRUE(NothingMore(c.io()));

  // Cancelling an unknown id is silent too; the id of an ended listen can be reused.
  ASSERT_TRUE(c.io().SendLine(StdioCancel(R"("nope")")));
  ASSERT_TRUE(Listen(c, R"("listen:0")", R"({"toolsListChanged":true})"));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 2));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto again = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(again) << err;
  EXPECT_TRUE(IsNotification(*again, "notifications/tools/list_changed", R"("listen:0")"));
  EXPECT_TRUE(NothingMore(c.io()));
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

// 7 and "7" are different JSON-RPC ids: both may be open, and a cancel names one of them.
TEST(Stdio, IdsOfDifferentJsonTypesAreDistinct) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, "7", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(Listen(c, R"("7")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 2));
  ASSERT_TRUE(c.io().SendLine(StdioCancel(R"("7")")));
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", "7")) << "the numeric listen 7 must survive";
  EXPECT_TRUE(NothingMore(c.io()));
}

TEST(Stdio, DuplicateActiveListenIdIsInvalidRequest) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("dup")", R"({"toolsListChanged":true})"));
  std::string err;
  auto second = Ask(c, StdioListen(R"("dup")", R"({"promptsListChanged":true})"), &err);
  ASSERT_TRUE(second) << err;
  EXPECT_TRUE(IsError(*second, R"("dup")", -32600));
  EXPECT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));
  // The first listen is untouched and the refused filter was not applied.
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/prompts/list_changed"})"));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("dup")"));
  EXPECT_TRUE(NothingMore(c.io()));
}

TEST(Stdio, PartialLineWrittenInPieces) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  std::string line = StdioListen(R"("pieces")", R"({"toolsListChanged":true})") + "\n";
  // All but the newline, 7 bytes at a time: nothing may be answered yet.
  for (size_t off = 0; off + 1 < line.size(); off += 7) {
    ASSERT_TRUE(c.io().Send(line.substr(off, std::min<size_t>(7, line.size() - 1 - off))));
    std::this_thread::sleep_for(Ms(2));
  }
  auto early = c.io().NextLine(Ms(300));
  EXPECT_FALSE(early) << "answered before the line was complete: " << *early;
  // The newline, immediately followed by the first half of a ping.
  ASSERT_TRUE(c.io().Send("\n{\"jsonrpc\":\"2.0\",\"id\":"));
  std::string err;
  auto ack = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_TRUE(IsAck(*ack, R"("pieces")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(c.io().Send("42,\"method\":\"pi"));
  EXPECT_FALSE(c.io().NextLine(Ms(200)));
  ASSERT_TRUE(c.io().Send("ng\"}\r\n"));  // CRLF is tolerated
  auto pong = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(pong) << err;
  EXPECT_TRUE(IsResult(*pong, "42", "{}"));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("pieces")"));
}

// A ping padded (inside params) to exactly `total` bytes without the newline.
std::string PaddedPing(std::string_view id, size_t total) {
  std::string head = R"({"jsonrpc":"2.0","id":)" + std::string(id) + R"(,"method":"ping","params":{"pad":")";
  std::string tail = R"("}})";
  size_t pad = total > head.size() + tail.size() ? total - head.size() - tail.size() : 0;
  return head + std::string(pad, 'p') + tail;
}

TEST(Stdio, OverlongLineIsRefusedAndConnectionKeepsServing) {
  StdioChild c({"--max-line-bytes", "1024"});
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("keep")", R"({"toolsListChanged":true})"));
  std::string err;
  // At the limit: served.
  auto fits = Ask(c, PaddedPing("1", 1000), &err);
  ASSERT_TRUE(fits) << err;
  EXPECT_TRUE(IsResult(*fits, "1", "{}")) << "a 1000-byte line is within --max-line-bytes 1024";

  // Just over the limit: refused (the limit is really ~1 KiB, not some larger default).
  auto over = Ask(c, PaddedPing("20", 1100), &err);
  ASSERT_TRUE(over) << err;
  EXPECT_TRUE(JsonMatches(over->Get({"id"}), "null"))
      << "a 1100-byte line exceeds --max-line-bytes 1024: " << over->text();
  EXPECT_TRUE(over->Has({"error"})) << over->text();

  // Over the limit in one write, followed by a good line in the same write.
  ASSERT_TRUE(c.io().Send(PaddedPing("2", 4000) + "\n" + R"({"jsonrpc":"2.0","id":3,"method":"ping"})" + "\n"));
  auto e1 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(e1) << err;
  EXPECT_TRUE(JsonMatches(e1->Get({"id"}), "null")) << "the over-long line's reply has a null id: " << e1->text();
  EXPECT_TRUE(e1->GetInt({"error", "code"})) << "want an error: " << e1->text();
  auto r3 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(r3) << err;
  EXPECT_TRUE(IsResult(*r3, "3", "{}")) << "the line after the dropped one is served (and id 2 is never answered)";

  // Over the limit across several writes, the newline coming last.
  std::string big = PaddedPing("4", 5000) + "\n";
  for (size_t off = 0; off < big.size(); off += 700) {
    ASSERT_TRUE(c.io().Send(big.substr(off, 700)));
    std::this_thread::sleep_for(Ms(5));
  }
  auto e2 = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(e2) << err;
  EXPECT_TRUE(JsonMatches(e2->Get({"id"}), "null")) << e2->text();
  EXPECT_TRUE(e2->Has({"error"})) << e2->text();
  auto r5 = Ask(c, R"({"jsonrpc":"2.0","id":5,"method":"ping"})", &err);
  ASSERT_TRUE(r5) << err;
  EXPECT_TRUE(IsResult(*r5, "5", "{}")) << "exactly one error per over-long line, then service resumes";

  // The listen survived all of it.
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("keep")"));
  EXPECT_TRUE(NothingMore(c.io()));
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

TEST(Stdio, DefaultMaxLineIsOneMiB) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  ASSERT_TRUE(c.io().SendLine(PaddedPing("1", 900 * 1024), Ms(10000), &err)) << err;
  auto fits = c.io().NextJson(Ms(10000), &err);
  ASSERT_TRUE(fits) << err;
  EXPECT_TRUE(IsResult(*fits, "1", "{}")) << "a 900 KiB line is within the 1 MiB default";
  ASSERT_TRUE(c.io().SendLine(PaddedPing("2", 1100 * 1024), Ms(10000), &err)) << err;
  auto over = c.io().NextJson(Ms(10000), &err);
  ASSERT_TRUE(over) << err;
  EXPECT_TRUE(JsonMatches(over->Get({"id"}), "null")) << over->text();
  EXPECT_TRUE(over->Has({"error"})) << over->text();
  auto pong = Ask(c, R"({"jsonrpc":"2.0","id":3,"method":"ping"})", &err);
  ASSERT_TRUE(pong) << err;
  EXPECT_TRUE(IsResult(*pong, "3", "{}"));
}

TEST(Stdio, BadInputGetsErrorsAndServiceContinues) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("live")", R"({"toolsListChanged":true})"));
  std::string err;
  struct Case {
    std::string line;
    const char* id;
    int64_t code;
  };
  const std::vector<Case> cases = {
      {"this is not json", "null", -32700},
      {R"({"jsonrpc":"2.0","id":5,"method":"ping")", "null", -32700},  // truncated
      {"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", "null",
       -32700},                                                                 // bad UTF-8
      {"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"p\xc3\"}", "null", -32700},  // truncated UTF-8 sequence
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x"}})", "8", -32601},
      {R"({"jsonrpc":"2.0","id":"u","method":"no/such/method"})", R"("u")", -32601},
  };
  for (const auto& k : cases) {
    auto r = Ask(c, k.line, &err);
    ASSERT_TRUE(r) << "no reply to: " << k.line << ": " << err;
    EXPECT_TRUE(IsError(*r, k.id, k.code)) << "input: " << k.line;
  }
  // Blank and whitespace-only lines are not messages: no reply at all.
  ASSERT_TRUE(c.io().Send("\n\n   \n\t\r\n"));
  auto pong = Ask(c, R"({"jsonrpc":"2.0","id":9,"method":"ping"})", &err);
  ASSERT_TRUE(pong) << err;
  EXPECT_TRUE(IsResult(*pong, "9", "{}")) << "blank lines must not be answered";
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  auto m = c.io().NextJson(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("live")"));
  EXPECT_TRUE(NothingMore(c.io()));
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

TEST(Stdio, StdinCloseExitsZero) {
  StdioChild c({"--workers", "2"});
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("listen:0")", R"({"toolsListChanged":true})"));
  c.io().CloseWrite();
  // The SDK waits 2 s for the process to exit by itself before it signals it.
  auto t0 = Clock::now();
  EXPECT_TRUE(c.io().WaitEof(Ms(2000))) << "stdout must close after stdin EOF";
  ASSERT_TRUE(c.WaitExit(Ms(2000) - std::chrono::duration_cast<Ms>(Clock::now() - t0)))
      << "mcpfan --stdio still running 2 s after stdin closed";
  EXPECT_EQ(c.DescribeStatus(), "exit 0");
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

TEST(Stdio, SigtermSendsCompleteResultsThenEof) {
  StdioChild c({"--workers", "2"});
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(Listen(c, R"("listen:0")", R"({"toolsListChanged":true})"));
  ASSERT_TRUE(Listen(c, "11", R"({"resourceSubscriptions":["file:///t"]})"));
  std::string err;
  auto init = Ask(c, StdioInitialize("\"i\""), &err);  // a 2025 session on the same connection
  ASSERT_TRUE(init) << err;
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 3));
  ASSERT_TRUE(c.Signal(SIGTERM));
  auto lines = c.io().DrainFor(Ms(2000));  // ends at EOF (or after 2 s of silence)
  EXPECT_TRUE(c.io().eof()) << "stdout must reach EOF after the final results";
  std::set<std::string> completed;
  for (const auto& l : lines) {
    Json j(l);
    ASSERT_TRUE(j.ok()) << l;
    auto id = j.Get({"id"});
    ASSERT_TRUE(id) << "only the final results may follow SIGTERM: " << l;
    std::string id_json = Dump(*id);
    EXPECT_TRUE(IsCompleteResult(j, id_json)) << l;
    EXPECT_TRUE(completed.insert(id_json).second) << "two final results for " << id_json;
  }
  EXPECT_EQ(completed, (std::set<std::string>{R"("listen:0")", "11"}));
  ASSERT_TRUE(c.WaitExit(kExitBound)) << "not exited after SIGTERM (a hang)";
  EXPECT_EQ(c.DescribeStatus(), "exit 0");
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
}

// The SDK's probe sibling gets SIGTERM right after start-up, maybe mid-line (sdk_v2_stdio §0.2).
TEST(Stdio, SigtermWithHalfALineExitsCleanly) {
  StdioChild c;
  ASSERT_TRUE(c.ok()) << c.error();
  ASSERT_TRUE(c.io().Send(R"({"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/disc)"));
  ASSERT_TRUE(c.Signal(SIGTERM));
  EXPECT_TRUE(c.io().WaitEof(Ms(2000)));
  ASSERT_TRUE(c.WaitExit(kExitBound));
  EXPECT_EQ(c.DescribeStatus(), "exit 0");
  EXPECT_TRUE(c.io().transcript().empty()) << "nothing may be written for half a line: " << c.io().transcript().front();
  EXPECT_TRUE(c.io().partial().empty()) << c.io().partial();
}

TEST(Stdio, StdoutCarriesOnlyJsonRpcLines) {
  StdioChild c({"--max-line-bytes", "1024"});
  ASSERT_TRUE(c.ok()) << c.error();
  std::string err;
  // Exercise every path that might log: discover, init, errors, over-long, listen, publish, cancel.
  const std::vector<std::string> lines = {
      RpcBody("1", "server/discover"),
      StdioInitialize("2"),
      "garbage",
      PaddedPing("3", 3000),
      R"({"jsonrpc":"2.0","method":"notifications/unknown"})",
      R"({"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{}})",
      StdioListen("5", R"({"toolsListChanged":true,"resourceSubscriptions":["file:///z"]})"),
  };
  for (const auto& l : lines) ASSERT_TRUE(c.io().SendLine(l, kIo, &err)) << err;
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 2));
  ASSERT_TRUE(PublishOk(c.port(), R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(PublishOk(c.port(), Updated("file:///z")));
  // A 202 means accepted, not delivered: the cancel waits for the listen's last notification
  // (per-stream order is publish order), or it could overtake it on the worker loop.
  bool updated = false;
  for (int i = 0; i < 16 && !updated; ++i) {
    auto line = c.io().NextLine();
    ASSERT_TRUE(line) << "the listen's notifications did not arrive";
    updated = line->find("file:///z") != std::string::npos;
  }
  ASSERT_TRUE(updated);
  ASSERT_TRUE(c.io().SendLine(StdioCancel("5")));
  ASSERT_TRUE(PollMetricEq(c.port(), "mcpfan_subscriptions_active", 1));
  c.io().CloseWrite();
  EXPECT_TRUE(c.io().WaitEof(Ms(3000)));
  ASSERT_TRUE(c.WaitExit(kExitBound));
  EXPECT_EQ(c.DescribeStatus(), "exit 0");
  EXPECT_TRUE(AllLinesAreJsonRpc(c.io()));
  EXPECT_GE(c.io().transcript().size(), 8u)
      << "replies to 1, 2, garbage, the over-long line, 4, the ack, 2+2 notifications";
  EXPECT_NE(c.Stderr().find("listening on"), std::string::npos) << "the log line belongs on stderr";
}

}  // namespace
}  // namespace itest

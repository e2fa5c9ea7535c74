// The front proxy's text transformations (transports/src/proxy): merging mcpfan's capabilities
// into an upstream's initialize / server/discover answers (JSON and SSE), and splitting an
// upstream's event stream into whole events.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy/capabilities.h"
#include "proxy/sse_events.h"

namespace mcpfan::detail::proxy {
namespace {

TEST(MergeCapabilities, AddsResourceSubscriptionsAndListChangedKeepingTheRest) {
  auto m = merge_message(
      R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},)"
      R"("tools":{"x":1},)"
      R"("resources":{"listChanged":false,"extra":[1,2]}},"serverInfo":{"name":"up"}}})",
      false);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->protocol_version, "2025-11-25");
  EXPECT_EQ(
      m->body,
      R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"tools":{"x":1,)"
      R"("listChanged":true},)"
      R"("resources":{"listChanged":true,"extra":[1,2],"subscribe":true}},"serverInfo":{"name":"up"}}})");
}

TEST(MergeCapabilities, AddsResourcesWhenTheUpstreamHasNone) {
  auto m = merge_message(R"({"id":"a","result":{"capabilities":{}}})", false);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body, R"({"id":"a","result":{"capabilities":{"resources":{"subscribe":true,"listChanged":true}}}})");
}

TEST(MergeCapabilities, LeavesOtherMessagesAlone) {
  EXPECT_FALSE(merge_message(R"({"id":1,"result":{"content":[]}})", false));
  EXPECT_FALSE(merge_message(R"({"id":1,"error":{"code":-32601,"message":"no"}})", false));
  EXPECT_FALSE(merge_message("not json", false));
  EXPECT_FALSE(merge_message(R"({"id":1,"result":{"capabilities":"odd"}})", false));
  MergedAnswer a = merge_capabilities("not json", false, false);
  EXPECT_FALSE(a.merged);
  EXPECT_EQ(a.body, "not json");
}

TEST(MergeCapabilities, RewritesTheEventThatCarriesTheResultInAnEventStream) {
  std::string body =
      "id: p1\r\ndata: \r\n\r\n"  // a priming event, CRLF lines
      ": a comment\n"
      "event: message\nid: e2\ndata: {\"id\":1,\"result\":{\"capabilities\":{}}}\n\n";
  MergedAnswer a = merge_capabilities(body, true, false);
  EXPECT_TRUE(a.merged);
  EXPECT_EQ(
      a.body,
      "id: p1\ndata: \n\n"
      ": a comment\nevent: message\nid: e2\n"
      "data: {\"id\":1,\"result\":{\"capabilities\":{\"resources\":{\"subscribe\":true,\"listChanged\":true}}}}\n\n");
}

TEST(MergeCapabilities, KeepsMultiLineDataAndUnterminatedEvents) {
  MergedAnswer a = merge_capabilities("data: line1\ndata: line2\n\ndata: tail", true, false);
  EXPECT_FALSE(a.merged);
  EXPECT_EQ(a.body, "data: line1\ndata: line2\n\ndata: tail\n");
}

// server/discover (2026-07-28): the Tasks extension is added beside the upstream's own extensions.
TEST(MergeCapabilities, ADiscoverAnswerGainsTheTasksExtensionKeepingTheUpstreams) {
  auto m = merge_message(R"({"id":1,"result":{"capabilities":{"extensions":{"com.example/x":{"v":2}},"tools":{}}}})",
                         true);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body,
            R"({"id":1,"result":{"capabilities":{"extensions":{"com.example/x":{"v":2},)"
            R"("io.modelcontextprotocol/tasks":{}},"tools":{"listChanged":true},)"
            R"("resources":{"subscribe":true,"listChanged":true}}}})");
}

TEST(MergeCapabilities, ADiscoverAnswerWithoutExtensionsGetsThem) {
  auto m = merge_message(R"({"id":1,"result":{"capabilities":{}}})", true);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body, R"({"id":1,"result":{"capabilities":{"resources":{"subscribe":true,"listChanged":true},)"
                     R"("extensions":{"io.modelcontextprotocol/tasks":{}}}}})");
}

TEST(MergeCapabilities, TheUpstreamsOwnTasksEntryIsKept) {
  auto m = merge_message(
      R"({"id":1,"result":{"capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{"mine":true}}}}})", true);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body,
            R"({"id":1,"result":{"capabilities":{"extensions":{"io.modelcontextprotocol/tasks":{"mine":true}},)"
            R"("resources":{"subscribe":true,"listChanged":true}}}})");
  // An `extensions` that is not an object is the upstream's mistake, kept as sent.
  auto odd = merge_message(R"({"id":1,"result":{"capabilities":{"extensions":7}}})", true);
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->body,
            R"({"id":1,"result":{"capabilities":{"extensions":7,"resources":{"subscribe":true,"listChanged":true}}}})");
}

// initialize (2025-era sessions hear no task notifications): no Tasks extension is added.
TEST(MergeCapabilities, AnInitializeAnswerDoesNotGainTheTasksExtension) {
  MergedAnswer a = merge_capabilities(
      R"({"id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"extensions":{"com.example/x":{}}}}})",
      false, false);
  ASSERT_TRUE(a.merged);
  EXPECT_EQ(a.body, R"({"id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"extensions":)"
                    R"({"com.example/x":{}},"resources":{"subscribe":true,"listChanged":true}}}})");
  EXPECT_EQ(a.body.find("io.modelcontextprotocol/tasks"), std::string::npos);
}

std::vector<std::string> Split(SseEventSplitter& s, const std::vector<std::string>& pieces, bool* fits = nullptr) {
  std::vector<std::string> out;
  bool ok = true;
  for (const auto& p : pieces) ok = s.feed(p, [&](std::string&& e) { out.push_back(std::move(e)); }) && ok;
  if (fits) *fits = ok;
  return out;
}

TEST(SseEventSplitter, WholeEventsWhateverTheReadsAndLineEndings) {
  SseEventSplitter s(1024);
  auto events =
      Split(s, {"event: message\r", "\ndata: {\"a\":1}\r\n\r", "\n: keepalive\n\nid: 7\rdata: x\r\r", "data: y\n"});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0], "event: message\ndata: {\"a\":1}\n\n");
  EXPECT_EQ(events[1], "id: 7\ndata: x\n\n");  // the comment-only block is dropped
  events = Split(s, {"\n"});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "data: y\n\n");
}

TEST(SseEventSplitter, AnEventOverTheBoundIsAnError) {
  SseEventSplitter s(64);
  bool fits = true;
  auto events = Split(s, {"data: " + std::string(40, 'a') + "\n", "data: " + std::string(40, 'b') + "\n\n"}, &fits);
  EXPECT_FALSE(fits);
  EXPECT_TRUE(events.empty());
}

}  // namespace
}  // namespace mcpfan::detail::proxy

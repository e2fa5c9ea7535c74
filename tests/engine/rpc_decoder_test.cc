// Tests for engine/src/rpc_decoder.cc: client JSON-RPC messages (design §2).
#include "mcpfan/rpc_decoder.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

namespace mcpfan {
namespace {

class RpcDecoderTest : public ::testing::Test {
 protected:
  RpcRequest decode(const std::string& text) { return decoder.decode(text); }
  RpcDecoder decoder;
  simdjson::dom::parser parser;
};

std::string msg(const std::string& id_json, const std::string& method, const std::string& params = {}) {
  std::string s = R"({"jsonrpc":"2.0")";
  if (!id_json.empty()) s += R"(,"id":)" + id_json;
  s += R"(,"method":")" + method + "\"";
  if (!params.empty()) s += R"(,"params":)" + params;
  return s + "}";
}

std::string listen(const std::string& notifications) {
  return msg(R"("listen:0")", "subscriptions/listen", R"({"notifications":)" + notifications + "}");
}

void expect_error(const RpcRequest& r, int code, std::string_view mention) {
  ASSERT_TRUE(r.error.has_value()) << "accepted";
  EXPECT_EQ(r.error->code, code) << r.error->message;
  EXPECT_NE(r.error->message.find(mention), std::string::npos)
      << "message \"" << r.error->message << "\" does not mention \"" << mention << "\"";
}

// ---- ids ----

TEST_F(RpcDecoderTest, StringIdIsKeptAsQuotedJson) {
  RpcRequest r = decode(msg(R"("listen:0")", "ping"));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_TRUE(r.has_id);
  EXPECT_EQ(r.id, R"("listen:0")");
  EXPECT_EQ(r.method, "ping");
}

TEST_F(RpcDecoderTest, StringIdWithEscapesRoundTrips) {
  RpcRequest r = decode(msg(R"("a\"b\\c\u0001d\u00e9")", "ping"));
  ASSERT_FALSE(r.error) << r.error->message;
  simdjson::dom::element el;
  ASSERT_EQ(parser.parse(r.id).get(el), simdjson::SUCCESS) << r.id;
  EXPECT_EQ(el.get_string().value(), std::string("a\"b\\c\x01" "d\xc3\xa9"));
}

TEST_F(RpcDecoderTest, IntegerIdsKeepTheirType) {
  EXPECT_EQ(decode(msg("7", "ping")).id, "7");
  EXPECT_EQ(decode(msg("0", "ping")).id, "0");
  EXPECT_EQ(decode(msg("-12", "ping")).id, "-12");
  EXPECT_EQ(decode(msg("18446744073709551615", "ping")).id, "18446744073709551615");
}

TEST_F(RpcDecoderTest, OtherIdTypesAreRejected) {
  for (const char* id : {"null", "1.5", "1e3", "{}", "[1]", "true"}) {
    SCOPED_TRACE(id);
    RpcRequest r = decode(msg(id, "ping"));
    expect_error(r, rpc_code::kInvalidRequest, "\"id\"");
  }
}

TEST_F(RpcDecoderTest, NoIdMeansANotification) {
  RpcRequest r = decode(msg("", "notifications/initialized"));
  ASSERT_FALSE(r.error);
  EXPECT_FALSE(r.has_id);
  EXPECT_EQ(r.method, "notifications/initialized");
}

// ---- envelope ----

TEST_F(RpcDecoderTest, JsonrpcMustBe20AndTheIdIsStillReported) {
  RpcRequest missing = decode(R"({"id":5,"method":"ping"})");
  expect_error(missing, rpc_code::kInvalidRequest, "jsonrpc");
  EXPECT_TRUE(missing.has_id);
  EXPECT_EQ(missing.id, "5");
  expect_error(decode(R"({"jsonrpc":"1.0","id":5,"method":"ping"})"), rpc_code::kInvalidRequest, "jsonrpc");
  expect_error(decode(R"({"jsonrpc":2.0,"id":5,"method":"ping"})"), rpc_code::kInvalidRequest, "jsonrpc");
}

TEST_F(RpcDecoderTest, MethodMustBeAString) {
  expect_error(decode(R"({"jsonrpc":"2.0","id":1})"), rpc_code::kInvalidRequest, "method");
  expect_error(decode(R"({"jsonrpc":"2.0","id":1,"method":3})"), rpc_code::kInvalidRequest, "method");
}

TEST_F(RpcDecoderTest, BatchesAreInvalidRequests) {
  expect_error(decode("[" + msg("1", "ping") + "]"), rpc_code::kInvalidRequest, "batch");
  expect_error(decode("[]"), rpc_code::kInvalidRequest, "batch");
}

TEST_F(RpcDecoderTest, NonObjectIsAnInvalidRequest) {
  expect_error(decode("42"), rpc_code::kInvalidRequest, "object");
  expect_error(decode(R"("ping")"), rpc_code::kInvalidRequest, "object");
}

TEST_F(RpcDecoderTest, MalformedJsonIsAParseError) {
  for (const char* text : {"", "{", R"({"jsonrpc":"2.0",)", "ping", R"({"jsonrpc":"2.0","id":1,"method":"ping"} x)",
                           R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,tru]}})"}) {
    SCOPED_TRACE(text);
    expect_error(decode(text), rpc_code::kParseError, "parse");
  }
}

TEST_F(RpcDecoderTest, ParamsAndMetaMustBeObjects) {
  expect_error(decode(msg("1", "ping", "[1]")), rpc_code::kInvalidParams, "params");
  expect_error(decode(msg("1", "ping", "null")), rpc_code::kInvalidParams, "params");
  expect_error(decode(msg("1", "ping", R"({"_meta":[]})")), rpc_code::kInvalidParams, "_meta");
  expect_error(decode(msg("1", "ping", R"({"_meta":{"io.modelcontextprotocol/protocolVersion":2026}})")),
               rpc_code::kInvalidParams, "protocolVersion");
}

TEST_F(RpcDecoderTest, MetaProtocolVersionIsRead) {
  RpcRequest r = decode(msg("1", "server/discover",
                            R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                            R"("io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}})"));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.meta_version, "2026-07-28");
  EXPECT_EQ(decode(msg("1", "server/discover", "{}")).meta_version, "");
}

// ---- subscriptions/listen ----

TEST_F(RpcDecoderTest, ListenFilterIsDecodedAndDeduplicated) {
  RpcRequest r = decode(msg(R"("listen:0")", "subscriptions/listen",
                            R"({"notifications":{"toolsListChanged":true,"promptsListChanged":false,)"
                            R"("resourcesListChanged":true,"futureListChanged":true,)"
                            R"("resourceSubscriptions":["file:///a","file:///b/","file:///a","file:///x\u0020y"]},)"
                            R"("_meta":{"io.modelcontextprotocol/protocolVersion":"DRAFT-2026-v1"}})"));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.id, R"("listen:0")");
  EXPECT_EQ(r.method, "subscriptions/listen");
  EXPECT_TRUE(r.listen.wants(Kind::ToolsListChanged));
  EXPECT_FALSE(r.listen.wants(Kind::PromptsListChanged));
  EXPECT_TRUE(r.listen.wants(Kind::ResourcesListChanged));
  EXPECT_EQ(r.listen.resource_uris, (std::vector<std::string>{"file:///a", "file:///b/", "file:///x y"}));
  EXPECT_EQ(r.meta_version, "DRAFT-2026-v1");
}

TEST_F(RpcDecoderTest, ListenWithoutAFilterSubscribesToNothing) {
  for (const std::string& text :
       {msg("1", "subscriptions/listen"), msg("1", "subscriptions/listen", "{}"), listen("{}")}) {
    SCOPED_TRACE(text);
    RpcRequest r = decode(text);
    ASSERT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(r.listen.flagged, 0);
    EXPECT_TRUE(r.listen.resource_uris.empty());
  }
}

TEST_F(RpcDecoderTest, ListenFilterErrorsAreInvalidParams) {
  expect_error(decode(listen("[]")), rpc_code::kInvalidParams, "notifications");
  expect_error(decode(listen(R"({"toolsListChanged":"yes"})")), rpc_code::kInvalidParams, "toolsListChanged");
  expect_error(decode(listen(R"({"promptsListChanged":1})")), rpc_code::kInvalidParams, "promptsListChanged");
  expect_error(decode(listen(R"({"resourceSubscriptions":"file:///a"})")), rpc_code::kInvalidParams,
               "resourceSubscriptions");
  expect_error(decode(listen(R"({"resourceSubscriptions":["file:///a",7]})")), rpc_code::kInvalidParams,
               "resourceSubscriptions");
  expect_error(decode(listen(R"({"resourceSubscriptions":["file:///a",""]})")), rpc_code::kInvalidParams, "empty");
  RpcRequest r = decode(listen(R"({"toolsListChanged":"yes"})"));
  EXPECT_EQ(r.id, R"("listen:0")") << "the id is reported with the error";
}

TEST_F(RpcDecoderTest, ListenLimitsAreInclusive) {
  RpcLimits limits;
  limits.max_uri_length = 10;
  limits.max_uris_per_listen = 3;
  RpcDecoder small(limits);
  EXPECT_EQ(small.limits().max_uris_per_listen, 3u);

  RpcRequest ok = small.decode(listen(R"({"resourceSubscriptions":["mem://1234","mem://b","mem://c"]})"));
  ASSERT_FALSE(ok.error) << ok.error->message;
  EXPECT_EQ(ok.listen.resource_uris.size(), 3u);

  RpcRequest too_long = small.decode(listen(R"({"resourceSubscriptions":["mem://12345"]})"));
  expect_error(too_long, rpc_code::kInvalidParams, "longer than 10");
  RpcRequest too_many = small.decode(listen(R"({"resourceSubscriptions":["mem://a","mem://b","mem://c","mem://d"]})"));
  expect_error(too_many, rpc_code::kInvalidParams, "more than 3");
}

TEST_F(RpcDecoderTest, TaskIdsAreDecodedDeduplicatedAndBounded) {
  RpcRequest r = decode(listen(R"({"taskIds":["t1","t2","t1","t\u0033"],"toolsListChanged":true})"));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.listen.task_ids, (std::vector<std::string>{"t1", "t2", "t3"}));
  EXPECT_TRUE(r.listen.resource_uris.empty()) << "task ids are not URIs";
  EXPECT_TRUE(r.listen.wants(Kind::ToolsListChanged));

  expect_error(decode(listen(R"({"taskIds":"t1"})")), rpc_code::kInvalidParams, "taskIds must be an array");
  expect_error(decode(listen(R"({"taskIds":["t1",7]})")), rpc_code::kInvalidParams, "taskIds");
  expect_error(decode(listen(R"({"taskIds":[""]})")), rpc_code::kInvalidParams, "empty task id");

  RpcLimits limits;
  limits.max_task_id_length = 4;
  limits.max_task_ids_per_listen = 2;
  RpcDecoder small(limits);
  RpcRequest ok = small.decode(listen(R"({"taskIds":["abcd","b"]})"));
  ASSERT_FALSE(ok.error) << ok.error->message;
  RpcRequest too_long = small.decode(listen(R"({"taskIds":["abcde"]})"));
  expect_error(too_long, rpc_code::kInvalidParams, "task id is longer than 4");
  EXPECT_EQ(too_long.limit_hit, RpcLimitHit::TaskIdLength);
  RpcRequest too_many = small.decode(listen(R"({"taskIds":["a","b","c"]})"));
  expect_error(too_many, rpc_code::kInvalidParams, "more than 2 task ids");
  EXPECT_EQ(too_many.limit_hit, RpcLimitHit::TaskIdsPerListen);
}

TEST_F(RpcDecoderTest, TheTasksExtensionIsReadFromThePerRequestCapabilities) {
  auto with_caps = [&](const std::string& caps) {
    return decode(msg("1", "subscriptions/listen",
                      R"({"_meta":{"io.modelcontextprotocol/clientCapabilities":)" + caps + "}}"));
  };
  EXPECT_TRUE(with_caps(R"({"extensions":{"io.modelcontextprotocol/tasks":{}}})").declares_tasks);
  EXPECT_FALSE(with_caps(R"({"extensions":{"io.modelcontextprotocol/other":{}}})").declares_tasks);
  EXPECT_FALSE(with_caps(R"({"extensions":{"io.modelcontextprotocol/tasks":true}})").declares_tasks)
      << "an extension's settings are an object";
  EXPECT_FALSE(with_caps("{}").declares_tasks);
  RpcRequest bad = with_caps(R"({"extensions":[]})");
  expect_error(bad, rpc_code::kInvalidParams, "extensions must be an object");
  EXPECT_TRUE(bad.envelope_error);
}

// ---- other methods ----

TEST_F(RpcDecoderTest, CancelledCarriesTheRequestIdAsJson) {
  RpcRequest s = decode(msg("", "notifications/cancelled", R"({"requestId":"listen:0","reason":"done"})"));
  ASSERT_FALSE(s.error) << s.error->message;
  EXPECT_FALSE(s.has_id);
  EXPECT_EQ(s.cancel_id, R"("listen:0")");
  RpcRequest n = decode(msg("", "notifications/cancelled", R"({"requestId":3})"));
  ASSERT_FALSE(n.error);
  EXPECT_EQ(n.cancel_id, "3");
  expect_error(decode(msg("", "notifications/cancelled", "{}")), rpc_code::kInvalidParams, "requestId");
  expect_error(decode(msg("", "notifications/cancelled", R"({"requestId":null})")), rpc_code::kInvalidParams,
               "requestId");
  expect_error(decode(msg("", "notifications/cancelled")), rpc_code::kInvalidParams, "requestId");
}

TEST_F(RpcDecoderTest, ResourceSubscribeAndUnsubscribeNeedAUri) {
  RpcRequest r = decode(msg("4", "resources/subscribe", R"({"uri":"file:///a\/b"})"));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(r.uri, "file:///a/b");
  EXPECT_EQ(decode(msg("4", "resources/unsubscribe", R"({"uri":"mem://z"})")).uri, "mem://z");
  for (const std::string m : {"resources/subscribe", "resources/unsubscribe"}) {
    SCOPED_TRACE(m);
    RpcRequest missing = decode(msg("9", m, "{}"));
    expect_error(missing, rpc_code::kInvalidParams, "uri");
    EXPECT_EQ(missing.id, "9");
    EXPECT_EQ(missing.method, m);
    expect_error(decode(msg("9", m)), rpc_code::kInvalidParams, "uri");
    expect_error(decode(msg("9", m, R"({"uri":""})")), rpc_code::kInvalidParams, "uri");
    expect_error(decode(msg("9", m, R"({"uri":5})")), rpc_code::kInvalidParams, "uri");
    expect_error(decode(msg("9", m, R"({"uri":")" + std::string(4097, 'u') + "\"}")), rpc_code::kInvalidParams,
                 "longer");
  }
}

TEST_F(RpcDecoderTest, DecoderReuseAfterALongMessage) {
  RpcRequest big = decode(msg("1", "resources/subscribe", R"({"uri":")" + std::string(4000, 'q') + "\"}"));
  ASSERT_FALSE(big.error) << big.error->message;
  RpcRequest small = decode(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  ASSERT_FALSE(small.error) << small.error->message;
  EXPECT_EQ(small.id, "2");
  EXPECT_EQ(small.uri, "");
  expect_error(decode(R"({"jsonrpc":"2.0","id":3,"meth)"), rpc_code::kParseError, "parse");
}

// ---- output helpers ----

TEST_F(RpcDecoderTest, ErrorJsonParsesBack) {
  Error e{rpc_code::kUnsupportedVersion, "unsupported \"protocol\"\nversion\\"};
  std::string out =
      rpc_error_json(R"("listen:0")", e, R"({"supported":["2026-07-28","DRAFT-2026-v1"],"requested":"x"})");
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  EXPECT_EQ(doc["jsonrpc"].get_string().value(), "2.0");
  EXPECT_EQ(doc["id"].get_string().value(), "listen:0");
  EXPECT_EQ(doc["error"]["code"].get_int64().value(), -32022);
  EXPECT_EQ(doc["error"]["message"].get_string().value(), e.message);
  EXPECT_EQ(doc["error"]["data"]["supported"].at(0).get_string().value(), "2026-07-28");
  EXPECT_EQ(doc["error"]["data"]["requested"].get_string().value(), "x");

  std::string anon = rpc_error_json("", Error{rpc_code::kParseError, "parse error"});
  ASSERT_EQ(parser.parse(anon).get(doc), simdjson::SUCCESS) << anon;
  EXPECT_TRUE(doc["id"].is_null());
  EXPECT_EQ(doc["error"]["code"].get_int64().value(), -32700);
  EXPECT_TRUE(doc["error"]["data"].error()) << "no data member when none is given";

  // An id taken from a decoded request is valid JSON in the reply.
  RpcRequest r = decode(msg(R"("we\"ird")", "nope"));
  std::string echoed = rpc_error_json(r.id, Error{rpc_code::kMethodNotFound, "unknown method"});
  ASSERT_EQ(parser.parse(echoed).get(doc), simdjson::SUCCESS) << echoed;
  EXPECT_EQ(doc["id"].get_string().value(), "we\"ird");
}

TEST_F(RpcDecoderTest, ResultJsonParsesBack) {
  std::string out =
      rpc_result_json("7", R"({"resultType":"complete","_meta":{"io.modelcontextprotocol/subscriptionId":7}})");
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(out).get(doc), simdjson::SUCCESS) << out;
  EXPECT_EQ(doc["jsonrpc"].get_string().value(), "2.0");
  EXPECT_EQ(doc["id"].get_int64().value(), 7);
  EXPECT_EQ(doc["result"]["resultType"].get_string().value(), "complete");
  EXPECT_EQ(doc["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"].get_int64().value(), 7);
  std::string empty = rpc_result_json(R"("s")", "{}");
  ASSERT_EQ(parser.parse(empty).get(doc), simdjson::SUCCESS) << empty;
  EXPECT_EQ(doc["result"].get_object().value().size(), 0u);
}


// 2026-07-28 per-request fields (docs/protocol.md "Eras and transports"): clientCapabilities is recorded, a broken
// envelope field marks the request malformed, and 2025-era params are not read from a
// request that names the 2026 revision.
TEST(RpcDecoderEnvelope, ClientCapabilitiesAndEnvelopeErrors) {
  RpcDecoder d;
  auto with = d.decode(
      R"({"jsonrpc":"2.0","id":1,"method":"server/discover",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
      R"("io.modelcontextprotocol/clientCapabilities":{}}}})");
  ASSERT_FALSE(with.error);
  EXPECT_TRUE(with.has_client_capabilities);
  auto without = d.decode(
      R"({"jsonrpc":"2.0","id":1,"method":"server/discover",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  ASSERT_FALSE(without.error);
  EXPECT_FALSE(without.has_client_capabilities);
  auto bad = d.decode(
      R"({"jsonrpc":"2.0","id":1,"method":"server/discover",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":[]}}})");
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(bad.error->code, rpc_code::kInvalidParams);
  EXPECT_TRUE(bad.envelope_error);
  auto bad_listen = d.decode(
      R"({"jsonrpc":"2.0","id":1,"method":"subscriptions/listen",)"
      R"("params":{"notifications":{"resourceSubscriptions":[1]}}})");
  ASSERT_TRUE(bad_listen.error);
  EXPECT_FALSE(bad_listen.envelope_error);  // a method's own params: not the envelope
  auto removed = d.decode(
      R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe",)"
      R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})");
  EXPECT_FALSE(removed.error) << "a 2026 request's 2025-era method is refused by name, not by its params";
  auto old = d.decode(R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{}})");
  ASSERT_TRUE(old.error);
  EXPECT_EQ(old.error->code, rpc_code::kInvalidParams);
}

}  // namespace
}  // namespace mcpfan

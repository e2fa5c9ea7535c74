// Tests for engine/src/publish_decoder.cc: POST /v1/publish bodies (design §3).
#include "mcpfan/publish_decoder.h"

#include <gtest/gtest.h>

#include <random>
#include <simdjson.h>

#include <string>
#include <vector>

namespace mcpfan {
namespace {

// The JSON of a payload as subscription `7` would receive it on a stdio stream.
std::string json_for(const PayloadRef& p) {
  std::string s(p->head(Framing::Line));
  s += "7";
  s += p->tail(Framing::Line);
  EXPECT_EQ(s.back(), '\n');
  s.pop_back();
  EXPECT_EQ(s.find('\n'), std::string::npos) << "raw newline inside the JSON: " << s;
  return s;
}

// Throws (a test failure, not a crash) when `json` does not parse.
simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  return parser.parse(json).value();
}

std::size_t count(std::string_view hay, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t pos = hay.find(needle); pos != std::string_view::npos; pos = hay.find(needle, pos + 1)) ++n;
  return n;
}

class PublishDecoderTest : public ::testing::Test {
 protected:
  // Publishing only looks tenants up: the ones these tests name have clients (a reference).
  PublishDecoderTest() {
    for (const char* name : {"acme", "beta"}) held.emplace_back(tenants, *tenants.acquire(name));
  }
  TenantTable tenants;
  std::vector<TenantRef> held;
  PublishDecoder decoder;
  simdjson::dom::parser parser;
};

TEST_F(PublishDecoderTest, SingleObjectWithMetaFromTheDesignExample) {
  auto r = decoder.decode(R"({"tenant": "acme", "method": "notifications/resources/updated",
      "params": {"uri": "file:///project/config.json", "_meta": {"origin/rev": 42}}})",
                          tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().payloads.size(), 1u);
  const PayloadRef& p = r.value().payloads[0];
  EXPECT_EQ(p->kind(), Kind::ResourceUpdated);
  EXPECT_EQ(p->uri(), "file:///project/config.json");
  EXPECT_EQ(tenants.name(p->tenant()), "acme");

  auto doc = parse(parser, json_for(p));
  EXPECT_EQ(doc["method"].get_string().value(), "notifications/resources/updated");
  EXPECT_EQ(doc["params"]["uri"].get_string().value(), "file:///project/config.json");
  EXPECT_EQ(doc["params"]["_meta"]["origin/rev"].get_int64().value(), 42);
  EXPECT_EQ(doc["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].get_int64().value(), 7);
}

TEST_F(PublishDecoderTest, ArrayKeepsOrderKindsAndTenants) {
  auto r = decoder.decode(R"([
      {"tenant": "acme", "method": "notifications/tools/list_changed"},
      {"method": "notifications/prompts/list_changed"},
      {"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": {"uri": "ignored://x"}},
      {"tenant": "beta", "method": "notifications/resources/updated", "params": {"uri": "mem://b"}}
    ])",
                          tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto& v = r.value().payloads;
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0]->kind(), Kind::ToolsListChanged);
  EXPECT_EQ(tenants.name(v[0]->tenant()), "acme");
  EXPECT_EQ(v[1]->kind(), Kind::PromptsListChanged);
  EXPECT_EQ(v[1]->tenant(), kDefaultTenant);
  EXPECT_EQ(v[2]->kind(), Kind::ResourcesListChanged);
  EXPECT_EQ(v[2]->uri(), "") << "list_changed carries no key";
  EXPECT_EQ(parse(parser, json_for(v[2]))["params"]["uri"].get_string().value(), "ignored://x");  // passed through
  EXPECT_EQ(v[3]->kind(), Kind::ResourceUpdated);
  EXPECT_EQ(v[3]->uri(), "mem://b");
  EXPECT_EQ(tenants.name(v[3]->tenant()), "beta");
  EXPECT_NE(v[0]->tenant(), v[3]->tenant());
}

TEST_F(PublishDecoderTest, ForcedTenantAppliesAndMustAgree) {
  TenantId acme = *tenants.find("acme");
  auto r = decoder.decode(R"({"method":"notifications/tools/list_changed"})", tenants, "acme");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().payloads[0]->tenant(), acme);
  auto same = decoder.decode(R"({"tenant":"acme","method":"notifications/tools/list_changed"})", tenants, "acme");
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same.value().payloads[0]->tenant(), acme);
  auto other = decoder.decode(R"({"tenant":"other","method":"notifications/tools/list_changed"})", tenants, "acme");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("other"), std::string::npos) << other.error().message;
}

TEST_F(PublishDecoderTest, MetaPassesThroughButPublisherSubscriptionIdIsDropped) {
  auto r = decoder.decode(R"({"method":"notifications/resources/updated","params":{"uri":"file:///m",
      "_meta":{"io.modelcontextprotocol/subscriptionId":"forged","origin/rev":{"n":[1,2]},
               "io.modelcontextprotocol\/subscriptionId":99,"x\"y":"z"},"extra":"kept"}})",
                          tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::string json = json_for(r.value().payloads[0]);
  EXPECT_EQ(count(json, "subscriptionId"), 1u) << json;
  EXPECT_EQ(json.find("forged"), std::string::npos) << json;
  auto doc = parse(parser, json);
  auto meta = doc["params"]["_meta"];
  EXPECT_EQ(meta["io.modelcontextprotocol/subscriptionId"].get_int64().value(), 7);
  EXPECT_EQ(meta["origin/rev"]["n"].at(1).get_int64().value(), 2);
  EXPECT_EQ(meta["x\"y"].get_string().value(), "z");
  EXPECT_EQ(meta.get_object().value().size(), 3u);
  EXPECT_EQ(doc["params"]["extra"].get_string().value(), "kept");
}

TEST_F(PublishDecoderTest, WhitespaceAndNewlinesInsideParamsAreMinifiedAway) {
  auto r = decoder.decode("{\n  \"method\" : \"notifications/resources/updated\" ,\r\n"
                          "  \"params\" : {\n    \"uri\" : \"file:///a b\",\n"
                          "    \"list\" : [ 1 ,\n       2 ,\t3 ],\n"
                          "    \"obj\" : { \"k\" : \"v  w\\n\" , \"e\" : { } },\n"
                          "    \"_meta\" : { \"m\" : [ true ,\n false ] }\n  }\n}\n",
                          tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::string json = json_for(r.value().payloads[0]);
  EXPECT_NE(json.find(R"("list":[1,2,3])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("obj":{"k":"v  w\n","e":{}})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("m":[true,false])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("uri":"file:///a b")"), std::string::npos) << json;
  EXPECT_EQ(r.value().payloads[0]->uri(), "file:///a b");
  parse(parser, json);
}

TEST_F(PublishDecoderTest, EscapedUriIsUnescapedForMatchingAndPassedVerbatim) {
  auto r =
      decoder.decode(R"({"method":"notifications/resources/updated","params":{"uri":"file:///x\u0020y\/z"}})", tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().payloads[0]->uri(), "file:///x y/z");
  EXPECT_EQ(parse(parser, json_for(r.value().payloads[0]))["params"]["uri"].get_string().value(), "file:///x y/z");
}

TEST_F(PublishDecoderTest, LimitsAreInclusive) {
  PublishLimits limits;
  limits.max_uri_length = 12;
  limits.max_notifications = 2;
  PublishDecoder small(limits);
  auto ok_uri =
      small.decode(R"({"method":"notifications/resources/updated","params":{"uri":"mem://123456"}})", tenants);
  EXPECT_TRUE(ok_uri.ok()) << ok_uri.error().message;
  auto long_uri =
      small.decode(R"({"method":"notifications/resources/updated","params":{"uri":"mem://1234567"}})", tenants);
  ASSERT_FALSE(long_uri.ok());
  EXPECT_NE(long_uri.error().message.find("longer than 12"), std::string::npos) << long_uri.error().message;

  const std::string n = R"({"method":"notifications/tools/list_changed"})";
  auto two = small.decode("[" + n + "," + n + "]", tenants);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two.value().payloads.size(), 2u);
  auto three = small.decode("[" + n + "," + n + "," + n + "]", tenants);
  ASSERT_FALSE(three.ok());
  EXPECT_NE(three.error().message.find("more than 2"), std::string::npos) << three.error().message;
}

struct BadBody {
  const char* name;
  std::string body;
  std::string must_mention;
  bool parse_error = false;
};

void PrintTo(const BadBody& b, std::ostream* os) { *os << b.name; }

class PublishDecoderRejects : public ::testing::TestWithParam<BadBody> {};

TEST_P(PublishDecoderRejects, WithAMessageNamingTheProblem) {
  const BadBody& b = GetParam();
  TenantTable tenants;
  PublishDecoder decoder;
  auto r = decoder.decode(b.body, tenants);
  ASSERT_FALSE(r.ok()) << "accepted: " << b.body;
  EXPECT_NE(r.error().message.find(b.must_mention), std::string::npos)
      << "message \"" << r.error().message << "\" does not mention \"" << b.must_mention << "\"";
  if (b.parse_error) EXPECT_EQ(r.error().code, rpc_code::kParseError);
  else EXPECT_NE(r.error().code, rpc_code::kParseError);
  // The decoder stays usable after an error.
  auto good = decoder.decode(R"({"method":"notifications/tools/list_changed"})", tenants);
  EXPECT_TRUE(good.ok());
}

const std::string kTools = R"("method":"notifications/tools/list_changed")";
const std::string kUpdated = R"("method":"notifications/resources/updated")";
const std::string kTask = R"("method":"notifications/tasks")";
const std::string kTaskTimes =
    R"("createdAt":"2026-11-28T10:00:00Z","lastUpdatedAt":"2026-11-28T10:00:01Z","ttlMs":60000)";
const std::string kTaskRest = R"("status":"working",)" + kTaskTimes;

INSTANTIATE_TEST_SUITE_P(
    Bodies, PublishDecoderRejects,
    ::testing::Values(
        BadBody{"empty", "", "JSON", true}, BadBody{"not_json", "tools changed, please", "JSON", true},
        BadBody{"truncated", "{" + kTools, "JSON", true},
        BadBody{"trailing_garbage", "{" + kTools + "} x", "JSON", true},
        BadBody{"two_objects", "{" + kTools + "}{" + kTools + "}", "JSON", true},
        BadBody{"raw_newline_in_string", "{" + kTools + ",\"params\":{\"x\":\"a\nb\"}}", "JSON", true},
        BadBody{"bad_atom_in_params", "{" + kTools + ",\"params\":{\"x\":[1,tru]}}", "JSON", true},
        BadBody{"bad_atom_in_meta", "{" + kTools + ",\"params\":{\"_meta\":{\"a\":{\"b\":nul}}}}", "JSON", true},
        BadBody{"number", "42", "object"}, BadBody{"string", R"("notifications/tools/list_changed")", "object"},
        BadBody{"null", "null", "object"}, BadBody{"array_of_non_object", "[42]", "object"},
        BadBody{"unknown_method", R"({"method":"notifications/message"})", "notifications/message"},
        BadBody{"missing_method", R"({"params":{}})", "method"},
        BadBody{"method_not_string", R"({"method":7})", "method"}, BadBody{"missing_uri", "{" + kUpdated + "}", "uri"},
        BadBody{"missing_uri_with_params", "{" + kUpdated + ",\"params\":{\"x\":1}}", "uri"},
        BadBody{"empty_uri", "{" + kUpdated + ",\"params\":{\"uri\":\"\"}}", "uri"},
        BadBody{"uri_not_string", "{" + kUpdated + ",\"params\":{\"uri\":5}}", "uri"},
        BadBody{"too_long_uri", "{" + kUpdated + ",\"params\":{\"uri\":\"file:///" + std::string(4096, 'a') + "\"}}",
                "longer"},
        BadBody{"params_not_object", "{" + kTools + ",\"params\":[1]}", "params"},
        BadBody{"meta_not_object", "{" + kTools + ",\"params\":{\"_meta\":\"x\"}}", "_meta"},
        BadBody{"unknown_top_level_field", "{" + kTools + ",\"id\":1}", "\"id\""},
        BadBody{"tenant_not_string", "{" + kTools + ",\"tenant\":1}", "tenant"},
        BadBody{"tenant_empty", "{" + kTools + ",\"tenant\":\"\"}", "tenant"},
        BadBody{"jsonrpc_not_2", "{" + kTools + ",\"jsonrpc\":\"1.0\"}", "jsonrpc"},
        BadBody{"second_of_two_invalid", "[{" + kTools + "},{" + kUpdated + "}]", "notification 1"},
        BadBody{"task_no_id", "{" + kTask + ",\"params\":{" + kTaskRest + "}}", "taskId"},
        BadBody{"task_empty_id", "{" + kTask + ",\"params\":{\"taskId\":\"\"," + kTaskRest + "}}", "taskId"},
        BadBody{"task_id_not_string", "{" + kTask + ",\"params\":{\"taskId\":7," + kTaskRest + "}}", "taskId"},
        BadBody{"task_too_long_id",
                "{" + kTask + ",\"params\":{\"taskId\":\"" + std::string(257, 't') + "\"," + kTaskRest + "}}",
                "longer than 256"},
        BadBody{"task_no_status", "{" + kTask + ",\"params\":{\"taskId\":\"t\"," + kTaskTimes + "}}", "status"},
        BadBody{"task_unknown_status", "{" + kTask + ",\"params\":{\"taskId\":\"t\",\"status\":\"done\"," +
                kTaskTimes + "}}", "working, input_required, completed, cancelled, failed"},
        BadBody{"task_completed_without_result", "{" + kTask + ",\"params\":{\"taskId\":\"t\","
                "\"status\":\"completed\"," + kTaskTimes + "}}", "result"},
        BadBody{"task_failed_without_error", "{" + kTask + ",\"params\":{\"taskId\":\"t\",\"status\":\"failed\","
                "\"error\":\"boom\"," + kTaskTimes + "}}", "error"},
        BadBody{"task_input_required_without_requests", "{" + kTask + ",\"params\":{\"taskId\":\"t\","
                "\"status\":\"input_required\"," + kTaskTimes + "}}", "inputRequests"},
        BadBody{"task_no_created_at", "{" + kTask + ",\"params\":{\"taskId\":\"t\",\"status\":\"working\","
                "\"lastUpdatedAt\":\"x\",\"ttlMs\":1}}", "createdAt"},
        BadBody{"task_no_ttl", "{" + kTask + ",\"params\":{\"taskId\":\"t\",\"status\":\"working\","
                "\"createdAt\":\"x\",\"lastUpdatedAt\":\"x\"}}", "ttlMs"},
        BadBody{"task_fractional_ttl", "{" + kTask + ",\"params\":{\"taskId\":\"t\",\"status\":\"working\","
                "\"createdAt\":\"x\",\"lastUpdatedAt\":\"x\",\"ttlMs\":1.5}}", "ttlMs"},
        BadBody{"task_bad_poll_interval", "{" + kTask + ",\"params\":{" + kTaskRest + ",\"taskId\":\"t\","
                "\"pollIntervalMs\":-1}}", "pollIntervalMs"},
        BadBody{"task_oversize", "{" + kTask + ",\"params\":{" + kTaskRest + ",\"taskId\":\"t\","
                "\"statusMessage\":\"" + std::string(256 * 1024, 'm') + "\"}}", "--max-task-bytes"},
        BadBody{"too_many",
                "[" +
                    [] {
                      std::string s;
                      for (int i = 0; i < 10001; ++i) s += (i ? ",{" : "{") + kTools + "}";
                      return s;
                    }() +
                    "]",
                "more than 10000"}),
    [](const ::testing::TestParamInfo<BadBody>& info) { return std::string(info.param.name); });

TEST_F(PublishDecoderTest, TaskNotificationsAreKeyedByIdAndKeptEvenWithoutAudience) {
  auto r = decoder.decode(
      R"([{"tenant":"acme","method":"notifications/tasks","params":{"taskId":"t1","status":"completed",)"
      R"("result":{"content":[],"isError":false},"createdAt":"a","lastUpdatedAt":"b","ttlMs":5000,)"
      R"("pollIntervalMs":100}},)"
      R"({"tenant":"nobody-here","method":"notifications/tasks","params":{"taskId":"t2","status":"cancelled",)"
      R"("createdAt":"a","lastUpdatedAt":"b","ttlMs":null}},)"
      R"({"tenant":"acme","method":"notifications/tasks","params":{"taskId":"t3","status":"input_required",)"
      R"("inputRequests":{"r":{}},"createdAt":"a","lastUpdatedAt":"b","ttlMs":1}}])",
      tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().accepted, 3u);
  ASSERT_EQ(r.value().payloads.size(), 2u) << "the tenant without clients gets no local payload";
  EXPECT_EQ(r.value().payloads[0]->kind(), Kind::TaskStatus);
  EXPECT_EQ(r.value().payloads[0]->uri(), "t1") << "the key is the task id";
  const auto& t = r.value().tasks;
  ASSERT_EQ(t.size(), 3u) << "every task's state is kept, audience here or not";
  EXPECT_EQ(t[0].tenant, "acme");
  EXPECT_EQ(t[0].payload.get(), r.value().payloads[0].get()) << "the same payload: replay and fan-out are one";
  EXPECT_EQ(t[0].ttl_ms, std::optional<std::uint64_t>(5000));
  EXPECT_TRUE(t[0].terminal);
  EXPECT_EQ(t[1].tenant, "nobody-here");
  ASSERT_TRUE(t[1].payload);
  EXPECT_EQ(t[1].payload->uri(), "t2");
  EXPECT_EQ(t[1].ttl_ms, std::nullopt);
  EXPECT_TRUE(t[1].terminal);
  EXPECT_FALSE(t[2].terminal);
  // The params go out as published, with the subscription id added.
  auto doc = parse(parser, json_for(r.value().payloads[0]));
  EXPECT_EQ(std::string(doc["params"]["status"].get_string().value()), "completed");
  EXPECT_EQ(doc["params"]["pollIntervalMs"].get_int64().value(), 100);
}

TEST_F(PublishDecoderTest, TaskMembersOfAnotherMethodPassThroughWhateverTheirType) {
  // Found by fuzz_publish_decoder: a non-string "status" was read as one token, losing its members.
  auto r = decoder.decode(
      R"({"method":"notifications/tools/list_changed","params":{"status":{"a":[1,2]},"taskId":[3],"x":1}})", tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r.value().payloads.size(), 1u);
  EXPECT_TRUE(r.value().tasks.empty());
  EXPECT_NE(json_for(r.value().payloads[0]).find(R"("status":{"a":[1,2]},"taskId":[3],"x":1)"), std::string::npos)
      << json_for(r.value().payloads[0]);
}

TEST_F(PublishDecoderTest, ATaskRefusedForItsSizeOrIdNamesTheLimitHit) {
  PublishLimits limits;
  limits.max_task_bytes = 200;
  limits.max_task_id_length = 3;
  PublishDecoder small(limits);
  const std::string rest = R"("status":"working","createdAt":"a","lastUpdatedAt":"b","ttlMs":1)";
  EXPECT_TRUE(small.decode(R"({"method":"notifications/tasks","params":{"taskId":"abc",)" + rest + "}}", tenants).ok());
  EXPECT_EQ(small.limit_hit(), PublishLimitHit::None);
  EXPECT_FALSE(
      small.decode(R"({"method":"notifications/tasks","params":{"taskId":"abcd",)" + rest + "}}", tenants).ok());
  EXPECT_EQ(small.limit_hit(), PublishLimitHit::TaskIdLength);
  EXPECT_FALSE(small
                   .decode(R"({"method":"notifications/tasks","params":{"taskId":"abc","statusMessage":")" +
                               std::string(200, 'x') + R"(",)" + rest + "}}",
                           tenants)
                   .ok());
  EXPECT_EQ(small.limit_hit(), PublishLimitHit::TaskBytes);
  EXPECT_TRUE(small.decode(R"({"method":"notifications/tools/list_changed"})", tenants).ok());
  EXPECT_EQ(small.limit_hit(), PublishLimitHit::None) << "reset by the next decode";
}

// An empty array is a valid body that publishes nothing (engine commit ad49e47: the
// publisher gets `202 {"accepted": 0}`).
TEST_F(PublishDecoderTest, EmptyArrayPublishesNothing) {
  for (const char* body : {"[]", " [ \n ] "}) {
    auto r = decoder.decode(body, tenants);
    ASSERT_TRUE(r.ok()) << body << ": " << r.error().message;
    EXPECT_TRUE(r.value().payloads.empty()) << body;
    EXPECT_EQ(r.value().accepted, 0u) << body;
  }
}

TEST_F(PublishDecoderTest, ArraysAreAllOrNothing) {
  // A valid first element does not get through when the second is bad.
  auto r = decoder.decode(R"([{"method":"notifications/resources/updated","params":{"uri":"file:///ok"}},
                              {"method":"notifications/resources/updated","params":{"uri":""}}])",
                          tenants);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("notification 1"), std::string::npos) << r.error().message;
  auto bad_json = decoder.decode(R"([{"method":"notifications/tools/list_changed"}, {"method": tru}])", tenants);
  ASSERT_FALSE(bad_json.ok());
}

TEST_F(PublishDecoderTest, ReuseWithAShorterBodySeesNoStaleBytes) {
  std::string big = R"({"method":"notifications/resources/updated","params":{"uri":"file:///long/)" +
                    std::string(3000, 'x') + R"(","pad":")" + std::string(3000, 'y') + R"("}})";
  auto r1 = decoder.decode(big, tenants);
  ASSERT_TRUE(r1.ok()) << r1.error().message;
  auto r2 = decoder.decode(R"({"method":"notifications/resources/updated","params":{"uri":"a:b"}})", tenants);
  ASSERT_TRUE(r2.ok()) << r2.error().message;
  EXPECT_EQ(r2.value().payloads[0]->uri(), "a:b");
  // The first result's payloads own their bytes: still intact after the decoder moved on.
  EXPECT_EQ(r1.value().payloads[0]->uri().size(), std::string("file:///long/").size() + 3000);
  auto doc = parse(parser, json_for(r1.value().payloads[0]));
  EXPECT_EQ(doc["params"]["pad"].get_string().value().size(), 3000u);
  auto truncated = decoder.decode(R"({"method":"notifications/resources/updated")", tenants);
  EXPECT_FALSE(truncated.ok());
}

}  // namespace
}  // namespace mcpfan

namespace mcpfan {
namespace {

class PublishDecoderFuzzFindings : public ::testing::Test {
 protected:
  TenantTable tenants;
  PublishDecoder decoder;
};

// Found by fuzz_publish_decoder: minifying before validating joined separate tokens into
// valid ones ("1 2" -> "12", "tr ue" -> "true"), so invalid JSON was accepted.
TEST_F(PublishDecoderFuzzFindings, TokensSplitByWhitespaceAreAParseError) {
  for (std::string_view body : {R"({"method":"notifications/resources/updated","params":{"uri":"a://b","n":1 2}})",
                                R"({"method":"notifications/resources/updated","params":{"uri":"a://b","ok":tr ue}})",
                                "    -  1"}) {
    auto r = decoder.decode(body, tenants);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.error().code, rpc_code::kParseError) << body << ": " << r.error().message;
  }
}

TEST_F(PublishDecoderFuzzFindings, ABoundPublisherCannotGrowTheTenantTable) {
  TenantRef acme(tenants, *tenants.acquire("acme"));
  std::size_t before = tenants.size();
  auto r = decoder.decode(R"({"tenant":"someone-else","method":"notifications/tools/list_changed"})", tenants, "acme");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, rpc_code::kForbidden);
  EXPECT_EQ(tenants.size(), before);
}

// Regression (docs/security.md "Tenants"): a publish interned the tenant of each element as soon as it validated,
// even when a later element rejected the body, and the table never shrank: 2,100 rejected
// bodies of five fresh tenants each filled a 10,000-tenant table for good. Publishing now
// only looks tenants up, so neither valid nor invalid bodies create entries.
TEST_F(PublishDecoderFuzzFindings, PublishesNeverCreateTenants) {
  std::mt19937 rng(9);
  for (int i = 0; i < 100000; ++i) {
    std::string name = "t" + std::to_string(rng());
    std::string body =
        i % 2 ? R"({"tenant":")" + name + R"(","method":"notifications/tools/list_changed"})"
              : R"([{"tenant":")" + name + R"(","method":"notifications/tools/list_changed"},{"method":"bad"}])";
    auto r = decoder.decode(body, tenants);
    ASSERT_EQ(r.ok(), i % 2 == 1) << body;
    if (r.ok()) {
      EXPECT_EQ(r.value().accepted, 1u);
      EXPECT_TRUE(r.value().payloads.empty()) << "nobody listens to " << name << ": nothing to encode";
    }
  }
  EXPECT_EQ(tenants.size(), 1u) << "only the default tenant";
}

TEST_F(PublishDecoderFuzzFindings, ATenantWithClientsGetsItsPayloadsOthersAreCountedOnly) {
  TenantRef acme(tenants, *tenants.acquire("acme"));
  auto r = decoder.decode(R"([{"tenant":"acme","method":"notifications/tools/list_changed"},
                              {"tenant":"nobody","method":"notifications/tools/list_changed"},
                              {"method":"notifications/prompts/list_changed"}])",
                          tenants);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().accepted, 3u);
  ASSERT_EQ(r.value().payloads.size(), 2u);
  EXPECT_EQ(r.value().payloads[0]->tenant(), acme.id());
  EXPECT_EQ(r.value().payloads[1]->tenant(), kDefaultTenant);
}

// For a backplane every notification leaves as a publish-API object, local audience or not,
// and decoding that object again gives the same payload.
TEST(PublishDecoderBackplane, EveryNotificationBecomesAPublishObjectThatRoundTrips) {
  TenantTable tenants(8);
  PublishDecoder d;
  const std::string body =
      R"([{"method":"notifications/resources/updated","params":{"uri":"file:///a b","_meta":{"rev":7},"x":[1,2]}},)"
      R"({"tenant":"elsewhere","method":"notifications/tools/list_changed"}])";
  auto r = d.decode(body, tenants, std::nullopt, /*for_backplane=*/true);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().accepted, 2u);
  EXPECT_EQ(r.value().payloads.size(), 1u) << "the tenant with no clients here has no local payload";
  ASSERT_EQ(r.value().notifications.size(), 2u);
  const Notification& first = r.value().notifications[0];
  EXPECT_EQ(first.tenant, "default");
  EXPECT_EQ(first.kind, Kind::ResourceUpdated);
  EXPECT_EQ(first.uri, "file:///a b");
  EXPECT_EQ(
      first.message,
      R"({"tenant":"default","method":"notifications/resources/updated","params":{"_meta":{"rev":7},)"
      R"("uri":"file:///a b","x":[1,2]}})");
  EXPECT_EQ(first.local.get(), r.value().payloads[0].get()) << "the local payload travels with its notification";
  EXPECT_FALSE(r.value().notifications[1].local) << "no clients of that tenant here";
  EXPECT_EQ(r.value().notifications[1].tenant, "elsewhere");
  EXPECT_EQ(r.value().notifications[1].message,
            R"({"tenant":"elsewhere","method":"notifications/tools/list_changed","params":{}})");
  // Decoded again (as a receiving node does), the same bytes go to the same streams.
  auto again = d.decode(first.message, tenants);
  ASSERT_TRUE(again) << again.error().message;
  ASSERT_EQ(again.value().payloads.size(), 1u);
  EXPECT_EQ(again.value().payloads[0]->plain(Framing::Line), r.value().payloads[0]->plain(Framing::Line));
  EXPECT_EQ(again.value().payloads[0]->head(Framing::Sse), r.value().payloads[0]->head(Framing::Sse));
  // Without the flag nothing is built for a backplane: each notification stays here.
  auto here = d.decode(body, tenants);
  ASSERT_EQ(here.value().notifications.size(), 2u);
  for (const Notification& n : here.value().notifications) {
    EXPECT_FALSE(n.forwarded());
    EXPECT_TRUE(n.tenant.empty() && n.uri.empty());
  }
  EXPECT_EQ(here.value().notifications[0].local.get(), here.value().payloads[0].get());
  EXPECT_FALSE(here.value().notifications[1].local) << "no clients of that tenant here";
}

}  // namespace
}  // namespace mcpfan

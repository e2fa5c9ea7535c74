// SEP-2243's routing headers against the body (http/mcp_name_check.h), as pure functions: which
// member Mcp-Name mirrors per method, the header's decoding (OWS, the Base64 sentinel, bytes a
// header may not hold), and every way the headers can fail to vouch for the body. The wire, on
// mcpfan's own routes and through --upstream: tests/integration/routing_headers_test.cc.
#include "http/mcp_name_check.h"

#include <gtest/gtest.h>

#include <string>

namespace mcpfan::detail {
namespace {

RpcRequest Decode(std::string_view body) {
  RpcDecoder d;
  RpcRequest r = d.decode(body);
  EXPECT_FALSE(r.error) << body << ": " << r.error->message;
  return r;
}

// The verdict for `body` under the given header values (empty = absent).
std::optional<std::string> Check(std::string_view body, std::string_view method, std::string_view name,
                                 bool required = true) {
  return routing_header_mismatch(method, name, Decode(body), body, required);
}

constexpr std::string_view kCall = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather"}})";

TEST(McpNameCheck, EachMethodMirrorsItsMember) {
  EXPECT_EQ(mcp_name_source("tools/call"), "name");
  EXPECT_EQ(mcp_name_source("prompts/get"), "name");
  EXPECT_EQ(mcp_name_source("resources/read"), "uri");
  EXPECT_EQ(mcp_name_source("tasks/get"), "taskId");
  EXPECT_EQ(mcp_name_source("tasks/update"), "taskId");
  EXPECT_EQ(mcp_name_source("tasks/cancel"), "taskId");
  for (std::string_view m : {"tools/list", "subscriptions/listen", "server/discover", "TOOLS/CALL", "tasks/list", ""}) {
    EXPECT_EQ(mcp_name_source(m), "") << m;
  }
}

TEST(McpNameCheck, DecodingTrimsOwsAndOpensTheBase64Sentinel) {
  EXPECT_EQ(decode_mcp_name(" \tget_weather \t"), "get_weather");
  EXPECT_EQ(decode_mcp_name("file:///path/to/file%20name.txt"), "file:///path/to/file%20name.txt");
  EXPECT_EQ(decode_mcp_name("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, \xe4\xb8\x96\xe7\x95\x8c");
  EXPECT_EQ(decode_mcp_name("=?base64?IHBhZGRlZCA=?="), " padded ");
  EXPECT_EQ(decode_mcp_name("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="), "=?base64?literal?=");
  EXPECT_EQ(decode_mcp_name("=?base64?" "?="), "");
  // The markers are case-sensitive: anything else is a plain value.
  EXPECT_EQ(decode_mcp_name("=?BASE64?Zm9v?="), "=?BASE64?Zm9v?=");
}

TEST(McpNameCheck, DecodingRefusesBadBytesAndBadBase64) {
  EXPECT_FALSE(decode_mcp_name("caf\xc3\xa9"));       // obs-text: the client must encode it
  EXPECT_FALSE(decode_mcp_name("a\x01z"));            // a control byte
  EXPECT_FALSE(decode_mcp_name("=?base64?Zm9v!?="));  // not the alphabet
  EXPECT_FALSE(decode_mcp_name("=?base64?Zm9?="));    // not whole quanta
  EXPECT_FALSE(decode_mcp_name("=?base64?Zm9=?="));   // non-zero unused bits
  EXPECT_FALSE(decode_mcp_name("=?base64?Z===?="));   // three pads
  EXPECT_FALSE(decode_mcp_name("=?base64?Zg=a?="));   // a pad inside
  EXPECT_EQ(decode_mcp_name("=?base64?Zm8=?="), "fo");
}

TEST(McpNameCheck, MatchingHeadersPass) {
  EXPECT_EQ(Check(kCall, "tools/call", "get_weather"), std::nullopt);
  EXPECT_EQ(Check(kCall, " tools/call\t", "  get_weather  "), std::nullopt);
  EXPECT_EQ(Check(kCall, "tools/call", "=?base64?Z2V0X3dlYXRoZXI=?="), std::nullopt);
  EXPECT_EQ(Check(R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"https://example.com/r?id=1"}})",
                  "resources/read", "https://example.com/r?id=1"),
            std::nullopt);
  EXPECT_EQ(
      Check(R"({"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"t-9"}})", "tasks/cancel", "t-9"),
      std::nullopt);
  // A method without an Mcp-Name source ignores the header.
  EXPECT_EQ(Check(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})", "tools/list", "anything"), std::nullopt);
}

TEST(McpNameCheck, AMismatchNamesTheHeaderItsValueAndTheBodyField) {
  auto m = Check(kCall, "tools/call", "wrong_tool_name");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "Mcp-Name header value 'wrong_tool_name' does not match params.name 'get_weather'");
  auto uri = Check(R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}})",
                   "resources/read", "file:///b");
  ASSERT_TRUE(uri);
  EXPECT_EQ(*uri, "Mcp-Name header value 'file:///b' does not match params.uri 'file:///a'");
  auto task = Check(R"({"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1"}})", "tasks/get", "t-2");
  ASSERT_TRUE(task);
  EXPECT_EQ(*task, "Mcp-Name header value 't-2' does not match params.taskId 't-1'");
  // Values are case-sensitive; a decoded sentinel is compared, not its text.
  EXPECT_TRUE(Check(kCall, "tools/call", "GET_WEATHER"));
  EXPECT_TRUE(Check(kCall, "tools/call", "=?base64?b3RoZXI=?="));  // "other"
}

TEST(McpNameCheck, AMissingNameIsRefusedWhereTheRevisionRequiresIt) {
  auto m = Check(kCall, "tools/call", "");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "missing Mcp-Name header (must mirror params.name 'get_weather')");
  EXPECT_EQ(Check(kCall, "tools/call", "", /*required=*/false), std::nullopt);  // DRAFT-2026-v1
  EXPECT_TRUE(Check(kCall, "tools/call", "other", /*required=*/false));         // but never wrong
  // No member to mirror: nothing is required (the server answers the bad params).
  EXPECT_EQ(Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}})", "tools/call", ""), std::nullopt);
  // A header naming what the body does not have is a mismatch.
  auto none = Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}})", "tools/call", "seven");
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, "Mcp-Name header value 'seven' has no string params.name to match in the body");
}

TEST(McpNameCheck, MethodHeaderRulesAreKept) {
  auto missing = Check(kCall, "", "get_weather");
  ASSERT_TRUE(missing);
  EXPECT_EQ(*missing, "missing Mcp-Method header (must be tools/call)");
  EXPECT_EQ(Check(kCall, "", "get_weather", /*required=*/false), std::nullopt);
  auto wrong = Check(kCall, "TOOLS/CALL", "get_weather");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(*wrong, "Mcp-Method header TOOLS/CALL does not match method tools/call");
  // A notification may go without one, but not with a wrong one.
  std::string_view note = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
  EXPECT_EQ(Check(note, "", ""), std::nullopt);
  EXPECT_EQ(Check(note, "notifications/initialized", ""), std::nullopt);
  EXPECT_TRUE(Check(note, "notifications/cancelled", ""));
}

TEST(McpNameCheck, ABadHeaderValueIsRefusedWithoutRepeatingItsBytes) {
  auto bytes = Check(kCall, "tools/call", "get_w\xc3\xa9");
  ASSERT_TRUE(bytes);
  EXPECT_EQ(*bytes, "Mcp-Name header value holds a byte outside visible ASCII, SP and HTAB");
  auto b64 = Check(kCall, "tools/call", "=?base64?!!?=");
  ASSERT_TRUE(b64);
  EXPECT_EQ(*b64, "Mcp-Name header value '=?base64?!!?=' is not a valid =?base64?...?= value");
}

// A parser that keeps the last of a repeated member would execute what the header never named.
TEST(McpNameCheck, RepeatedMembersCannotBeVouchedFor) {
  EXPECT_TRUE(Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","name":"evil"}})",
                    "tools/call", "safe"));
  EXPECT_TRUE(Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe"},)"
                    R"("params":{"name":"evil"}})",
                    "tools/call", "safe"));
  // Escaped member names are the same names.
  EXPECT_TRUE(Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe","n\u0061me":"evil"}})",
                    "tools/call", "safe"));
  auto twice = Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"x"}})",
                     "tools/list", "");
  ASSERT_TRUE(twice);
  EXPECT_EQ(*twice, "the body has more than one \"method\" member: Mcp-Method cannot vouch for it");
  EXPECT_TRUE(Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/list","m\u0065thod":"tools/call"})", "tools/list", ""));
  // "method" inside a value is no member.
  EXPECT_EQ(
      Check(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":"\"method\""}}})",
            "tools/call", "t"),
      std::nullopt);
}

TEST(McpNameCheck, ALongBodyValueIsCutInTheMessage) {
  std::string name(300, 'n');
  name[199] = '\xc3';  // a two-byte character across the cut
  name[200] = '\xa9';
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + name + R"("}})";
  auto m = Check(body, "tools/call", "short");
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, "Mcp-Name header value 'short' does not match params.name '" + std::string(199, 'n') + "...'");
}

}  // namespace
}  // namespace mcpfan::detail

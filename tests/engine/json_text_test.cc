// Tests for engine/src/json_text.cc: JSON string literals.
#include "mcpfan/json_text.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>

namespace mcpfan {
namespace {

std::string lit(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string parse_string(const std::string& json) {
  simdjson::dom::parser parser;
  simdjson::dom::element el;
  std::string_view s;
  if (auto e = parser.parse(json).get(el)) {
    ADD_FAILURE() << simdjson::error_message(e) << ": " << json;
    return "<not JSON>";
  }
  EXPECT_EQ(el.get_string().get(s), simdjson::SUCCESS) << json;
  return std::string(s);
}

TEST(JsonText, EscapesQuotesBackslashesAndControlBytes) {
  EXPECT_EQ(lit(""), R"("")");
  EXPECT_EQ(lit("plain/text:1"), R"("plain/text:1")");
  EXPECT_EQ(lit("a\"b"), R"("a\"b")");
  EXPECT_EQ(lit("a\\b"), R"("a\\b")");
  EXPECT_EQ(lit("a\nb\rc\td"), R"("a\nb\rc\td")");
  EXPECT_EQ(lit(std::string_view("\x01\x1f\0", 3)), R"("\u0001\u001f\u0000")");
}

TEST(JsonText, AppendsWithoutClearing) {
  std::string out = "prefix:";
  append_json_string(out, "x");
  EXPECT_EQ(out, R"(prefix:"x")");
}

TEST(JsonText, EveryAsciiByteRoundTripsAndNoRawControlByteRemains) {
  std::string all;
  for (int c = 0; c < 0x80; ++c) {
    std::string one(1, static_cast<char>(c));
    all += one;
    std::string json = lit(one);
    for (char ch : json) EXPECT_GE(static_cast<unsigned char>(ch), 0x20u) << "byte " << c << " left raw";
    EXPECT_EQ(parse_string(json), one) << "byte " << c;
  }
  EXPECT_EQ(parse_string(lit(all)), all);
}

TEST(JsonText, Utf8PassesThrough) {
  const std::string s = "caf\xc3\xa9 \xe2\x98\x95 \xf0\x9f\x98\x80";
  EXPECT_EQ(lit(s), "\"" + s + "\"");
  EXPECT_EQ(parse_string(lit(s)), s);
}

}  // namespace
}  // namespace mcpfan

namespace mcpfan {
namespace {

// Found by fuzz_http: a Host header or path with invalid UTF-8, echoed in an error body,
// made the body invalid JSON. Invalid sequences become U+FFFD; valid ones pass through.
TEST(JsonTextUtf8, InvalidSequencesBecomeReplacementCharacters) {
  const std::string fffd = "\xEF\xBF\xBD";
  auto lit = [](std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
  };
  EXPECT_EQ(lit("12\xad""7"), "\"12" + fffd + "7\"");                  // lone continuation byte
  EXPECT_EQ(lit("/\xff\xfe"), "\"/" + fffd + fffd + "\"");              // bytes never valid
  EXPECT_EQ(lit("\xc0\xaf"), "\"" + fffd + fffd + "\"");                // overlong '/'
  EXPECT_EQ(lit("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"");     // a surrogate
  EXPECT_EQ(lit("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");  // above U+10FFFF
  EXPECT_EQ(lit("\xe2\x98"), "\"" + fffd + fffd + "\"");                // truncated
  EXPECT_EQ(lit("ok \xe2\x98\x95"), "\"ok \xe2\x98\x95\"");
  simdjson::dom::parser parser;
  for (std::string_view s : {"12\xad""7", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x98"}) {
    EXPECT_EQ(parser.parse(lit(s)).error(), simdjson::SUCCESS) << lit(s);
  }
}

}  // namespace
}  // namespace mcpfan

// HTTP/1.1 rendering of Response values (transports/src/http1/response_writer.h).
#include <gtest/gtest.h>

#include "http1/response_writer.h"

namespace mcpfan::detail {
namespace {

TEST(ResponseWriter, AKeptAliveAnswerHasItsLengthFieldsInOrderAndBody) {
  Response r{429, "application/json", R"({"error":"x"})", {{"Retry-After", "3"}, {"X-A", "b"}}};
  EXPECT_EQ(render_response(r, /*keep_alive=*/true, /*head_request=*/false),
            "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: 13\r\n"
            "Retry-After: 3\r\nX-A: b\r\n\r\n{\"error\":\"x\"}");
}

TEST(ResponseWriter, AnAnswerThatClosesSaysSoAndOneWithoutTypeHasNone) {
  Response r{202, "", "", {}};
  EXPECT_EQ(render_response(r, false, false),
            "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
}

TEST(ResponseWriter, AHeadAnswerHasTheGetsHeadersAndNoContent) {
  Response r{200, "text/plain", "ready\n", {}};
  EXPECT_EQ(render_response(r, true, /*head_request=*/true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 6\r\n\r\n");
}

TEST(ResponseWriter, AStatusWithoutAKnownPhraseSaysUnknown) {
  EXPECT_STREQ(http_reason_phrase(599), "Unknown");
  EXPECT_STREQ(http_reason_phrase(431), "Request Header Fields Too Large");
}

TEST(ResponseWriter, AProxiedHeadWithALengthKeepsItAndOneWithoutIsChunked) {
  std::vector<Field> fields{{"Content-Type", "application/json"}, {"Mcp-Session-Id", "s1"}};
  EXPECT_EQ(render_answer_head(200, fields, std::size_t{42}, /*chunked=*/false, /*keep_alive=*/true),
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: 42\r\n\r\n");
  EXPECT_EQ(render_answer_head(502, {}, std::nullopt, /*chunked=*/true, /*keep_alive=*/false),
            "HTTP/1.1 502 Bad Gateway\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
}

TEST(ResponseWriter, AChunkIsItsHexSizeTheBytesAndCrlf) {
  EXPECT_EQ(render_chunk("hello"), "5\r\nhello\r\n");
  EXPECT_EQ(render_chunk(std::string(26, 'x')), "1a\r\n" + std::string(26, 'x') + "\r\n");
}

}  // namespace
}  // namespace mcpfan::detail

#pragma once
// The response half of HTTP/1.1: a Response value (http/response.h) in bytes, for a
// connection to write. Pure functions; no thread affinity.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/response.h"

namespace mcpfan::detail {

/** The reason phrase of an HTTP status ("Unknown" for one mcpfan does not write). */
[[nodiscard]] const char* http_reason_phrase(int status);

/**
 * The status line, Content-Type, Content-Length, `Connection: close` unless `keep_alive`,
 * the response's own fields and the blank line; then the body, unless `head_request` (a
 * HEAD's answer has the headers of a GET and no content).
 */
[[nodiscard]] std::string render_response(const Response& r, bool keep_alive, bool head_request);

/**
 * The head of an answer whose body follows separately (a proxied one): the status line, the
 * fields, Content-Length when `length` is known, `Transfer-Encoding: chunked` when `chunked`,
 * `Connection: close` unless `keep_alive`, and the blank line.
 */
[[nodiscard]] std::string render_answer_head(int status, const std::vector<Field>& fields,
                                             std::optional<std::size_t> length, bool chunked, bool keep_alive);

using ChunkSizeBuffer = std::array<char, 24>;
/** A chunk's size line ("1a\r\n"), written into `buf`: for a chunk whose bytes are written separately. */
[[nodiscard]] std::string_view chunk_size_line(std::size_t size, ChunkSizeBuffer& buf);

/** One chunk of a chunked body: its size in hex, the bytes, CRLF. */
[[nodiscard]] std::string render_chunk(std::string_view bytes);

}  // namespace mcpfan::detail

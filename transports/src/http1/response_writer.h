#pragma once
// The response half of HTTP/1.1: a Response value (http/response.h) in bytes, for a
// connection to write. Pure functions; no thread affinity.
#include <string>

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

}  // namespace mcpfan::detail

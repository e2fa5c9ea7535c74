#pragma once
// An HTTP answer as a value, whatever the wire it goes out on: what a route hands to its
// Exchange (http/exchange.h). The HTTP/1.1 connection renders it (http1/response_writer.h);
// a later HTTP/2 stream will render the same as HEADERS and DATA.
//
// Thread affinity: a plain value.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/request.h"

namespace mcpfan::detail {

struct Response {
  int status = 200;
  // Empty: no Content-Type (a 202, or a 200 without content). A literal ("application/json"):
  // a string would allocate for every answer (16 bytes is past the small-string buffer).
  std::string_view content_type;
  std::string body;
  std::vector<Field> headers;  // more fields, in order: Allow, Retry-After, WWW-Authenticate, Cache-Control, ...
};

}  // namespace mcpfan::detail

#pragma once
// An HTTP answer as a value, whatever the wire it goes out on: what a route hands to its
// Exchange (http/exchange.h). The HTTP/1.1 connection renders it (http1/response_writer.h);
// a later HTTP/2 stream will render the same as HEADERS and DATA.
//
// Thread affinity: a plain value.
#include <string>
#include <utility>
#include <vector>

#include "http/request.h"

namespace mcpfan::detail {

struct Response {
  int status = 200;
  std::string content_type;    // empty: no Content-Type (a 202, or a 200 without content)
  std::string body;
  std::vector<Field> headers;  // more fields, in order: Allow, Retry-After, WWW-Authenticate, Cache-Control, ...
};

}  // namespace mcpfan::detail

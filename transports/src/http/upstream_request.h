#pragma once
// The request mcpfan's front proxy sends upstream for a client's request, built from the
// values the RequestParser accepted (http1/request_parser.h: HttpRequest values), never from the bytes received:
//  - the request line: the method, the upstream's path with the client's query string;
//  - Host: the upstream's authority;
//  - every end-to-end field, in order, names as sent: not the hop-by-hop ones (RFC 9110
//    §7.6.1: Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Upgrade, and every field
//    the client's Connection names), not what was meant for mcpfan (Expect, Proxy-*), and
//    never the framing (Content-Length, Transfer-Encoding): mcpfan writes its own
//    Content-Length for the body it read whole;
//  - `extra` fields, then the body.
// Pure functions.
#include <string>
#include <string_view>
#include <vector>

#include "http/request.h"
#include "proxy/upstream.h"

namespace mcpfan::detail {

/** Whether the client's field `name` is passed on, given the request's Connection field value. */
[[nodiscard]] bool forwardable_field(std::string_view name, std::string_view connection);

[[nodiscard]] proxy::ForwardedRequest upstream_request(const HttpRequest& req, const proxy::UpstreamTarget& target,
                                                       const std::vector<Field>& extra = {});

}  // namespace mcpfan::detail

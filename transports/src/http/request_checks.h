#pragma once
// What an HTTP request must look like before any route reads it: the Host and Origin
// allow-lists (DNS-rebinding protection), and the media types /mcp accepts. Pure functions.
#include <string_view>

#include "mcpfan/transport/server.h"

namespace mcpfan::detail {

/** Content-Type is application/json (parameters such as charset allowed). */
[[nodiscard]] bool is_json_content_type(std::string_view content_type);
/** A missing Accept means "anything"; otherwise one of the types /mcp answers with must fit. */
[[nodiscard]] bool accepts_mcp(std::string_view accept);
/** No Origin (not a browser), or one on --allow-origin (by default: this machine's). */
[[nodiscard]] bool origin_allowed(const ServerConfig& cfg, std::string_view origin);
/**
 * The Host header names this server (--allow-host; by default loopback names and the
 * listener's own address on a loopback listener). `listener_host`: the address the request
 * came in on (config.listen.host, or config.listen.publish_host on the operator listener).
 */
[[nodiscard]] bool host_allowed(const ServerConfig& cfg, std::string_view host_header, std::string_view listener_host);

}  // namespace mcpfan::detail

#pragma once
// An HTTP request as a value, whatever the wire it came on: what the routes (http/router.h)
// read. The HTTP/1.1 parser (http1/request_parser.h) produces it, validated; a later HTTP/2
// layer produces the same. `method` is http_parser's enum (HTTP_GET, HTTP_POST, ...), the
// one list of method names both layers share.
//
// Thread affinity: a plain value, used on one thread at a time.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mcpfan::detail {

struct Field {
  std::string name;   // as sent (a token)
  std::string value;  // without leading and trailing SP/HTAB
};

struct AuthWait;  // mcp/client.h: what a request waited for (Exchange::suspend)

struct HttpRequest {
  unsigned method = 0;  // enum http_method
  std::string url;
  // The fields mcpfan reads itself. A repeated field is combined as a list (", ").
  std::string content_type, accept, origin, host, protocol_version, mcp_method, mcp_name, expect, session_id,
      authorization, connection;
  std::string last_event_id;  // a resuming 2025 session GET
  std::vector<Field> fields;  // with keep_fields (--upstream): every field of the head, in order
  std::string body;
  std::size_t header_bytes = 0;
  std::shared_ptr<const AuthWait> waited{};  // routed again after Exchange::suspend: what it waited for
  void clear();
  /** The member a field of this name is kept in (case-insensitive), or null: one of the fields mcpfan reads itself. */
  [[nodiscard]] std::string* named_field(std::string_view name) noexcept;
};

}  // namespace mcpfan::detail

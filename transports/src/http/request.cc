#include "http/request.h"

#include "http/field_syntax.h"

namespace mcpfan::detail {

void HttpRequest::clear() {
  method = 0;
  url.clear();
  content_type.clear();
  accept.clear();
  origin.clear();
  host.clear();
  protocol_version.clear();
  mcp_method.clear();
  mcp_name.clear();
  expect.clear();
  session_id.clear();
  authorization.clear();
  waited.reset();
  connection.clear();
  last_event_id.clear();
  fields.clear();
  body.clear();
  header_bytes = 0;
}

std::string* HttpRequest::named_field(std::string_view name) noexcept {
  if (ieq(name, "content-type")) return &content_type;
  if (ieq(name, "accept")) return &accept;
  if (ieq(name, "origin")) return &origin;
  if (ieq(name, "host")) return &host;
  if (ieq(name, "mcp-protocol-version")) return &protocol_version;
  if (ieq(name, "mcp-method")) return &mcp_method;
  if (ieq(name, "mcp-name")) return &mcp_name;
  if (ieq(name, "expect")) return &expect;
  if (ieq(name, "mcp-session-id")) return &session_id;
  if (ieq(name, "last-event-id")) return &last_event_id;
  if (ieq(name, "authorization")) return &authorization;
  if (ieq(name, "connection")) return &connection;
  return nullptr;
}

}  // namespace mcpfan::detail

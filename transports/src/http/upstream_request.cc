#include "http/upstream_request.h"

#include <http_parser.h>

#include "http/field_syntax.h"

namespace mcpfan::detail {

namespace {

bool hop_by_hop(std::string_view name) {
  for (std::string_view hop :
       {"connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "transfer-encoding",
        "content-length", "host", "expect", "proxy-authorization", "proxy-authenticate"}) {
    if (ieq(name, hop)) return true;
  }
  return false;
}

// Whether the Connection field's list names `name` ("close, X-Private" names "x-private").
bool nominated(std::string_view name, std::string_view connection) {
  while (!connection.empty()) {
    std::size_t comma = connection.find(',');
    std::string_view item = connection.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (ieq(item, name)) return true;
    if (comma == std::string_view::npos) break;
    connection.remove_prefix(comma + 1);
  }
  return false;
}

bool idempotent(unsigned method) {
  switch (static_cast<http_method>(method)) {
    case HTTP_GET:
    case HTTP_HEAD:
    case HTTP_OPTIONS:
    case HTTP_PUT:
    case HTTP_DELETE:
    case HTTP_TRACE: return true;
    default: return false;
  }
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += ": ";
  out += value;
  out += "\r\n";
}

}  // namespace

bool forwardable_field(std::string_view name, std::string_view connection) {
  return !hop_by_hop(name) && !nominated(name, connection);
}

proxy::ForwardedRequest upstream_request(const HttpRequest& req, const proxy::UpstreamTarget& target,
                                         const std::vector<Field>& extra) {
  proxy::ForwardedRequest out;
  std::string& b = out.bytes;
  b.reserve(256 + req.url.size() + req.body.size() + req.fields.size() * 48);
  b += http_method_str(static_cast<http_method>(req.method));
  b += ' ';
  b += target.path;
  if (std::size_t q = req.url.find('?'); q != std::string::npos) b.append(req.url, q);
  b += " HTTP/1.1\r\n";
  append_field(b, "Host", target.authority);
  for (const Field& f : req.fields) {
    if (forwardable_field(f.name, req.connection)) append_field(b, f.name, f.value);
  }
  for (const Field& f : extra) append_field(b, f.name, f.value);
  if (!req.body.empty() || req.method == HTTP_POST || req.method == HTTP_PUT || req.method == HTTP_PATCH) {
    append_field(b, "Content-Length", std::to_string(req.body.size()));
  }
  b += "\r\n";
  b += req.body;
  out.head = req.method == HTTP_HEAD;
  out.idempotent = idempotent(req.method);
  return out;
}

}  // namespace mcpfan::detail

#include "http1/response_writer.h"

#include <cstdio>

namespace mcpfan::detail {

const char* http_reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Unknown";
  }
}

std::string render_response(const Response& r, bool keep_alive, bool head_request) {
  std::size_t fields = 0;
  for (const Field& f : r.headers) fields += f.name.size() + f.value.size() + 4;
  std::string out;
  out.reserve(160 + r.body.size() + fields);
  char line[64];
  std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", r.status, http_reason_phrase(r.status));
  out += line;
  if (!r.content_type.empty()) {
    out += "Content-Type: ";
    out += r.content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(r.body.size());
  out += keep_alive ? "\r\n" : "\r\nConnection: close\r\n";
  for (const Field& f : r.headers) {
    out += f.name;
    out += ": ";
    out += f.value;
    out += "\r\n";
  }
  out += "\r\n";
  if (!head_request) out += r.body;
  return out;
}

std::string render_answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                               bool chunked, bool keep_alive) {
  std::string out;
  char line[64];
  std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", status, http_reason_phrase(status));
  out += line;
  for (const Field& f : fields) {
    out += f.name;
    out += ": ";
    out += f.value;
    out += "\r\n";
  }
  if (length) {
    out += "Content-Length: ";
    out += std::to_string(*length);
    out += "\r\n";
  }
  if (chunked) out += "Transfer-Encoding: chunked\r\n";
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

std::string render_chunk(std::string_view bytes) {
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  std::string chunk;
  chunk.reserve(static_cast<std::size_t>(n) + bytes.size() + 2);
  chunk.append(size, static_cast<std::size_t>(n));
  chunk += bytes;
  chunk += "\r\n";
  return chunk;
}

}  // namespace mcpfan::detail

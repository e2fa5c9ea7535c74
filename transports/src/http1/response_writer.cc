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

namespace {

void append_status_line(std::string& out, int status) {
  char line[64];
  int n = std::snprintf(line, sizeof line, "HTTP/1.1 %d %s\r\n", status, http_reason_phrase(status));
  out.append(line, static_cast<std::size_t>(n));
}

void append_fields(std::string& out, const std::vector<Field>& fields) {
  for (const Field& f : fields) {
    out += f.name;
    out += ": ";
    out += f.value;
    out += "\r\n";
  }
}

}  // namespace

std::string render_response(const Response& r, bool keep_alive, bool head_request) {
  std::size_t fields = 0;
  for (const Field& f : r.headers) fields += f.name.size() + f.value.size() + 4;
  std::string out;
  out.reserve(160 + r.body.size() + fields);
  append_status_line(out, r.status);
  if (!r.content_type.empty()) {
    out += "Content-Type: ";
    out += r.content_type;
    out += "\r\n";
  }
  out += "Content-Length: ";
  out += std::to_string(r.body.size());
  out += keep_alive ? "\r\n" : "\r\nConnection: close\r\n";
  append_fields(out, r.headers);
  out += "\r\n";
  if (!head_request) out += r.body;
  return out;
}

std::string render_answer_head(int status, const std::vector<Field>& fields, std::optional<std::size_t> length,
                               bool chunked, bool keep_alive) {
  std::string out;
  append_status_line(out, status);
  append_fields(out, fields);
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

std::string_view chunk_size_line(std::size_t size, ChunkSizeBuffer& buf) {
  int n = std::snprintf(buf.data(), buf.size(), "%zx\r\n", size);
  return {buf.data(), static_cast<std::size_t>(n)};
}

std::string render_chunk(std::string_view bytes) {
  ChunkSizeBuffer buf;
  std::string_view size = chunk_size_line(bytes.size(), buf);
  std::string chunk;
  chunk.reserve(size.size() + bytes.size() + 2);
  chunk += size;
  chunk += bytes;
  chunk += "\r\n";
  return chunk;
}

}  // namespace mcpfan::detail

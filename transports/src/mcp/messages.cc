#include "mcp/messages.h"

#include "mcpfan/json_text.h"
#include "mcpfan/payload.h"

namespace mcpfan::detail {

std::string json_error_body(std::string_view message) {
  std::string b = R"({"error":)";
  append_json_string(b, message);
  b += '}';
  return b;
}

std::string sse_event(std::string_view json) {
  std::string e;
  e.reserve(json.size() + Payload::kSsePrefix.size() + 2);
  e += Payload::kSsePrefix;
  e += json;
  e += "\n\n";
  return e;
}

}  // namespace mcpfan::detail

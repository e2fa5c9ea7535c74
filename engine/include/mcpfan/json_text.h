#pragma once
/** Small helpers for writing JSON text. Pure functions; thread-safe. */
#include <string>
#include <string_view>

namespace mcpfan {

/** Appends `s` as a quoted JSON string, escaping quotes, backslashes and control bytes. */
void append_json_string(std::string& out, std::string_view s);

}  // namespace mcpfan

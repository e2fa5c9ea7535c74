#include "proxy/capabilities.h"

#include <simdjson.h>

#include "mcpfan/json_text.h"

namespace mcpfan::detail::proxy {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

void append_value(std::string& out, element v) { out += simdjson::minify(v); }

void append_key(std::string& out, bool& first, std::string_view key) {
  if (!first) out += ',';
  first = false;
  append_json_string(out, key);
  out += ':';
}

// `obj` with `flags` set to true (kept where they are when present, appended when not).
void append_with_flags(std::string& out, object obj, std::initializer_list<std::string_view> flags) {
  out += '{';
  bool first = true;
  for (auto [k, v] : obj) {
    bool flag = false;
    for (std::string_view f : flags) flag = flag || k == f;
    append_key(out, first, k);
    if (flag) out += "true";
    else append_value(out, v);
  }
  for (std::string_view f : flags) {
    element ignored;
    if (obj[f].get(ignored) == simdjson::SUCCESS) continue;
    append_key(out, first, f);
    out += "true";
  }
  out += '}';
}

constexpr std::string_view kTasksExtension = "io.modelcontextprotocol/tasks";

// `extensions` with the Tasks extension added when the upstream has not declared it.
void append_extensions(std::string& out, object ext) {
  out += '{';
  bool first = true;
  bool tasks = false;
  for (auto [k, v] : ext) {
    tasks = tasks || k == kTasksExtension;
    append_key(out, first, k);
    append_value(out, v);
  }
  if (!tasks) {
    append_key(out, first, kTasksExtension);
    out += "{}";
  }
  out += '}';
}

void append_capabilities(std::string& out, object caps, bool tasks) {
  out += '{';
  bool first = true;
  bool resources = false;
  bool extensions = false;
  for (auto [k, v] : caps) {
    append_key(out, first, k);
    object o;
    bool is_object = v.get(o) == simdjson::SUCCESS;
    if (tasks && k == "extensions" && is_object) {
      extensions = true;
      append_extensions(out, o);
    } else if (k == "resources" && is_object) {
      resources = true;
      append_with_flags(out, o, {"subscribe", "listChanged"});
    } else if ((k == "tools" || k == "prompts") && is_object) {
      append_with_flags(out, o, {"listChanged"});
    } else {
      append_value(out, v);
    }
  }
  if (!resources) {
    append_key(out, first, "resources");
    out += R"({"subscribe":true,"listChanged":true})";
  }
  if (tasks && !extensions) {  // an `extensions` that is not an object was kept as it was
    element ignored;
    if (caps["extensions"].get(ignored) != simdjson::SUCCESS) {
      append_key(out, first, "extensions");
      out += R"({"io.modelcontextprotocol/tasks":{}})";
    }
  }
  out += '}';
}

// The line ending that ends the SSE line starting at `pos` (\r\n, \n or \r), or npos.
std::size_t line_end(std::string_view s, std::size_t pos, std::size_t& next) {
  std::size_t e = s.find_first_of("\r\n", pos);
  if (e == std::string_view::npos) return e;
  next = e + 1;
  if (s[e] == '\r' && next < s.size() && s[next] == '\n') ++next;
  return e;
}

// An event's data as the client would have read it: one `data:` line per line.
void append_data_lines(std::string& out, std::string_view data) {
  std::size_t p = 0;
  while (true) {
    std::size_t nl = data.find('\n', p);
    out += "data: ";
    out += data.substr(p, nl == std::string_view::npos ? std::string_view::npos : nl - p);
    out += '\n';
    if (nl == std::string_view::npos) break;
    p = nl + 1;
  }
}

}  // namespace

std::optional<MergedAnswer> merge_message(std::string_view json, bool tasks) {
  simdjson::dom::parser parser;
  object msg;
  if (parser.parse(json.data(), json.size()).get(msg) != simdjson::SUCCESS) return std::nullopt;
  object result, caps;
  if (msg["result"].get(result) != simdjson::SUCCESS || result["capabilities"].get(caps) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  MergedAnswer a;
  a.merged = true;
  std::string_view version;
  if (result["protocolVersion"].get(version) == simdjson::SUCCESS) a.protocol_version = version;
  std::string& out = a.body;
  out.reserve(json.size() + 64);
  out += '{';
  bool first = true;
  for (auto [k, v] : msg) {
    append_key(out, first, k);
    if (k != "result") {
      append_value(out, v);
      continue;
    }
    out += '{';
    bool rfirst = true;
    for (auto [rk, rv] : result) {
      append_key(out, rfirst, rk);
      if (rk == "capabilities") append_capabilities(out, caps, tasks);
      else append_value(out, rv);
    }
    out += '}';
  }
  out += '}';
  return a;
}

MergedAnswer merge_capabilities(std::string_view body, bool event_stream, bool tasks) {
  if (!event_stream) {
    if (auto m = merge_message(body, tasks)) return std::move(*m);
    return MergedAnswer{std::string(body), {}, false};
  }
  // SSE: each event's data lines form one message; an event whose message merges is written
  // again with one data line, its other fields (id, event, retry, comments) as they were.
  MergedAnswer out;
  std::string event_lines, data;
  bool has_data = false;
  auto flush_event = [&] {
    std::optional<MergedAnswer> m;
    if (has_data) m = merge_message(data, tasks);
    if (m) {
      out.merged = true;
      if (out.protocol_version.empty()) out.protocol_version = m->protocol_version;
      out.body += event_lines;
      out.body += "data: ";
      out.body += m->body;
      out.body += '\n';
    } else {
      out.body += event_lines;
      if (has_data) append_data_lines(out.body, data);
    }
    out.body += '\n';
    event_lines.clear();
    data.clear();
    has_data = false;
  };
  std::size_t pos = 0;
  bool pending = false;  // lines seen since the last blank line
  while (pos < body.size()) {
    std::size_t next = body.size();
    std::size_t e = line_end(body, pos, next);
    std::string_view line = body.substr(pos, (e == std::string_view::npos ? body.size() : e) - pos);
    pos = next;
    if (line.empty()) {
      if (pending) flush_event();
      pending = false;
      continue;
    }
    pending = true;
    if (line.substr(0, 5) == "data:") {
      std::string_view v = line.substr(5);
      if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      if (has_data) data += '\n';
      data += v;
      has_data = true;
    } else {
      event_lines += line;
      event_lines += '\n';
    }
  }
  if (pending) {  // an unterminated last event: written back as it came
    out.body += event_lines;
    if (has_data) append_data_lines(out.body, data);
  }
  return out;
}

}  // namespace mcpfan::detail::proxy

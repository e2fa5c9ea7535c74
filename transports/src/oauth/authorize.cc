#include "oauth/authorize.h"

#include <simdjson.h>

#include <algorithm>

#include "mcpfan/json_text.h"
#include "mcpfan/kind.h"

namespace mcpfan::detail::oauth {

namespace {

void append_keys(std::string& out, const std::vector<std::string>& keys) {
  out += '[';
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, keys[i]);
  }
  out += ']';
}

}  // namespace

std::string authorize_question(std::string_view tenant, std::string_view subject, std::string_view client_id,
                               std::string_view method, const ListenSpec& requested) {
  std::string out = R"({"tenant":)";
  append_json_string(out, tenant);
  out += R"(,"subject":)";
  append_json_string(out, subject);
  out += R"(,"clientId":)";
  append_json_string(out, client_id);
  out += R"(,"method":)";
  append_json_string(out, method);
  out += R"(,"notifications":{)";
  bool first = true;
  for (const KindInfo& k : kKinds) {
    if (k.keyed()) {
      const std::vector<std::string>* keys = const_cast<ListenSpec&>(requested).keys(k.kind);
      if (!keys || keys->empty()) continue;
      if (!first) out += ',';
      first = false;
      append_json_string(out, k.listen_keys);
      out += ':';
      append_keys(out, *keys);
    } else if (requested.wants(k.kind)) {
      if (!first) out += ',';
      first = false;
      append_json_string(out, k.listen_flag);
      out += ":true";
    }
  }
  out += "}}";
  return out;
}

Result<AuthorizeAnswer> read_authorize_answer(std::string_view json) {
  auto bad = [](std::string why) { return Error{rpc_code::kInternalError, "the --authorize-url answer " + why}; };
  simdjson::dom::parser parser;
  simdjson::dom::object root, notes;
  if (parser.parse(json.data(), json.size()).get(root) != simdjson::SUCCESS) return bad("is not a JSON object");
  if (root["notifications"].get(notes) != simdjson::SUCCESS) return bad("has no \"notifications\" object");
  AuthorizeAnswer a;
  for (const KindInfo& k : kKinds) {
    if (k.keyed()) {
      simdjson::dom::element e;
      if (notes[k.listen_keys].get(e) != simdjson::SUCCESS) continue;
      simdjson::dom::array arr;
      if (e.get(arr) != simdjson::SUCCESS)
        return bad("has \"" + std::string(k.listen_keys) + "\" that is not an array");
      std::vector<std::string>* keys = a.allowed.keys(k.kind);
      for (simdjson::dom::element item : arr) {
        std::string_view v;
        if (item.get(v) != simdjson::SUCCESS) {
          return bad("has \"" + std::string(k.listen_keys) + "\" with an element that is not a string");
        }
        keys->emplace_back(v);
      }
    } else {
      bool on = false;
      simdjson::dom::element e;
      if (notes[k.listen_flag].get(e) != simdjson::SUCCESS) continue;
      if (e.get(on) != simdjson::SUCCESS)
        return bad("has \"" + std::string(k.listen_flag) + "\" that is not a boolean");
      if (on) a.allowed.flagged |= kind_bit(k.kind);
    }
  }
  simdjson::dom::element ttl;
  if (root["ttlMs"].get(ttl) == simdjson::SUCCESS && !ttl.is_null()) {
    std::uint64_t v = 0;
    std::int64_t s = 0;
    if (ttl.get(v) == simdjson::SUCCESS)
      a.ttl_ms = v;
    else if (ttl.get(s) == simdjson::SUCCESS && s < 0)
      return bad("has a negative \"ttlMs\"");
    else
      return bad("has a \"ttlMs\" that is not an integer");
  }
  return a;
}

bool narrow_to(ListenSpec& requested, const ListenSpec& allowed) {
  requested.flagged &= allowed.flagged;
  bool any = requested.flagged != 0;
  for (const KindInfo& k : kKinds) {
    std::vector<std::string>* want = requested.keys(k.kind);
    const std::vector<std::string>* may = const_cast<ListenSpec&>(allowed).keys(k.kind);
    if (!want) continue;
    std::erase_if(*want, [may](const std::string& key) {
      return !may || std::find(may->begin(), may->end(), key) == may->end();
    });
    any = any || !want->empty();
  }
  return any;
}

}  // namespace mcpfan::detail::oauth

#include "mcpfan/payload.h"

#include "mcpfan/json_text.h"

namespace mcpfan {

namespace {

using Members = std::vector<std::pair<std::string_view, std::string_view>>;

// Appends `"key":value` for each member, each preceded by a comma unless it is the very
// first thing written into the enclosing object (`first` tracks that across calls).
void append_members(std::string& out, const Members& members, bool& first) {
  for (auto& [k, v] : members) {
    if (!first) out.push_back(',');
    first = false;
    append_json_string(out, k);
    out.push_back(':');
    out += v;
  }
}

// The params members as the publisher sent them: its _meta (if any), then the rest.
void append_params_as_published(std::string& out, const NotificationParts& parts) {
  bool first = true;
  if (parts.has_meta || !parts.meta.empty()) {
    out += R"("_meta":{)";
    append_members(out, parts.meta, first);
    out.push_back('}');
    first = false;
  }
  append_members(out, parts.params, first);
}

void append_method_head(std::string& out, Kind kind) {
  out += Payload::kSsePrefix;
  out += R"({"jsonrpc":"2.0","method":")";
  out += method_name(kind);
  out += R"(","params":{)";
}

}  // namespace

PayloadRef encode_notification(const NotificationParts& parts) {
  auto* p = new Payload();
  PayloadRef ref(p);
  p->kind_ = parts.kind;
  p->tenant_ = parts.tenant;
  p->uri_.assign(parts.uri);

  std::size_t estimate = 160 + method_name(parts.kind).size();
  for (auto& [k, v] : parts.params) estimate += k.size() + v.size() + 8;
  for (auto& [k, v] : parts.meta) estimate += k.size() + v.size() + 8;

  // With the id: {"_meta":{"<subscriptionId key>":<ID>[,meta...]}[,params...]}
  std::string& b = p->bytes_;
  b.reserve(estimate);
  append_method_head(b, parts.kind);
  b += R"("_meta":{")";
  b += kSubscriptionIdKey;
  b += "\":";
  p->head_end_ = static_cast<std::uint32_t>(b.size());
  bool first = false;  // the id precedes the publisher's _meta members
  append_members(b, parts.meta, first);
  b.push_back('}');
  append_members(b, parts.params, first);
  b += "}}\n\n";

  // Without: params as published.
  std::string& q = p->plain_;
  q.reserve(b.size());
  append_method_head(q, parts.kind);
  append_params_as_published(q, parts);
  q += "}}\n\n";
  return ref;
}

std::string encode_publish_message(const NotificationParts& parts, std::string_view tenant_name) {
  std::string m;
  m.reserve(64 + tenant_name.size() + parts.uri.size());
  m += R"({"tenant":)";
  append_json_string(m, tenant_name);
  m += R"(,"method":")";
  m += method_name(parts.kind);
  m += R"(","params":{)";
  append_params_as_published(m, parts);
  m += "}}";
  return m;
}

}  // namespace mcpfan

#include "mcpfan/payload.h"

#include "mcpfan/json_text.h"

namespace mcpfan {

PayloadRef encode_notification(const NotificationParts& parts) {
  auto* p = new Payload();
  PayloadRef ref(p);
  p->kind_ = parts.kind;
  p->tenant_ = parts.tenant;
  p->uri_.assign(parts.uri);

  std::size_t estimate = 160 + method_name(parts.kind).size();
  for (auto& [k, v] : parts.params) estimate += k.size() + v.size() + 8;
  for (auto& [k, v] : parts.meta) estimate += k.size() + v.size() + 8;
  std::string& b = p->bytes_;
  b.reserve(estimate);

  b += Payload::kSsePrefix;
  b += R"({"jsonrpc":"2.0","method":")";
  b += method_name(parts.kind);
  b += R"(","params":{"_meta":{")";
  b += kSubscriptionIdKey;
  b += "\":";
  p->head_end_ = static_cast<std::uint32_t>(b.size());
  for (auto& [k, v] : parts.meta) {
    b.push_back(',');
    append_json_string(b, k);
    b.push_back(':');
    b += v;
  }
  b.push_back('}');
  for (auto& [k, v] : parts.params) {
    b.push_back(',');
    append_json_string(b, k);
    b.push_back(':');
    b += v;
  }
  b += "}}\n\n";
  return ref;
}

}  // namespace mcpfan

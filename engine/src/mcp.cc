#include "mcpfan/mcp.h"

#include "mcpfan/json_text.h"
#include "mcpfan/payload.h"

#include <cstdio>
#include <cstdlib>

namespace mcpfan::mcp {

namespace {
constexpr std::string_view kSupported2026Json = R"(["2026-07-28","DRAFT-2026-v1"])";
// Newest first: an unknown requested version is answered with the first.
constexpr std::string_view k2025Versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
}  // namespace

bool is_2026_version(std::string_view v) noexcept { return v == kRev2026 || v == kDraft2026; }

bool is_2025_version(std::string_view v) noexcept {
  for (auto known : k2025Versions) {
    if (v == known) return true;
  }
  return false;
}

std::string_view negotiate_2025(std::string_view requested) noexcept {
  return is_2025_version(requested) ? requested : k2025Versions[0];
}

std::string unsupported_version_data(std::string_view requested) {
  std::string data = R"({"supported":)";
  data += kSupported2026Json;
  data += R"(,"requested":)";
  append_json_string(data, requested);
  data += '}';
  return data;
}

std::string discover_result() {
  std::string r = R"({"supportedVersions":)";
  r += kSupported2026Json;
  r += R"(,"capabilities":)";
  r += kind_capabilities_json();
  // Caching hints (required on server/discover's complete result in 2026-07-28): the same
  // for every caller; 0 ms because a reload with other flags may change the capabilities.
  r +=
      R"(,"resultType":"complete","ttlMs":0,"cacheScope":"public",)"
      R"("_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpfan","version":")";
  r += kServerVersion;
  r += R"("}}})";
  return r;
}

std::string initialize_result(std::string_view version) {
  std::string r = R"({"protocolVersion":)";
  append_json_string(r, version);
  // 2025 sessions also accept logging/setLevel (as a no-op: mcpfan has no logs for clients).
  r += R"(,"capabilities":{"logging":{},)";
  r += kind_capabilities_json(CapabilityEra::Rev2025).substr(1);
  r += R"(,"serverInfo":{"name":"mcpfan","version":")";
  r += kServerVersion;
  r += R"("}})";
  return r;
}

ListenPlan plan_listen(ListenSpec spec, TenantId tenant, std::string_view id) {
  ListenPlan plan;
  plan.filter.tenant = tenant;
  // The acknowledgement lists only what will be delivered: true flags, non-empty lists.
  std::string agreed;
  for (const KindInfo& k : kKinds) {
    if (k.listen_flag.empty() || !spec.wants(k.kind)) continue;
    plan.filter.kinds |= kind_bit(k.kind);
    if (!agreed.empty()) agreed += ',';
    agreed += '"';
    agreed += k.listen_flag;
    agreed += "\":true";
  }
  for (const KindInfo& k : kKinds) {
    std::vector<std::string>* keys = spec.keys(k.kind);
    if (!keys || keys->empty()) continue;
    if (!agreed.empty()) agreed += ',';
    agreed += '"';
    agreed += k.listen_keys;
    agreed += "\":[";
    for (std::size_t i = 0; i < keys->size(); ++i) {
      if (i) agreed += ',';
      append_json_string(agreed, (*keys)[i]);
    }
    agreed += ']';
  }
  plan.filter.uris = std::move(spec.resource_uris);
  plan.filter.task_ids = std::move(spec.task_ids);
  std::string& ack = plan.ack;
  ack = R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{")";
  ack += kSubscriptionIdKey;
  ack += "\":";
  ack += id;
  ack += R"(},"notifications":{)";
  ack += agreed;
  ack += "}}}";
  return plan;
}

std::optional<CapabilityRefusal> check_listen_capabilities(const ListenSpec& spec, bool declares_tasks) {
  if (spec.task_ids.empty() || declares_tasks) return std::nullopt;
  CapabilityRefusal r;
  r.error = Error{rpc_code::kMissingClientCapability,
                  "Missing required client capability: task notifications (params.notifications.taskIds) need "
                  "the io.modelcontextprotocol/tasks extension in params._meta "
                  "io.modelcontextprotocol/clientCapabilities.extensions"};
  r.data = R"({"requiredCapabilities":{"extensions":{")";
  r.data += kTasksExtension;
  r.data += R"(":{}}}})";
  return r;
}

std::string listen_complete_result(std::string_view id) {
  std::string result = R"({"resultType":"complete","_meta":{")";
  result += kSubscriptionIdKey;
  result += "\":";
  result += id;
  result += "}}";
  return rpc_result_json(id, result);
}

PayloadRef resource_updated(std::string_view uri, TenantId tenant) {
  std::string uri_json;
  append_json_string(uri_json, uri);
  NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params.emplace_back("uri", uri_json);
  return encode_notification(parts);
}

PayloadRef list_changed(Kind kind, TenantId tenant) {
  if (kind_info(kind).keyed()) {  // it needs a key: a programming error, caught at once
    std::fprintf(stderr, "mcpfan: mcp::list_changed(%s): a keyed kind (use mcp::resource_updated(uri), or "
                 "PublishDecoder for notifications/tasks)\n", std::string(method_name(kind)).c_str());
    std::abort();
  }
  NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = kind;
  return encode_notification(parts);
}

}  // namespace mcpfan::mcp

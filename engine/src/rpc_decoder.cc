#include "mcpfan/rpc_decoder.h"

#include <simdjson.h>

#include "mcpfan/json_text.h"

namespace mcpfan {

namespace dom = simdjson::dom;

struct RpcDecoder::Impl {
  dom::parser parser;
  std::string buf;
};

RpcDecoder::RpcDecoder(RpcLimits limits) : limits_(limits), impl_(std::make_unique<Impl>()) {}
RpcDecoder::~RpcDecoder() = default;

namespace {

// JSON text of an id (string or integer); false for any other type.
bool id_text(dom::element el, std::string& out) {
  out.clear();
  switch (el.type()) {
    case dom::element_type::STRING: {
      std::string_view s;
      if (el.get_string().get(s)) return false;
      append_json_string(out, s);
      return true;
    }
    case dom::element_type::INT64: out = std::to_string(int64_t(el)); return true;
    case dom::element_type::UINT64: out = std::to_string(uint64_t(el)); return true;
    default: return false;
  }
}

std::optional<Error> invalid_params(std::string msg) { return Error{rpc_code::kInvalidParams, std::move(msg)}; }

// The key list of a keyed kind: its bounds, and how its errors name it.
struct KeyRules {
  std::string_view list;   // "resourceSubscriptions"
  std::string_view what;   // "URI strings" (the array's items)
  std::string_view noun;   // "URIs"
  std::string_view empty;  // "an empty URI"
  std::string_view one;    // "resource URI"
  std::size_t max_count, max_length;
  RpcLimitHit count_hit, length_hit;
};

KeyRules key_rules(Kind kind, const RpcLimits& limits) {
  if (kind == Kind::TaskStatus) {
    return {"taskIds", "task id strings", "task ids", "an empty task id", "task id", limits.max_task_ids_per_listen,
            limits.max_task_id_length, RpcLimitHit::TaskIdsPerListen, RpcLimitHit::TaskIdLength};
  }
  return {"resourceSubscriptions", "URI strings", "URIs", "an empty URI", "resource URI", limits.max_uris_per_listen,
          limits.max_uri_length, RpcLimitHit::UrisPerListen, RpcLimitHit::UriLength};
}

std::optional<Error> decode_keys(Kind kind, dom::element value, const RpcLimits& limits, ListenSpec& out,
                                 RpcLimitHit& hit) {
  const KeyRules r = key_rules(kind, limits);
  const std::string field = "params.notifications." + std::string(r.list);
  dom::array items;
  if (value.get_array().get(items)) return invalid_params(field + " must be an array of " + std::string(r.what));
  if (items.size() > r.max_count) {
    hit = r.count_hit;
    return invalid_params(field + " has more than " + std::to_string(r.max_count) + " " + std::string(r.noun));
  }
  std::vector<std::string>& keys = *out.keys(kind);
  for (dom::element item : items) {
    std::string_view key;
    if (item.get_string().get(key)) return invalid_params(field + " must be an array of " + std::string(r.what));
    if (key.empty()) return invalid_params(field + " contains " + std::string(r.empty));
    if (key.size() > r.max_length) {
      hit = r.length_hit;
      return invalid_params(std::string(r.one) + " is longer than " + std::to_string(r.max_length) + " bytes");
    }
    bool dup = false;
    for (auto& have : keys) dup = dup || have == key;
    if (!dup) keys.emplace_back(key);
  }
  return std::nullopt;
}

std::optional<Error> decode_listen(dom::object params, const RpcLimits& limits, ListenSpec& out, RpcLimitHit& hit) {
  dom::element filter;
  if (params["notifications"].get(filter)) return std::nullopt;  // omitted: subscribes to nothing
  dom::object f;
  if (filter.get_object().get(f)) return invalid_params("params.notifications must be an object");
  for (auto [key, value] : f) {
    if (auto kind = kind_from_listen_flag(key)) {
      bool on = false;
      if (value.get_bool().get(on))
        return invalid_params("params.notifications." + std::string(key) + " must be a boolean");
      if (on) out.flagged |= kind_bit(*kind);
      else out.flagged &= static_cast<std::uint8_t>(~kind_bit(*kind));
    } else if (auto keyed = kind_from_listen_keys(key)) {
      if (auto e = decode_keys(*keyed, value, limits, out, hit)) return e;
    }
    // Other keys name notification types this server does not offer: omitted from the ack.
  }
  return std::nullopt;
}

}  // namespace

RpcRequest RpcDecoder::decode(std::string_view text) {
  RpcRequest r;
  auto fail = [&](int code, std::string msg) {
    r.error = Error{code, std::move(msg)};
    return std::move(r);
  };
  Impl& m = *impl_;
  m.buf.assign(text);
  m.buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
  dom::element root;
  if (m.parser.parse(m.buf.data(), text.size(), false).get(root)) {
    return fail(rpc_code::kParseError, "parse error: the message is not valid JSON");
  }
  if (root.is_array())
    return fail(rpc_code::kInvalidRequest, "JSON-RPC batches are not supported: send one request per message");
  dom::object obj;
  if (root.get_object().get(obj)) return fail(rpc_code::kInvalidRequest, "a JSON-RPC message must be a JSON object");

  dom::element id;
  if (!obj["id"].get(id)) {
    if (!id_text(id, r.id)) return fail(rpc_code::kInvalidRequest, "\"id\" must be a string or an integer");
    r.has_id = true;
  }
  std::string_view version;
  if (obj["jsonrpc"].get_string().get(version) || version != "2.0") {
    return fail(rpc_code::kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  }
  std::string_view method;
  if (obj["method"].get_string().get(method)) return fail(rpc_code::kInvalidRequest, "\"method\" must be a string");
  r.method.assign(method);

  dom::element params_el;
  dom::object params;
  if (!obj["params"].get(params_el)) {
    if (params_el.get_object().get(params)) return fail(rpc_code::kInvalidParams, "\"params\" must be an object");
    dom::element meta;
    if (!params["_meta"].get(meta)) {
      // A broken per-request field makes the whole request malformed (2026-07-28).
      auto fail_meta = [&](std::string msg) {
        r.envelope_error = true;
        return fail(rpc_code::kInvalidParams, std::move(msg));
      };
      if (!meta.is_object()) return fail_meta("\"params._meta\" must be an object");
      dom::element v;
      if (!meta[kProtocolVersionKey].get(v)) {
        std::string_view sv;
        if (v.get_string().get(sv)) return fail_meta("params._meta protocolVersion must be a string");
        r.meta_version.assign(sv);
      }
      if (!meta[kClientCapabilitiesKey].get(v)) {
        if (!v.is_object())
          return fail_meta("params._meta io.modelcontextprotocol/clientCapabilities must be an object");
        r.has_client_capabilities = true;
        dom::element ext;
        if (!v["extensions"].get(ext)) {
          if (!ext.is_object())
            return fail_meta("params._meta io.modelcontextprotocol/clientCapabilities.extensions must be an object");
          dom::element tasks;
          r.declares_tasks = !ext[kTasksExtension].get(tasks) && tasks.is_object();
        }
      }
      if (!meta[kAuthorizationMetaKey].get(v)) {
        std::string_view sv;
        if (v.get_string().get(sv)) return fail_meta("params._meta mcpfan/authorization must be a string");
        r.auth_token.assign(sv);
      }
    }
  } else {
    params = dom::object();
  }
  bool has_params = !obj["params"].error();

  if (r.method == "subscriptions/listen" && has_params) {
    if (auto e = decode_listen(params, limits_, r.listen, r.limit_hit)) return fail(e->code, e->message);
  } else if (r.method == "notifications/cancelled") {
    dom::element rid;
    if (!has_params || params["requestId"].get(rid) || !id_text(rid, r.cancel_id)) {
      return fail(rpc_code::kInvalidParams, "params.requestId must be a string or an integer");
    }
  } else if (!r.meta_version.empty()) {
    // A request of the 2026 revision (its envelope names one): the 2025-era methods below
    // are not its methods, so their params are not read; the transport refuses the method.
  } else if (r.method == "initialize") {
    std::string_view v;
    if (!has_params || params["protocolVersion"].get_string().get(v)) {
      return fail(rpc_code::kInvalidParams, "params.protocolVersion must be a string");
    }
    r.init_version.assign(v);
  } else if (r.method == "resources/subscribe" || r.method == "resources/unsubscribe") {
    std::string_view uri;
    if (!has_params || params["uri"].get_string().get(uri) || uri.empty()) {
      return fail(rpc_code::kInvalidParams, "params.uri must be a non-empty string");
    }
    if (uri.size() > limits_.max_uri_length) {
      r.limit_hit = RpcLimitHit::UriLength;
      return fail(rpc_code::kInvalidParams,
                  "resource URI is longer than " + std::to_string(limits_.max_uri_length) + " bytes");
    }
    r.uri.assign(uri);
  }
  return r;
}

std::string rpc_error_json(std::string_view id, const Error& e, std::string_view data_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id.empty() ? std::string_view("null") : id;
  out += R"(,"error":{"code":)";
  out += std::to_string(e.code);
  out += R"(,"message":)";
  append_json_string(out, e.message);
  if (!data_json.empty()) {
    out += R"(,"data":)";
    out += data_json;
  }
  out += "}}";
  return out;
}

std::string rpc_result_json(std::string_view id, std::string_view result_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id;
  out += R"(,"result":)";
  out += result_json;
  out += "}";
  return out;
}

}  // namespace mcpfan

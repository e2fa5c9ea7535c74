// libFuzzer target: mcpfan::RpcDecoder::decode (engine/src/rpc_decoder.cc) on arbitrary bytes,
// as an HTTP body or a stdio line reaches it, then the JSON the transports build from what it
// returns: rpc_error_json, rpc_result_json, and the listen acknowledgement, final result and
// -32022 data (transports/src/mcp/messages.cc), all of which embed client-controlled text.
//
// Checked on every input (README.md lists them):
//  - decode() agrees with an independent simdjson parse: invalid JSON <=> -32700; otherwise
//    the jsonrpc/method/id it reports are what the text says;
//  - an id, a cancel requestId: the JSON text of a string or an integer, nothing else;
//  - an accepted listen: URIs non-empty, within max_uri_length, no duplicates, at most
//    max_uris_per_listen, each one present in the request; subscribe/unsubscribe: the uri;
//  - an error: a JSON-RPC code mcpfan uses and a non-empty message;
//  - every JSON text built from the result parses, and its id/code/message/URIs/version
//    round-trip exactly (escaping is right, no invalid UTF-8 gets through).
// The same input is decoded again with tiny limits (8-byte URIs, 2 per listen), so the limit
// paths are reached by small inputs too.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "mcp/messages.h"  // transports/src: what the transports answer with
#include "mcpfan/rpc_decoder.h"

namespace {

namespace dom = simdjson::dom;
using mcpfan::Error;
using mcpfan::RpcDecoder;
using mcpfan::RpcLimits;
using mcpfan::RpcRequest;
using mcpfan::fuzz::parse_json;
using mcpfan::fuzz::printable;
namespace code = mcpfan::rpc_code;

bool known_code(int c) {
  return c == code::kParseError || c == code::kInvalidRequest || c == code::kMethodNotFound ||
         c == code::kInvalidParams || c == code::kInternalError || c == code::kHeaderMismatch ||
         c == code::kUnsupportedVersion || (c <= -32000 && c >= -32099);  // mcpfan's own server errors
}

using Val = simdjson::simdjson_result<dom::element>;

// A member's minified JSON text, or "<missing>".
std::string minified(Val v) {
  dom::element el;
  if (v.get(el)) return "<missing>";
  return simdjson::minify(el);
}
std::string minified(dom::element el) { return simdjson::minify(el); }

// `text` must be the JSON of a string or an integer; returns it minified.
std::string check_id_text(dom::parser& p, std::string_view text, const char* what) {
  dom::element el;
  auto err = parse_json(p, text, el);
  FUZZ_CHECK(!err, "%s is not JSON (%s): %s", what, simdjson::error_message(err), printable(text).c_str());
  auto t = el.type();
  FUZZ_CHECK(t == dom::element_type::STRING || t == dom::element_type::INT64 || t == dom::element_type::UINT64,
             "%s is neither a string nor an integer: %s", what, printable(text).c_str());
  return minified(el);
}

std::string_view str(Val v, const char* what) {
  std::string_view s;
  FUZZ_CHECK(!v.get_string().get(s), "%s is not a string", what);
  return s;
}
std::string_view str(dom::element el, const char* what) {
  std::string_view s;
  FUZZ_CHECK(!el.get_string().get(s), "%s is not a string", what);
  return s;
}

// What every message built from `r` must look like; `input` is the decoded text, parsed.
void check_outputs(dom::parser& p, const RpcRequest& r, const std::string& id_min) {
  dom::element out;
  std::string id_or_null = id_min.empty() ? "null" : id_min;

  if (r.error) {
    // Exactly what both transports send: the id (or null), the code, the message.
    std::string json = mcpfan::rpc_error_json(r.has_id ? r.id : std::string(), *r.error);
    auto err = parse_json(p, json, out);
    FUZZ_CHECK(!err, "rpc_error_json is not JSON (%s): %s", simdjson::error_message(err), printable(json).c_str());
    FUZZ_CHECK(str(out["jsonrpc"], "jsonrpc") == "2.0", "jsonrpc");
    FUZZ_CHECK(minified(out["id"]) == id_or_null, "error id %s, expected %s", minified(out["id"]).c_str(),
               id_or_null.c_str());
    int64_t c = 0;
    FUZZ_CHECK(!out["error"]["code"].get_int64().get(c) && c == r.error->code, "error.code");
    FUZZ_CHECK(str(out["error"]["message"], "error.message") == r.error->message,
               "error.message does not round-trip: %s", printable(r.error->message).c_str());
    // The HTTP transport's non-JSON-RPC error body, with the same message.
    std::string body = mcpfan::detail::json_error_body(r.error->message);
    err = parse_json(p, body, out);
    FUZZ_CHECK(!err, "json_error_body is not JSON: %s", printable(body).c_str());
    FUZZ_CHECK(str(out["error"], "error") == r.error->message, "json_error_body message does not round-trip");
    return;
  }

  if (r.has_id) {
    std::string json = mcpfan::rpc_result_json(r.id, "{}");
    auto err = parse_json(p, json, out);
    FUZZ_CHECK(!err, "rpc_result_json is not JSON (%s): %s", simdjson::error_message(err), printable(json).c_str());
    FUZZ_CHECK(minified(out["id"]) == id_min, "result id does not round-trip");
    FUZZ_CHECK(out["result"].get_object().error() == simdjson::SUCCESS, "result is not an object");
  }

  if (!r.meta_version.empty()) {  // -32022 names the requested version in error.data
    std::string data = mcpfan::detail::unsupported_version_data(r.meta_version);
    std::string json = mcpfan::rpc_error_json(
        r.id, Error{code::kUnsupportedVersion, "unsupported protocol version " + r.meta_version}, data);
    auto err = parse_json(p, json, out);
    FUZZ_CHECK(!err, "-32022 answer is not JSON (%s): %s", simdjson::error_message(err), printable(json).c_str());
    FUZZ_CHECK(str(out["error"]["data"]["requested"], "data.requested") == r.meta_version,
               "data.requested does not round-trip");
  }

  if (r.method == "subscriptions/listen" && r.has_id) {
    mcpfan::detail::ListenPlan plan = mcpfan::detail::plan_listen(r.listen, mcpfan::kDefaultTenant, r.id);
    auto err = parse_json(p, plan.ack, out);
    FUZZ_CHECK(!err, "listen acknowledgement is not JSON (%s): %s", simdjson::error_message(err),
               printable(plan.ack).c_str());
    FUZZ_CHECK(minified(out["params"]["_meta"][mcpfan::kSubscriptionIdKey]) == id_min, "ack subscriptionId");
    FUZZ_CHECK(plan.filter.uris == r.listen.resource_uris, "filter URIs differ from the decoded ones");
    dom::array acked;
    if (!out["params"]["notifications"]["resourceSubscriptions"].get_array().get(acked)) {
      std::size_t i = 0;
      for (dom::element u : acked) {
        FUZZ_CHECK(i < r.listen.resource_uris.size() && str(u, "acked uri") == r.listen.resource_uris[i],
                   "acknowledged URI %zu does not round-trip", i);
        ++i;
      }
      FUZZ_CHECK(i == r.listen.resource_uris.size(), "acknowledged URI count");
    } else {
      FUZZ_CHECK(r.listen.resource_uris.empty(), "URIs decoded but none acknowledged");
    }
    std::string done = mcpfan::detail::listen_complete_result(r.id);
    err = parse_json(p, done, out);
    FUZZ_CHECK(!err, "listen final result is not JSON: %s", printable(done).c_str());
  }
}

void check_request(const RpcRequest& r, std::string_view input, const RpcLimits& limits, dom::parser& p) {
  // An independent parse of the same text.
  dom::element root;
  bool valid_json = !parse_json(p, input, root);
  if (!valid_json) {
    FUZZ_CHECK(r.error && r.error->code == code::kParseError, "invalid JSON not answered with -32700");
    FUZZ_CHECK(!r.has_id && r.id.empty(), "an id read from invalid JSON");
  } else {
    FUZZ_CHECK(!r.error || r.error->code != code::kParseError, "valid JSON answered with -32700: %s",
               printable(input).c_str());
  }
  if (r.error) {
    FUZZ_CHECK(known_code(r.error->code), "unknown error code %d", r.error->code);
    FUZZ_CHECK(!r.error->message.empty(), "empty error message");
  }
  FUZZ_CHECK(r.has_id || r.id.empty(), "an id without has_id: %s", printable(r.id).c_str());

  std::string id_min;
  if (r.has_id) id_min = check_id_text(p, r.id, "id");

  if (valid_json && !r.error) {
    // Re-parse: check_id_text reused the parser and invalidated `root`.
    (void)parse_json(p, input, root);
    FUZZ_CHECK(root.is_object(), "a non-object accepted");
    FUZZ_CHECK(str(root["jsonrpc"], "jsonrpc") == "2.0", "jsonrpc accepted though not \"2.0\"");
    FUZZ_CHECK(str(root["method"], "method") == r.method, "method differs from the text");
    dom::element id_el;
    FUZZ_CHECK(r.has_id == !root["id"].get(id_el), "has_id differs from the text");
    if (r.has_id) FUZZ_CHECK(minified(id_el) == id_min, "id differs from the text");

    const auto& uris = r.listen.resource_uris;
    const auto& task_ids = r.listen.task_ids;
    if (r.method == "subscriptions/listen") {
      // Each key list (URIs, task ids): within its bounds, no duplicates, each from the request.
      auto check_keys = [&](const std::vector<std::string>& keys, const char* list, std::size_t max_count,
                            std::size_t max_length) {
        FUZZ_CHECK(keys.size() <= max_count, "more %s than allowed", list);
        std::vector<std::string> given;
        dom::array arr;
        if (!root["params"]["notifications"][list].get_array().get(arr)) {
          for (dom::element u : arr) given.emplace_back(str(u, list));
        }
        for (std::size_t i = 0; i < keys.size(); ++i) {
          FUZZ_CHECK(!keys[i].empty() && keys[i].size() <= max_length, "%s %zu empty or too long", list, i);
          for (std::size_t j = 0; j < i; ++j) FUZZ_CHECK(keys[i] != keys[j], "duplicate in %s at %zu", list, i);
          bool found = false;
          for (auto& g : given) found = found || g == keys[i];
          FUZZ_CHECK(found, "%s %zu is not in the request: %s", list, i, printable(keys[i]).c_str());
        }
      };
      check_keys(uris, "resourceSubscriptions", limits.max_uris_per_listen, limits.max_uri_length);
      check_keys(task_ids, "taskIds", limits.max_task_ids_per_listen, limits.max_task_id_length);
    } else {
      FUZZ_CHECK(uris.empty() && task_ids.empty() && r.listen.flagged == 0,
                 "a listen filter on %s", printable(r.method).c_str());
    }
    if ((r.method == "resources/subscribe" || r.method == "resources/unsubscribe") && r.meta_version.empty()) {
      FUZZ_CHECK(!r.uri.empty() && r.uri.size() <= limits.max_uri_length, "subscribe uri empty or too long");
      FUZZ_CHECK(str(root["params"]["uri"], "params.uri") == r.uri, "subscribe uri differs from the text");
    }
    // A request naming the 2026 revision: its 2025-era params are not read (the method is refused by name).
    if (!r.meta_version.empty())
      FUZZ_CHECK(r.uri.empty() && r.init_version.empty(), "2025-era params read from a 2026 request");
    if (r.method == "notifications/cancelled") {
      std::string cancel = check_id_text(p, r.cancel_id, "cancel requestId");
      (void)cancel;
    }
  }
  check_outputs(p, r, id_min);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr RpcLimits kDefault{};
  static constexpr RpcLimits kSmall{8, 2, 4, 2};
  static RpcDecoder decoder(kDefault);
  static RpcDecoder small(kSmall);
  static dom::parser parser;
  std::string_view input(reinterpret_cast<const char*>(data), size);

  RpcRequest r = decoder.decode(input);
  check_request(r, input, kDefault, parser);

  RpcRequest s = small.decode(input);
  check_request(s, input, kSmall, parser);
  // Smaller limits can only turn an accepted message into an invalid-params one.
  if (!r.error && s.error) FUZZ_CHECK(s.error->code == code::kInvalidParams, "tiny limits gave code %d", s.error->code);
  if (r.error) FUZZ_CHECK(s.error && s.error->code == r.error->code, "tiny limits changed the error");
  return 0;
}

// libFuzzer target: mcpfan::PublishDecoder::decode (engine/src/publish_decoder.cc) on arbitrary
// bytes as a POST /v1/publish body, and the payloads it encodes (engine/src/payload.cc).
//
// Checked on every input (README.md lists them):
//  - invalid JSON (per an independent simdjson parse) is refused with -32700; a refusal has
//    code -32700 or -32602 and a message that round-trips through the HTTP error body;
//  - all or nothing: an accepted body gives one payload per notification, in order;
//  - each payload: kind = the method, tenant = the "tenant" field (or default), uri = the last
//    params.uri for resources/updated (non-empty, within the limit), the last params.taskId for
//    notifications/tasks (non-empty, within the limit, with a known status whose required
//    member is an object, and the creation/update strings and ttlMs there), empty otherwise;
//  - every accepted notifications/tasks gives one task state to keep, in order, with its
//    tenant's name and a payload keyed by its task id, whether or not its tenant has clients;
//  - both framings, with a string and an integer subscription id: a stdio frame is exactly one
//    line of valid JSON; the SSE frame is "event: message\ndata: " + that JSON + "\n\n"; the
//    id appears once in params._meta; every other params and _meta member is delivered
//    verbatim and in order (the publisher's own subscriptionId is dropped); plain() likewise,
//    without the id; frame_size() is the frame's size;
//  - a forced tenant (a publisher key bound to one) accepts a subset and stamps every payload;
//    tiny limits (8-byte URIs, 2 notifications) accept a subset of what the defaults accept.
#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "mcp/messages.h"  // transports/src: json_error_body, the 400 answer's body
#include "mcpfan/publish_decoder.h"

namespace {

namespace dom = simdjson::dom;
using namespace mcpfan;
using fuzz::parse_json;
using fuzz::printable;
using Members = std::vector<std::pair<std::string, std::string>>;  // (unescaped key, minified value)

// What the body says about one notification, read with the DOM before anything else is parsed.
struct Expected {
  std::string method;
  bool has_tenant = false;
  std::string tenant;
  bool has_uri = false;
  std::string last_uri;  // the decoder keeps the last params.uri
  std::optional<std::string> task_id, status;  // the last params.taskId and status, if strings
  std::string result, error, input_requests, created_at, last_updated_at, ttl_ms;  // the last raw values
  bool has_meta = false;
  Members params;  // params members other than _meta, in order
  Members meta;    // members of every params._meta, in order, without the subscriptionId
};

Expected expected_of(dom::object obj) {
  Expected e;
  std::string_view sv;
  for (auto [key, value] : obj) {
    if (key == "method" && !value.get_string().get(sv)) e.method = std::string(sv);
    if (key == "tenant" && !value.get_string().get(sv)) {
      e.has_tenant = true;
      e.tenant = std::string(sv);
    }
    dom::object params;
    if (key != "params" || value.get_object().get(params)) continue;
    for (auto [pk, pv] : params) {
      dom::object meta;
      if (pk == "_meta" && !pv.get_object().get(meta)) {
        e.has_meta = true;
        for (auto [mk, mv] : meta) {
          if (mk != kSubscriptionIdKey) e.meta.emplace_back(mk, simdjson::minify(mv));
        }
        continue;
      }
      if (pk == "uri" && !pv.get_string().get(sv)) {
        e.has_uri = true;
        e.last_uri = std::string(sv);
      }
      if (pk == "taskId") e.task_id = pv.get_string().get(sv) ? std::nullopt : std::optional(std::string(sv));
      if (pk == "status") e.status = pv.get_string().get(sv) ? std::nullopt : std::optional(std::string(sv));
      if (pk == "result") e.result = simdjson::minify(pv);
      if (pk == "error") e.error = simdjson::minify(pv);
      if (pk == "inputRequests") e.input_requests = simdjson::minify(pv);
      if (pk == "createdAt") e.created_at = simdjson::minify(pv);
      if (pk == "lastUpdatedAt") e.last_updated_at = simdjson::minify(pv);
      if (pk == "ttlMs") e.ttl_ms = simdjson::minify(pv);
      e.params.emplace_back(pk, simdjson::minify(pv));
    }
  }
  return e;
}

// Checks one delivered frame's JSON; `id_min` is the subscription id token, empty for plain().
void check_message(dom::parser& p, std::string_view json, const Expected& e, Kind kind, std::string_view id_min,
                   const char* what) {
  dom::element root;
  auto err = parse_json(p, json, root);
  FUZZ_CHECK(!err, "%s is not JSON (%s): %s", what, simdjson::error_message(err), printable(json).c_str());
  std::string_view s;
  FUZZ_CHECK(!root["jsonrpc"].get_string().get(s) && s == "2.0", "%s: jsonrpc", what);
  FUZZ_CHECK(!root["method"].get_string().get(s) && s == method_name(kind), "%s: method", what);
  FUZZ_CHECK(root["id"].error() == simdjson::NO_SUCH_FIELD, "%s: a notification with an id", what);
  dom::object params;
  FUZZ_CHECK(!root["params"].get_object().get(params), "%s: params is not an object", what);
  Members got_params, got_meta;
  int meta_objects = 0, ids = 0;
  for (auto [k, v] : params) {
    if (k != "_meta") {
      got_params.emplace_back(k, simdjson::minify(v));
      continue;
    }
    ++meta_objects;
    dom::object meta;
    FUZZ_CHECK(!v.get_object().get(meta), "%s: _meta is not an object", what);
    for (auto [mk, mv] : meta) {
      if (mk == kSubscriptionIdKey) {
        ++ids;
        FUZZ_CHECK(simdjson::minify(mv) == id_min, "%s: subscriptionId %s, expected %s", what,
                   simdjson::minify(mv).c_str(), std::string(id_min).c_str());
      } else {
        got_meta.emplace_back(mk, simdjson::minify(mv));
      }
    }
  }
  FUZZ_CHECK(ids == (id_min.empty() ? 0 : 1), "%s: %d subscriptionIds", what, ids);
  FUZZ_CHECK(meta_objects == ((!id_min.empty() || e.has_meta) ? 1 : 0), "%s: %d _meta objects", what, meta_objects);
  FUZZ_CHECK(got_params == e.params, "%s: params not delivered verbatim: %s", what, printable(json).c_str());
  FUZZ_CHECK(got_meta == e.meta, "%s: _meta not delivered verbatim: %s", what, printable(json).c_str());
}

void check_payload(dom::parser& p, const PayloadRef& ref, const Expected& e, const TenantTable& tenants,
                   std::optional<TenantId> forced, const PublishLimits& limits) {
  const Payload& pl = *ref;
  auto kind = kind_from_method(e.method);
  FUZZ_CHECK(kind && *kind == pl.kind(), "kind differs from method %s", printable(e.method).c_str());
  if (forced) FUZZ_CHECK(pl.tenant() == *forced, "forced tenant not applied");
  else if (e.has_tenant) FUZZ_CHECK(tenants.name(pl.tenant()) == e.tenant, "tenant differs");
  else FUZZ_CHECK(pl.tenant() == kDefaultTenant, "tenant without a tenant field");
  if (pl.kind() == Kind::ResourceUpdated) {
    FUZZ_CHECK(e.has_uri && pl.uri() == e.last_uri, "uri %s differs from params.uri", printable(pl.uri()).c_str());
    FUZZ_CHECK(!pl.uri().empty() && pl.uri().size() <= limits.max_uri_length, "uri empty or too long");
  } else if (pl.kind() == Kind::TaskStatus) {
    FUZZ_CHECK(e.task_id && pl.uri() == *e.task_id, "key %s differs from params.taskId", printable(pl.uri()).c_str());
    FUZZ_CHECK(!pl.uri().empty() && pl.uri().size() <= limits.max_task_id_length, "task id empty or too long");
    auto terminal = e.status ? task_status_terminal(*e.status) : std::nullopt;
    FUZZ_CHECK(terminal.has_value(), "a task with an unknown status was accepted");
    auto object = [](const std::string& raw) { return !raw.empty() && raw.front() == '{'; };
    if (*e.status == "completed") FUZZ_CHECK(object(e.result), "completed without a result object");
    if (*e.status == "failed") FUZZ_CHECK(object(e.error), "failed without an error object");
    if (*e.status == "input_required") FUZZ_CHECK(object(e.input_requests), "input_required without inputRequests");
    FUZZ_CHECK(!e.created_at.empty() && e.created_at.front() == '"', "createdAt not a string");
    FUZZ_CHECK(!e.last_updated_at.empty() && e.last_updated_at.front() == '"', "lastUpdatedAt not a string");
    FUZZ_CHECK(
        e.ttl_ms == "null" || (!e.ttl_ms.empty() && e.ttl_ms.find_first_not_of("0123456789") == std::string::npos),
        "ttlMs %s accepted", printable(e.ttl_ms).c_str());
  } else {
    FUZZ_CHECK(pl.uri().empty(), "a list_changed payload with a uri key");
  }

  for (std::string_view id : {std::string_view("7"), std::string_view("\"listen:0\"")}) {
    std::string line(pl.head(Framing::Line));
    line += id;
    line += pl.tail(Framing::Line);
    FUZZ_CHECK(!line.empty() && line.back() == '\n' && line.find('\n') == line.size() - 1,
               "a stdio frame is not exactly one line: %s", printable(line).c_str());
    std::string_view json(line.data(), line.size() - 1);
    check_message(p, json, e, pl.kind(), id, "stdio frame");
    std::string sse(pl.head(Framing::Sse));
    sse += id;
    sse += pl.tail(Framing::Sse);
    FUZZ_CHECK(sse == std::string(Payload::kSsePrefix) + std::string(json) + "\n\n",
               "SSE frame differs from the stdio one");
    FUZZ_CHECK(pl.frame_size(Framing::Line) + id.size() == line.size(), "frame_size(Line)");
    FUZZ_CHECK(pl.frame_size(Framing::Sse) + id.size() == sse.size(), "frame_size(Sse)");
  }
  std::string_view plain = pl.plain(Framing::Line);
  FUZZ_CHECK(!plain.empty() && plain.back() == '\n' && plain.find('\n') == plain.size() - 1,
             "plain stdio frame is not exactly one line: %s", printable(plain).c_str());
  check_message(p, plain.substr(0, plain.size() - 1), e, pl.kind(), {}, "plain frame");
  FUZZ_CHECK(pl.plain(Framing::Sse) == std::string(Payload::kSsePrefix) + std::string(plain) + "\n",
             "plain SSE frame differs from the stdio one");
}

void check_refusal(dom::parser& p, const Error& err) {
  // -32031: a publisher bound to one tenant naming another (forbidden, HTTP 403).
  FUZZ_CHECK(err.code == rpc_code::kParseError || err.code == rpc_code::kInvalidParams || err.code == -32031,
             "code %d", err.code);
  FUZZ_CHECK(!err.message.empty(), "empty message");
  std::string body = detail::json_error_body(err.message);
  dom::element root;
  auto e = parse_json(p, body, root);
  FUZZ_CHECK(!e, "the 400 body is not JSON (%s): %s", simdjson::error_message(e), printable(body).c_str());
  std::string_view m;
  FUZZ_CHECK(!root["error"].get_string().get(m) && m == err.message, "the error message does not round-trip: %s",
             printable(err.message).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static constexpr PublishLimits kDefault{};
  static constexpr PublishLimits kSmall{8, 2, 4, 160};
  static PublishDecoder decoder(kDefault);
  static PublishDecoder small(kSmall);
  static dom::parser body_parser, frame_parser;
  std::string_view body(reinterpret_cast<const char*>(data), size);

  // What the body says, per notification (empty when it is not an object or an array of them).
  dom::element root;
  bool valid_json = !parse_json(body_parser, body, root);
  std::vector<Expected> expected;
  bool shaped = false;  // an object, or an array of objects
  if (valid_json) {
    dom::object obj;
    dom::array arr;
    if (!root.get_object().get(obj)) {
      expected.push_back(expected_of(obj));
      shaped = true;
    } else if (!root.get_array().get(arr)) {
      shaped = true;
      for (dom::element el : arr) {
        if (el.get_object().get(obj)) {
          shaped = false;
          break;
        }
        expected.push_back(expected_of(obj));
      }
    }
  }

  // Publishing only looks tenants up: give every tenant the body names a client first, so
  // each notification has somebody to be encoded for.
  TenantTable tenants(expected.size() + 2);
  for (const Expected& e : expected) {
    if (e.has_tenant && !e.tenant.empty()) (void)tenants.acquire(e.tenant);
  }
  auto r = decoder.decode(body, tenants);
  if (!valid_json) {
    FUZZ_CHECK(r.ok() || r.error().code == rpc_code::kParseError, "invalid JSON refused with %d, not -32700: %s",
               r.error().code, r.error().message.c_str());
    FUZZ_CHECK(!r.ok(), "invalid JSON accepted: %zu payloads, the first: %s", r.value().payloads.size(),
               r.value().payloads.empty() ? "" : printable(r.value().payloads[0]->plain(Framing::Line)).c_str());
  }
  if (!r.ok()) {
    check_refusal(frame_parser, r.error());
  } else {
    FUZZ_CHECK(shaped, "accepted a body that is neither an object nor an array of objects");
    const auto& v = r.value().payloads;
    FUZZ_CHECK(r.value().accepted == expected.size(), "%zu accepted for %zu notifications", r.value().accepted,
               expected.size());
    FUZZ_CHECK(v.size() == expected.size(), "%zu payloads for %zu notifications", v.size(), expected.size());
    FUZZ_CHECK(v.size() <= kDefault.max_notifications, "more payloads than max_notifications");
    for (std::size_t i = 0; i < v.size(); ++i)
      check_payload(frame_parser, v[i], expected[i], tenants, std::nullopt, kDefault);
    std::size_t task_count = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (kind_from_method(expected[i].method) != Kind::TaskStatus) continue;
      FUZZ_CHECK(task_count < r.value().tasks.size(), "a task notification without its state");
      const TaskState& t = r.value().tasks[task_count++];
      FUZZ_CHECK(t.payload.get() == v[i].get(), "a task state is not its notification's payload");
      FUZZ_CHECK(t.tenant == (expected[i].has_tenant ? expected[i].tenant : std::string(kDefaultTenantName)),
                 "task state tenant %s", printable(t.tenant).c_str());
    }
    FUZZ_CHECK(task_count == r.value().tasks.size(), "%zu task states for %zu task notifications",
               r.value().tasks.size(), task_count);
  }

  // No tenant has clients: the same answer, nothing created, payloads only for the default
  // tenant (a regression: publishes filled the tenant table for good; docs/security.md "Tenants").
  TenantTable empty(4);
  auto n = decoder.decode(body, empty);
  FUZZ_CHECK(n.ok() == r.ok(), "the tenant table changed whether a body is accepted");
  FUZZ_CHECK(empty.size() == 1, "a publish created %zu tenants", empty.size() - 1);
  if (n.ok()) {
    std::size_t defaults = 0;
    for (const Expected& e : expected) defaults += !e.has_tenant || e.tenant == "default";
    FUZZ_CHECK(n.value().accepted == expected.size(), "accepted %zu of %zu", n.value().accepted, expected.size());
    FUZZ_CHECK(n.value().payloads.size() == defaults, "%zu payloads for %zu notifications to the default tenant",
               n.value().payloads.size(), defaults);
    FUZZ_CHECK(r.ok() && n.value().tasks.size() == r.value().tasks.size(),
               "a task's state depends on whether its tenant has clients");
    for (const TaskState& t : n.value().tasks) FUZZ_CHECK(t.payload, "a task state without its payload");
  }

  // A publisher key bound to tenant "acme".
  TenantTable bound_tenants;
  TenantId acme = *bound_tenants.acquire("acme");
  auto f = decoder.decode(body, bound_tenants, std::string_view("acme"));
  if (!f.ok()) {
    check_refusal(frame_parser, f.error());
  } else {
    const auto& fv = f.value().payloads;
    FUZZ_CHECK(r.ok() && fv.size() == r.value().payloads.size(), "a forced tenant accepted what the default refused");
    for (std::size_t i = 0; i < fv.size(); ++i) {
      FUZZ_CHECK(!expected[i].has_tenant || expected[i].tenant == "acme", "a forced tenant let another tenant through");
      check_payload(frame_parser, fv[i], expected[i], bound_tenants, acme, kDefault);
    }
  }

  auto s = small.decode(body, tenants);
  if (!s.ok()) {
    check_refusal(frame_parser, s.error());
  } else {
    const auto& sv = s.value().payloads;
    FUZZ_CHECK(r.ok() && sv.size() == r.value().payloads.size(), "tiny limits accepted what the defaults refused");
    FUZZ_CHECK(sv.size() <= kSmall.max_notifications, "more payloads than max_notifications");
    for (std::size_t i = 0; i < sv.size(); ++i) {
      check_payload(frame_parser, sv[i], expected[i], tenants, std::nullopt, kSmall);
    }
  }
  return 0;
}

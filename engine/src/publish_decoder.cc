#include "mcpfan/publish_decoder.h"

#include <simdjson.h>

#include <string>

namespace mcpfan {

namespace od = simdjson::ondemand;

struct PublishDecoder::Impl {
  PublishLimits limits;
  od::parser parser;
  simdjson::dom::parser validator;  // ondemand skips what it does not visit; this checks every byte
  std::string raw;  // the body as sent, padded for simdjson
  std::string buf;  // the minified body, padded for simdjson
  std::vector<NotificationParts> parts;
  std::vector<std::size_t> note_of_part;  // parts[i] is notifications[note_of_part[i]]
  // Each notifications/tasks accepted: its state to keep (TaskStates), encoded with the local
  // payload when there is one (`part`), else on its own (`own`: the tenant has no client here).
  struct PendingTask {
    std::string tenant;
    std::optional<std::uint64_t> ttl_ms;
    bool terminal = false;
    std::optional<std::size_t> part;
    NotificationParts own;
  };
  std::vector<PendingTask> tasks;
  PublishLimitHit limit_hit = PublishLimitHit::None;
};

namespace {

Error bad(std::size_t index, bool many, std::string what) {
  if (many) what = "notification " + std::to_string(index) + ": " + what;
  return Error{rpc_code::kInvalidParams, std::move(what)};
}

// The minified JSON text of any value (the body is minified, so tokens carry no spaces).
simdjson::error_code raw_value(od::value v, std::string_view& out) {
  od::json_type t;
  if (auto e = v.type().get(t)) return e;
  if (t == od::json_type::object) {
    od::object o;
    if (auto e = v.get_object().get(o)) return e;
    return o.raw_json().get(out);
  }
  if (t == od::json_type::array) {
    od::array a;
    if (auto e = v.get_array().get(a)) return e;
    return a.raw_json().get(out);
  }
  out = v.raw_json_token();
  return simdjson::SUCCESS;
}

// Reads members of an object value into `out` as (unescaped key, raw value), skipping `skip_key`.
simdjson::error_code read_members(od::object obj, std::string_view skip_key,
                                  std::vector<std::pair<std::string_view, std::string_view>>& out) {
  for (auto field : obj) {
    std::string_view key, raw;
    if (auto e = field.unescaped_key().get(key)) return e;
    if (auto e = raw_value(field.value(), raw)) return e;
    if (key != skip_key) out.emplace_back(key, raw);
  }
  return simdjson::SUCCESS;
}

// What a notifications/tasks carries (SEP-2663's Task): read while params is walked, checked
// once the method is known. Only what a client needs to read the task is required.
struct TaskFields {
  bool has_id = false, has_status = false;
  std::optional<std::string_view> id, status;  // nullopt: present but not a string
  std::string_view result, error, input_requests, created_at, last_updated_at, ttl_ms, poll_interval_ms;  // raw JSON
  std::size_t bytes = 0;  // of params (keys and raw values): the bound on a task notification

  void note(std::string_view key, std::string_view raw) {
    bytes += key.size() + raw.size();
    if (key == "result") result = raw;
    else if (key == "error") error = raw;
    else if (key == "inputRequests") input_requests = raw;
    else if (key == "createdAt") created_at = raw;
    else if (key == "lastUpdatedAt") last_updated_at = raw;
    else if (key == "ttlMs") ttl_ms = raw;
    else if (key == "pollIntervalMs") poll_interval_ms = raw;
  }

  static bool is_object(std::string_view raw) { return !raw.empty() && raw.front() == '{'; }
  static bool is_string(std::string_view raw) { return !raw.empty() && raw.front() == '"'; }
  static bool is_whole_number(std::string_view raw) {
    if (raw.empty()) return false;
    for (char c : raw) {
      if (c < '0' || c > '9') return false;  // no sign, fraction or exponent: integer milliseconds
    }
    return true;
  }

  /** ttlMs once check() passed: nullopt for null (unlimited); an absurdly long one saturates. */
  std::optional<std::uint64_t> ttl() const {
    if (ttl_ms == "null") return std::nullopt;
    if (ttl_ms.size() > 18) return UINT64_MAX;
    std::uint64_t v = 0;
    for (char c : ttl_ms) v = v * 10 + static_cast<std::uint64_t>(c - '0');
    return v;
  }
  bool terminal() const { return status && task_status_terminal(*status).value_or(false); }

  std::optional<std::string> check(const PublishLimits& limits, PublishLimitHit& hit) const {
    const std::string m = "notifications/tasks ";
    if (!has_id || (id && id->empty())) return m + "needs a non-empty \"params.taskId\"";
    if (!id) return std::string("\"params.taskId\" must be a string");
    if (id->size() > limits.max_task_id_length) {
      hit = PublishLimitHit::TaskIdLength;
      return "\"params.taskId\" is longer than " + std::to_string(limits.max_task_id_length) + " bytes";
    }
    if (!has_status) return m + "needs \"params.status\"";
    const std::string_view st = status.value_or(std::string_view());
    if (!status || !task_status_terminal(st).has_value()) {
      return "\"params.status\" must be one of working, input_required, completed, cancelled, failed";
    }
    if (st == "completed" && !is_object(result)) return m + "with status completed needs \"params.result\" (an object)";
    if (st == "failed" && !is_object(error)) return m + "with status failed needs \"params.error\" (an object)";
    if (st == "input_required" && !is_object(input_requests)) {
      return m + "with status input_required needs \"params.inputRequests\" (an object)";
    }
    if (!is_string(created_at)) return m + "needs \"params.createdAt\" (an ISO 8601 string)";
    if (!is_string(last_updated_at)) return m + "needs \"params.lastUpdatedAt\" (an ISO 8601 string)";
    if (ttl_ms != "null" && !is_whole_number(ttl_ms)) {
      return m + "needs \"params.ttlMs\" (integer milliseconds, or null for unlimited)";
    }
    if (!poll_interval_ms.empty() && !is_whole_number(poll_interval_ms)) {
      return std::string("\"params.pollIntervalMs\" must be integer milliseconds");
    }
    if (bytes > limits.max_task_bytes) {
      hit = PublishLimitHit::TaskBytes;
      return m + "params are larger than " + std::to_string(limits.max_task_bytes) + " bytes (--max-task-bytes)";
    }
    return std::nullopt;
  }
};

}  // namespace

std::optional<bool> task_status_terminal(std::string_view status) noexcept {
  if (status == "working" || status == "input_required") return false;
  if (status == "completed" || status == "cancelled" || status == "failed") return true;
  return std::nullopt;
}

PublishDecoder::PublishDecoder(PublishLimits limits) : impl_(std::make_unique<Impl>()) { impl_->limits = limits; }
PublishDecoder::~PublishDecoder() = default;

PublishLimitHit PublishDecoder::limit_hit() const noexcept { return impl_->limit_hit; }

Result<DecodedPublish> PublishDecoder::decode(std::string_view body, const TenantTable& tenants,
                                              std::optional<std::string_view> forced_tenant, bool for_backplane) {
  Impl& m = *impl_;
  m.limit_hit = PublishLimitHit::None;
  // Validate the body as sent, every byte: minify does not validate, and it joins tokens
  // ("1 2" -> "12", "tr ue" -> "true"), so a body checked only after minifying could be
  // invalid JSON that is accepted (found by fuzz_publish_decoder).
  m.raw.assign(body);
  m.raw.resize(body.size() + simdjson::SIMDJSON_PADDING);
  simdjson::dom::element root;
  if (m.validator.parse(m.raw.data(), body.size(), false).get(root)) {
    return Error{rpc_code::kParseError, "body is not valid JSON"};
  }
  // Then minify: raw values are copied straight into the payload with no newline that
  // would break an SSE `data:` line or a stdio frame.
  m.buf.resize(body.size() + simdjson::SIMDJSON_PADDING);
  std::size_t len = 0;
  if (simdjson::minify(m.raw.data(), body.size(), m.buf.data(), len) != simdjson::SUCCESS) {
    return Error{rpc_code::kParseError, "body is not valid JSON"};
  }
  od::document doc;
  if (m.parser.iterate(m.buf.data(), len, m.buf.size()).get(doc)) {
    return Error{rpc_code::kParseError, "body is not valid JSON"};
  }
  m.parts.clear();
  m.tasks.clear();
  std::size_t accepted = 0;
  std::vector<Notification> notes;
  m.note_of_part.clear();

  auto decode_one = [&](od::value v, std::size_t index, bool many) -> std::optional<Error> {
    od::object obj;
    if (v.get_object().get(obj)) return bad(index, many, "expected a JSON object {\"method\", \"params\", \"tenant\"}");
    NotificationParts p;
    TaskFields task;
    std::string_view method, tenant;
    bool has_method = false, has_tenant = false, has_uri = false;
    for (auto field : obj) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return bad(index, many, "body is not valid JSON");
      od::value val = field.value();
      if (key == "method") {
        if (val.get_string().get(method)) return bad(index, many, "\"method\" must be a string");
        has_method = true;
      } else if (key == "tenant") {
        if (val.get_string().get(tenant)) return bad(index, many, "\"tenant\" must be a string");
        has_tenant = true;
      } else if (key == "jsonrpc") {
        std::string_view ver;
        if (val.get_string().get(ver) || ver != "2.0") return bad(index, many, "\"jsonrpc\" must be \"2.0\"");
      } else if (key == "params") {
        od::object params;
        if (val.get_object().get(params)) return bad(index, many, "\"params\" must be an object");
        for (auto pf : params) {
          std::string_view pkey;
          if (pf.unescaped_key().get(pkey)) return bad(index, many, "body is not valid JSON");
          od::value pv = pf.value();
          if (pkey == "_meta") {
            od::object meta;
            if (pv.get_object().get(meta)) return bad(index, many, "\"params._meta\" must be an object");
            p.has_meta = true;
            // The server owns the subscriptionId key: a publisher's value would be wrong.
            if (read_members(meta, kSubscriptionIdKey, p.meta)) return bad(index, many, "body is not valid JSON");
          } else if (pkey == "uri") {
            std::string_view raw = pv.raw_json_token();
            if (pv.get_string().get(p.uri)) return bad(index, many, "\"params.uri\" must be a string");
            p.params.emplace_back(pkey, raw);
            has_uri = true;
          } else if (pkey == "taskId" || pkey == "status") {
            // A task's key and status, read unescaped; whether they must be there depends on the
            // method, which may come after params.
            // Any other method passes them through as sent, whatever their type (found by
            // fuzz_publish_decoder: an object read as one token lost its members).
            od::json_type type;
            if (pv.type().get(type)) return bad(index, many, "body is not valid JSON");
            std::string_view raw, text;
            bool is_string = type == od::json_type::string;
            if (is_string) {
              raw = pv.raw_json_token();
              if (pv.get_string().get(text)) return bad(index, many, "body is not valid JSON");
            } else if (raw_value(pv, raw)) {
              return bad(index, many, "body is not valid JSON");
            }
            (pkey == "taskId" ? task.id : task.status) = is_string ? std::optional(text) : std::nullopt;
            (pkey == "taskId" ? task.has_id : task.has_status) = true;
            p.params.emplace_back(pkey, raw);
            task.bytes += pkey.size() + raw.size();
          } else {
            std::string_view raw;
            if (raw_value(pv, raw)) return bad(index, many, "body is not valid JSON");
            p.params.emplace_back(pkey, raw);
            task.note(pkey, raw);
          }
        }
      } else {
        return bad(index, many, "unknown field \"" + std::string(key) + "\" (expected method, params, tenant)");
      }
    }
    if (!has_method) return bad(index, many, "missing \"method\"");
    auto kind = kind_from_method(method);
    if (!kind) {
      return bad(
          index, many,
          "unknown method \"" + std::string(method) +
              "\" (expected notifications/resources/updated, notifications/{tools,prompts,resources}/list_changed or "
              "notifications/tasks)");
    }
    p.kind = *kind;
    if (p.kind == Kind::ResourceUpdated) {
      if (!has_uri || p.uri.empty())
        return bad(index, many, "notifications/resources/updated needs a non-empty \"params.uri\"");
      if (p.uri.size() > m.limits.max_uri_length) {
        m.limit_hit = PublishLimitHit::UriLength;
        return bad(index, many, "\"params.uri\" is longer than " + std::to_string(m.limits.max_uri_length) + " bytes");
      }
    } else if (p.kind == Kind::TaskStatus) {
      if (auto problem = task.check(m.limits, m.limit_hit)) return bad(index, many, std::move(*problem));
      p.uri = *task.id;  // the key: a task's listeners are found by its id
    } else {
      p.uri = {};  // list_changed carries no key; a uri member is passed through untouched
    }
    if (has_tenant) {
      if (tenant.empty() || tenant.size() > 256) return bad(index, many, "\"tenant\" must be 1..256 bytes");
      if (forced_tenant && *forced_tenant != tenant) {
        Error e = bad(index, many, "this publisher may not publish to tenant \"" + std::string(tenant) + "\"");
        e.code = rpc_code::kForbidden;
        return e;
      }
    } else if (forced_tenant) {
      tenant = *forced_tenant;
    }
    ++accepted;
    if (for_backplane) {
      std::string_view name = has_tenant || forced_tenant ? tenant : kDefaultTenantName;
      // Built in place, field by field: clang 14 (the fuzz build) has no parenthesized aggregate init.
      Notification& n = notes.emplace_back();
      n.kind = p.kind;
      n.tenant = std::string(name);
      n.uri = std::string(p.uri);
      n.message = encode_publish_message(p, name);
    } else {
      notes.emplace_back().kind = p.kind;  // stays here: no copy for other nodes
    }
    // Looked up, never created: a tenant with no clients has nobody to deliver to.
    std::optional<TenantId> id =
        has_tenant || forced_tenant ? tenants.find(tenant) : std::optional<TenantId>(kDefaultTenant);
    if (p.kind == Kind::TaskStatus) {
      // Kept whether or not its tenant has clients here: its late listener may be the first.
      Impl::PendingTask& t = m.tasks.emplace_back();
      t.tenant = std::string(has_tenant || forced_tenant ? tenant : kDefaultTenantName);
      t.ttl_ms = task.ttl();
      t.terminal = task.terminal();
      if (id) t.part = m.parts.size();
      else t.own = p;
    }
    if (!id) return std::nullopt;
    p.tenant = *id;
    m.parts.push_back(std::move(p));
    m.note_of_part.push_back(notes.size() - 1);
    return std::nullopt;
  };

  od::json_type type;
  if (doc.type().get(type)) return Error{rpc_code::kParseError, "body is not valid JSON"};
  if (type == od::json_type::array) {
    od::array arr;
    if (doc.get_array().get(arr)) return Error{rpc_code::kParseError, "body is not valid JSON"};
    std::size_t i = 0;
    for (auto el : arr) {
      od::value v;
      if (el.get(v)) return Error{rpc_code::kParseError, "body is not valid JSON"};
      if (i >= m.limits.max_notifications) {
        return Error{rpc_code::kInvalidParams,
                     "more than " + std::to_string(m.limits.max_notifications) + " notifications in one body"};
      }
      if (auto err = decode_one(v, i, true)) return std::move(*err);
      ++i;
    }
  } else if (type == od::json_type::object) {
    od::value v;
    if (doc.get_value().get(v)) return Error{rpc_code::kParseError, "body is not valid JSON"};
    if (auto err = decode_one(v, 0, false)) return std::move(*err);
  } else {
    return Error{rpc_code::kInvalidParams, "body must be a notification object or an array of them"};
  }

  DecodedPublish out;
  out.accepted = accepted;
  out.payloads.reserve(m.parts.size());
  for (const NotificationParts& p : m.parts) out.payloads.push_back(encode_notification(p));
  for (std::size_t i = 0; i < m.note_of_part.size(); ++i) notes[m.note_of_part[i]].local = out.payloads[i];
  out.notifications = std::move(notes);
  out.tasks.reserve(m.tasks.size());
  for (Impl::PendingTask& t : m.tasks) {
    TaskState& st = out.tasks.emplace_back();
    st.tenant = std::move(t.tenant);
    st.payload = t.part ? out.payloads[*t.part] : encode_notification(t.own);
    st.ttl_ms = t.ttl_ms;
    st.terminal = t.terminal;
  }
  return out;
}

}  // namespace mcpfan

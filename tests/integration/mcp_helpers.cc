// MCP request builders, listen/publish/metrics helpers.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <sstream>

#include "harness.h"

namespace itest {

std::string Envelope(std::string_view version) {
  std::string e = R"({"io.modelcontextprotocol/protocolVersion":")";
  e.append(version);
  e.append(R"(","io.modelcontextprotocol/clientInfo":{"name":"mcpfan-itest","version":"1.0.0"},)"
           R"("io.modelcontextprotocol/clientCapabilities":{}})");
  return e;
}

std::string RpcBody(std::string_view id_json, std::string_view method,
                    std::string_view extra_params_fields, std::string_view version) {
  std::string b = R"({"jsonrpc":"2.0","id":)";
  b.append(id_json).append(R"(,"method":")").append(method).append(R"(","params":{"_meta":)");
  b.append(Envelope(version));
  if (!extra_params_fields.empty()) b.append(",").append(extra_params_fields);
  b.append("}}");
  return b;
}

std::vector<Header> McpHeaders(std::string_view version, std::string_view method) {
  std::vector<Header> h{{"Content-Type", "application/json"},
                        {"Accept", "application/json, text/event-stream"}};
  if (!version.empty()) h.push_back({"MCP-Protocol-Version", std::string(version)});
  if (!method.empty()) h.push_back({"Mcp-Method", std::string(method)});
  return h;
}

std::vector<Header> McpHeaders(std::string_view version, std::string_view method, std::string_view name) {
  std::vector<Header> h = McpHeaders(version, method);
  if (!name.empty()) h.push_back({"Mcp-Name", std::string(name)});
  return h;
}

std::string McpPost(std::string_view body, std::vector<Header> headers) {
  return BuildRequest("POST", "/mcp", headers, body);
}

std::string ListenRequest(std::string_view id_json, std::string_view notifications_json,
                          std::string_view version) {
  std::string fields = R"("notifications":)";
  fields.append(notifications_json);
  return McpPost(RpcBody(id_json, "subscriptions/listen", fields, version),
                 McpHeaders(version, "subscriptions/listen"));
}

::testing::AssertionResult OpenListen(SseStream& s, int port, std::string_view id_json,
                                      std::string_view notifications_json,
                                      std::string_view expected_ack_notifications) {
  std::string err;
  if (!s.Open(port, ListenRequest(id_json, notifications_json), kIo, &err)) {
    return ::testing::AssertionFailure() << "listen " << id_json << ": " << err;
  }
  if (!s.is_sse()) {
    return ::testing::AssertionFailure() << "listen " << id_json << ": want 200 text/event-stream, got HTTP "
                                         << s.head().status << " "
                                         << s.head().Get("content-type").value_or("") << ": "
                                         << s.head().body.substr(0, 500);
  }
  const HttpResponse& h = s.head();
  if (h.Get("cache-control") != "no-cache" || h.Get("x-accel-buffering") != "no" || !h.chunked) {
    return ::testing::AssertionFailure() << "listen " << id_json
                                         << ": want Cache-Control: no-cache, X-Accel-Buffering: no and chunked; got "
                                         << h.Get("cache-control").value_or("<none>") << ", "
                                         << h.Get("x-accel-buffering").value_or("<none>") << ", "
                                         << h.Get("transfer-encoding").value_or("<none>");
  }
  auto ack = s.NextMessage(kIo, &err);
  if (!ack) return ::testing::AssertionFailure() << "listen " << id_json << ": no acknowledgement: " << err;
  if (ack->GetString({"method"}) != "notifications/subscriptions/acknowledged") {
    return ::testing::AssertionFailure() << "first event is not the acknowledgement: " << ack->text();
  }
  if (auto m = JsonMatches(ack->Get({"params", "_meta", kSubId}), id_json); !m) {
    return ::testing::AssertionFailure() << "ack subscriptionId: " << m.message() << "\n  ack: " << ack->text();
  }
  if (!expected_ack_notifications.empty()) {
    if (auto m = JsonMatches(ack->Get({"params", "notifications"}), expected_ack_notifications); !m) {
      return ::testing::AssertionFailure() << "ack notifications: " << m.message() << "\n  ack: " << ack->text();
    }
  }
  if (!s.id_lines().empty()) {
    return ::testing::AssertionFailure() << "stream carries an SSE id field: " << s.id_lines().front();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsNotification(const Json& msg, std::string_view method,
                                          std::string_view sid_json, std::string_view expected_params) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "notification " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"id"})) return fail() << "a notification must not carry an id";
  if (msg.GetString({"method"}) != std::string(method)) return fail() << "want method " << method;
  if (auto m = JsonMatches(msg.Get({"params", "_meta", kSubId}), sid_json); !m) {
    return fail() << "subscriptionId: " << m.message();
  }
  Json want(expected_params);
  if (!want.ok()) return ::testing::AssertionFailure() << "test bug: bad expected params " << expected_params;
  simdjson::dom::object got_params = *msg.Get({"params"});
  // Every field except _meta verbatim, both ways.
  size_t got_fields = 0;
  for (auto f : got_params) {
    if (f.key == "_meta") continue;
    ++got_fields;
    auto w = Child(want.root(), f.key);
    if (!w) return fail() << "unexpected params field '" << f.key << "'";
    if (!JsonEqual(f.value, *w)) return fail() << "params." << f.key << " want " << Dump(*w);
  }
  size_t want_fields = 0;
  for (auto f : simdjson::dom::object(want.root())) want_fields += f.key == "_meta" ? 0 : 1;
  if (got_fields != want_fields) return fail() << "params lacks fields of " << expected_params;
  // _meta: the publisher's keys verbatim plus the subscription id.
  simdjson::dom::object got_meta = *msg.Get({"params", "_meta"});
  auto want_meta = want.Get({"_meta"});
  size_t got_meta_fields = 0;
  for (auto f : got_meta) {
    if (f.key == kSubId) continue;
    ++got_meta_fields;
    auto w = want_meta ? Child(*want_meta, f.key) : std::nullopt;
    if (!w) return fail() << "unexpected _meta key '" << f.key << "'";
    if (!JsonEqual(f.value, *w)) return fail() << "_meta." << f.key << " want " << Dump(*w);
  }
  size_t want_meta_fields = want_meta ? simdjson::dom::object(*want_meta).size() : 0;
  if (got_meta_fields != want_meta_fields) return fail() << "_meta lacks publisher keys of " << expected_params;
  return ::testing::AssertionSuccess();
}

std::optional<HttpResponse> Publish(int port, std::string_view body, std::vector<Header> extra) {
  extra.insert(extra.begin(), {"Content-Type", "application/json"});
  return Roundtrip(port, BuildRequest("POST", "/v1/publish", extra, body));
}

::testing::AssertionResult PublishOk(int port, std::string_view body, int64_t accepted) {
  std::string err;
  auto r = Roundtrip(port, BuildRequest("POST", "/v1/publish", {{"Content-Type", "application/json"}}, body),
                     kIo, &err);
  if (!r) return ::testing::AssertionFailure() << "publish: " << err;
  if (r->status != 202) {
    return ::testing::AssertionFailure() << "publish: want 202, got " << r->status << " " << r->body
                                         << "\n  body sent: " << body.substr(0, 300);
  }
  Json j(r->body);
  if (!j.ok()) return ::testing::AssertionFailure() << "publish reply is not JSON: " << r->body;
  auto n = j.GetInt({"accepted"});
  if (!n || *n != accepted) {
    return ::testing::AssertionFailure() << "publish: want {\"accepted\":" << accepted << "}, got " << r->body;
  }
  return ::testing::AssertionSuccess();
}

std::optional<double> ReadMetric(int port, std::string_view name) {
  auto r = Roundtrip(port, BuildRequest("GET", "/metrics", {}));
  if (!r || r->status != 200) return std::nullopt;
  std::istringstream in(r->body);
  std::string line;
  std::optional<double> sum;
  while (std::getline(in, line)) {  // bounded by the body
    if (line.empty() || line[0] == '#') continue;
    std::string_view l(line);
    if (l.substr(0, name.size()) != name) continue;
    std::string_view rest = l.substr(name.size());
    if (!rest.empty() && rest[0] == '{') {
      size_t close = rest.find('}');
      if (close == std::string_view::npos) continue;
      rest = rest.substr(close + 1);
    }
    if (rest.empty() || (rest[0] != ' ' && rest[0] != '\t')) continue;  // a longer metric name
    sum = sum.value_or(0) + std::strtod(std::string(rest).c_str(), nullptr);
  }
  return sum;
}

::testing::AssertionResult PollMetric(int port, std::string_view name,
                                      const std::function<bool(double)>& pred, Ms timeout) {
  Deadline end = After(timeout);
  std::optional<double> last;
  for (int i = 0; i < 100000; ++i) {  // bounded by the deadline, and by count
    last = ReadMetric(port, name);
    if (last && pred(*last)) return ::testing::AssertionSuccess();
    if (Clock::now() >= end) break;
    std::this_thread::sleep_for(Ms(20));
  }
  auto f = ::testing::AssertionFailure() << "metric " << name << " did not reach the expected value within "
                                         << timeout.count() << " ms; last: ";
  if (last) {
    f << *last;
  } else {
    f << "<absent from /metrics>";
  }
  return f;
}

::testing::AssertionResult PollMetricEq(int port, std::string_view name, double want, Ms timeout) {
  auto r = PollMetric(port, name, [want](double v) { return v == want; }, timeout);
  if (!r) r << " (want " << want << ")";
  return r;
}

::testing::AssertionResult ServesListenAndPublish(int port) {
  static std::atomic<int> counter{0};
  std::string uri = "health:///probe/" + std::to_string(counter++);
  SseStream s;
  std::string notif = R"({"resourceSubscriptions":[")" + uri + R"("]})";
  if (auto r = OpenListen(s, port, R"("health")", notif, notif); !r) return r << " (health probe)";
  std::string body = R"({"method":"notifications/resources/updated","params":{"uri":")" + uri + R"("}})";
  if (auto r = PublishOk(port, body, 1); !r) return r << " (health probe)";
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  if (!m) return ::testing::AssertionFailure() << "health probe: no delivery: " << err;
  return IsNotification(*m, "notifications/resources/updated", R"("health")", R"({"uri":")" + uri + R"("})");
}

std::string DescribeEvents(const std::deque<SseEvent>& evs) {
  std::string out;
  for (const auto& e : evs) out.append("\n    [").append(e.event).append("] ").append(e.data.substr(0, 300));
  return out.empty() ? "<none>" : out;
}

uint64_t RaiseFdLimit(uint64_t want) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < want) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(want, rl.rlim_max);
    setrlimit(RLIMIT_NOFILE, &rl);
    getrlimit(RLIMIT_NOFILE, &rl);
  }
  return rl.rlim_cur;
}

// ---- task status (the Tasks extension)

namespace {
constexpr std::string_view kNoCaps = R"("io.modelcontextprotocol/clientCapabilities":{})";
constexpr std::string_view kTasksCaps =
    R"("io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}})";

}  // namespace

std::string TaskListenBody(std::string_view id_json, std::string_view notifications_json, bool declare) {
  std::string body = RpcBody(id_json, "subscriptions/listen", std::string(R"("notifications":)") +
                                                                   std::string(notifications_json));
  if (declare) body.replace(body.find(kNoCaps), kNoCaps.size(), kTasksCaps);
  return body;
}
std::string TaskListen(std::string_view id_json, std::string_view notifications_json, bool declare) {
  return McpPost(TaskListenBody(id_json, notifications_json, declare), McpHeaders(kV2026, "subscriptions/listen"));
}

std::string TaskParams(std::string_view id, std::string_view status, std::string_view extra) {
  std::string p = R"({"taskId":")" + std::string(id) + R"(","status":")" + std::string(status) +
                  R"(","createdAt":"2026-11-28T10:00:00Z","lastUpdatedAt":"2026-11-28T10:00:01Z","ttlMs":60000)";
  if (status == "completed") p += R"(,"result":{"content":[{"type":"text","text":"done"}],"isError":false})";
  if (status == "failed") p += R"(,"error":{"code":-32603,"message":"boom"})";
  if (status == "input_required") p += R"(,"inputRequests":{"name":{"method":"elicitation/create","params":{}}})";
  p += extra;
  return p + "}";
}
std::string TaskPublish(std::string_view id, std::string_view status, std::string_view tenant) {
  std::string body = "{";
  if (!tenant.empty()) body += R"("tenant":")" + std::string(tenant) + R"(",)";
  return body + R"("method":"notifications/tasks","params":)" + TaskParams(id, status) + "}";
}

::testing::AssertionResult OpenTaskListen(SseStream& s, int port, std::string_view id_json,
                                          std::string_view notifications_json, std::string_view expected_ack) {
  std::string err;
  if (!s.Open(port, TaskListen(id_json, notifications_json), kIo, &err)) return ::testing::AssertionFailure() << err;
  if (!s.is_sse()) {
    return ::testing::AssertionFailure() << "HTTP " << s.head().status << ": " << s.head().body.substr(0, 400);
  }
  auto ack = s.NextMessage(kIo, &err);
  if (!ack) return ::testing::AssertionFailure() << "no acknowledgement: " << err;
  return IsNotification(*ack, "notifications/subscriptions/acknowledged", id_json,
                        R"({"notifications":)" + std::string(expected_ack) + "}");
}

::testing::AssertionResult NextTask(SseStream& s, std::string_view sid, std::string_view id, std::string_view status) {
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  if (!m) return ::testing::AssertionFailure() << "no event: " << err;
  return IsNotification(*m, "notifications/tasks", sid, TaskParams(id, status));
}

}  // namespace itest

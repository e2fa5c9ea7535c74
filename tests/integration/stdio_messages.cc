// stdio-framed MCP messages (listen, cancel, initialize) and the assertions on replies.
#include "stdio_client.h"

namespace itest {

std::string StdioListen(std::string_view id_json, std::string_view notifications_json, std::string_view version) {
  std::string fields = R"("notifications":)";
  fields.append(notifications_json);
  return RpcBody(id_json, "subscriptions/listen", fields, version);
}

std::string StdioCancel(std::string_view id_json) {
  std::string b = R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":)";
  b.append(id_json).append(R"(,"_meta":)").append(Envelope(kV2026)).append("}}");
  return b;
}

std::string StdioInitialize(std::string_view id_json, std::string_view version) {
  std::string b = R"({"jsonrpc":"2.0","id":)";
  b.append(id_json).append(R"(,"method":"initialize","params":{"protocolVersion":")");
  b.append(version).append(R"(","capabilities":{},"clientInfo":{"name":"mcpfan-itest","version":"1.0.0"}}})");
  return b;
}

::testing::AssertionResult IsAck(const Json& msg, std::string_view id_json, std::string_view expected_notifications) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "ack " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"id"})) return fail() << "the acknowledgement is a notification (no id)";
  if (msg.GetString({"method"}) != "notifications/subscriptions/acknowledged") {
    return fail() << "want method notifications/subscriptions/acknowledged";
  }
  if (auto m = JsonMatches(msg.Get({"params", "_meta", kSubId}), id_json); !m)
    return fail() << "subscriptionId: " << m.message();
  if (!expected_notifications.empty()) {
    if (auto m = JsonMatches(msg.Get({"params", "notifications"}), expected_notifications); !m) {
      return fail() << "notifications: " << m.message();
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsCompleteResult(const Json& msg, std::string_view id_json) {
  std::string want =
      R"({"resultType":"complete","_meta":{")" + std::string(kSubId) + "\":" + std::string(id_json) + "}}";
  return IsResult(msg, id_json, want);
}

::testing::AssertionResult IsResult(const Json& msg, std::string_view id_json, std::string_view result_json) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "reply " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"error"}) || msg.Has({"method"})) return fail() << "want a plain result reply";
  if (auto m = JsonMatches(msg.Get({"id"}), id_json); !m) return fail() << "id: " << m.message();
  if (auto m = JsonMatches(msg.Get({"result"}), result_json); !m) return fail() << "result: " << m.message();
  size_t keys = simdjson::dom::object(msg.root()).size();
  if (keys != 3) return fail() << "want exactly jsonrpc, id, result";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsError(const Json& msg, std::string_view id_json, int64_t code) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "reply " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"result"}) || msg.Has({"method"})) return fail() << "want an error reply";
  bool id_ok = false;
  std::string why;
  for (size_t start = 0; start <= id_json.size();) {
    size_t bar = id_json.find('|', start);
    std::string_view alt = id_json.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    auto m = JsonMatches(msg.Get({"id"}), alt);
    if (m) id_ok = true;
    why = m.message();
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  if (!id_ok) return fail() << "id: want " << id_json << "; " << why;
  auto c = msg.GetInt({"error", "code"});
  if (!c || *c != code) return fail() << "want error.code " << code;
  auto text = msg.GetString({"error", "message"});
  if (!text || text->empty()) return fail() << "want a non-empty error.message";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult IsPlainNotification(const Json& msg, std::string_view method, std::string_view params_json) {
  auto fail = [&]() { return ::testing::AssertionFailure() << "notification " << msg.text() << "\n  "; };
  if (!msg.ok()) return ::testing::AssertionFailure() << "not JSON: " << msg.error();
  if (msg.GetString({"jsonrpc"}) != "2.0") return fail() << "want jsonrpc \"2.0\"";
  if (msg.Has({"id"})) return fail() << "a notification must not carry an id";
  if (msg.GetString({"method"}) != std::string(method)) return fail() << "want method " << method;
  if (msg.Has({"params", "_meta", kSubId}))
    return fail() << "a 2025 session notification must not carry a subscriptionId";
  if (auto m = JsonMatches(msg.Get({"params"}), params_json); !m)
    return fail() << "params not as published: " << m.message();
  size_t keys = simdjson::dom::object(msg.root()).size();
  if (keys != 3) return fail() << "want exactly jsonrpc, method, params";
  return ::testing::AssertionSuccess();
}

}  // namespace itest

// 2025-era session helpers: initialize, session POSTs, GET stream, DELETE.
#include "session_client.h"

#include <cctype>

namespace itest {

std::string RequestWithHost(std::string_view method, std::string_view path, std::string_view host,
                            const std::vector<Header>& headers, std::string_view body) {
  std::string r;
  r.append(method).append(" ").append(path).append(" HTTP/1.1\r\nHost: ").append(host).append("\r\n");
  for (const auto& h : headers) r.append(h.name).append(": ").append(h.value).append("\r\n");
  if (!body.empty() || method == "POST")
    r.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  r.append("\r\n").append(body);
  return r;
}

std::string Rpc2025(std::string_view id_json, std::string_view method, std::string_view params_json) {
  std::string b = R"({"jsonrpc":"2.0","id":)";
  b.append(id_json).append(R"(,"method":")").append(method).append("\"");
  if (!params_json.empty()) b.append(R"(,"params":)").append(params_json);
  b.append("}");
  return b;
}

::testing::AssertionResult Initialize(int port, std::string* sid, std::string_view id_json) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::string(id_json) +
                     R"(,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
                     R"("clientInfo":{"name":"mcpfan-itest","version":"1.0.0"}}})";
  // No Mcp-Session-Id and no MCP-Protocol-Version, as the SDK sends it.
  RpcReply r = McpCall(port, McpPost(body, McpHeaders("", "")));
  auto fail = [&]() {
    return ::testing::AssertionFailure() << "initialize: [HTTP " << r.http.status << "] "
                                         << (r.msg.ok() ? r.msg.text() : r.http.body.substr(0, 500)) << " "
                                         << r.err << "\n  ";
  };
  if (r.http.status != 200) return fail() << "want HTTP 200";
  if (!r.msg.ok()) return fail() << "reply is not JSON";
  auto h = r.http.Get("mcp-session-id");
  if (!h || h->empty()) return fail() << "no Mcp-Session-Id header";
  for (char c : *h) {
    if (c < 0x21 || c > 0x7e) return fail() << "Mcp-Session-Id must be visible ASCII: '" << *h << "'";
  }
  if (auto m = JsonMatches(r.msg.Get({"id"}), id_json); !m) return fail() << "id: " << m.message();
  if (r.msg.GetString({"result", "protocolVersion"}) != std::string(kV2025))
    return fail() << "want protocolVersion 2025-11-25";
  if (r.msg.Has({"result", "resultType"})) return fail() << "a 2025 result must not carry resultType";
  *sid = *h;
  return ::testing::AssertionSuccess();
}

std::string SessionPostRequest(std::string_view sid, std::string_view body) {
  auto h = McpHeaders(kV2025, "");
  h.push_back({"Mcp-Session-Id", std::string(sid)});
  return McpPost(body, h);
}

RpcReply SessionCall(int port, std::string_view sid, std::string_view body, Ms timeout) {
  return McpCall(port, SessionPostRequest(sid, body), timeout);
}

::testing::AssertionResult SessionSubscribe(int port, std::string_view sid, std::string_view uri,
                                            std::string_view id_json, bool subscribe) {
  std::string params = R"({"uri":")" + std::string(uri) + R"("})";  // test URIs need no escaping
  const char* method = subscribe ? "resources/subscribe" : "resources/unsubscribe";
  RpcReply r = SessionCall(port, sid, Rpc2025(id_json, method, params));
  auto fail = [&]() {
    return ::testing::AssertionFailure() << method << " " << uri << ": [HTTP " << r.http.status << "] "
                                         << (r.msg.ok() ? r.msg.text() : r.http.body.substr(0, 500)) << " " << r.err
                                         << "\n  ";
  };
  if (r.http.status != 200) return fail() << "want HTTP 200";
  if (!r.msg.ok()) return fail() << "reply is not JSON";
  if (auto m = JsonMatches(r.msg.Get({"id"}), id_json); !m) return fail() << "id: " << m.message();
  if (auto m = JsonMatches(r.msg.Get({"result"}), "{}"); !m)
    return fail() << "result must be exactly {}: " << m.message();
  return ::testing::AssertionSuccess();
}

std::string SessionGetRequest(std::string_view sid, std::string_view last_event_id) {
  std::vector<Header> h = {{"Accept", "text/event-stream"},
                           {"Mcp-Session-Id", std::string(sid)},
                           {"MCP-Protocol-Version", std::string(kV2025)}};
  if (!last_event_id.empty()) h.push_back({"Last-Event-ID", std::string(last_event_id)});
  return BuildRequest("GET", "/mcp", h);
}

::testing::AssertionResult OpenSessionStream(SseStream& s, int port, std::string_view sid,
                                             std::string_view last_event_id) {
  std::string err;
  if (!s.Open(port, SessionGetRequest(sid, last_event_id), kIo, &err)) {
    return ::testing::AssertionFailure() << "GET /mcp (session " << sid << "): " << err;
  }
  if (!s.is_sse() || !s.head().chunked) {
    return ::testing::AssertionFailure() << "GET /mcp: want 200 text/event-stream chunked, got HTTP "
                                         << s.head().status << " " << s.head().Get("content-type").value_or("<none>")
                                         << " " << s.head().body.substr(0, 300);
  }
  s.AllowIds();
  // Sessions here are 2025-11-25 (Initialize): the stream starts with its priming event.
  auto prime = s.Next(kIo);
  if (!prime) return ::testing::AssertionFailure() << "GET /mcp: no priming event";
  if (!prime->data.empty() || prime->id.empty()) {
    return ::testing::AssertionFailure()
           << "GET /mcp: first event must be the priming event (an id, empty data), got id '" << prime->id << "' data '"
           << prime->data << "'";
  }
  return ::testing::AssertionSuccess();
}

int DeleteSession(int port, std::string_view sid) {
  auto r = Roundtrip(port, BuildRequest("DELETE", "/mcp",
                                        {{"Mcp-Session-Id", std::string(sid)},
                                         {"MCP-Protocol-Version", std::string(kV2025)}}));
  return r ? r->status : 0;
}

}  // namespace itest

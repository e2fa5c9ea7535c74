// 2025-era MCP sessions over HTTP (design §2.2): initialize, session POSTs, the GET
// stream, DELETE. Built on the harness's Conn/SseStream/McpCall.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace itest {

inline constexpr std::string_view kV2025 = "2025-11-25";

// Raw HTTP request bytes with a caller-chosen Host header (BuildRequest always sends
// `Host: 127.0.0.1`). Adds Content-Length for a POST or a non-empty body.
std::string RequestWithHost(std::string_view method, std::string_view path, std::string_view host,
                            const std::vector<Header>& headers, std::string_view body = {});

// POST initialize (no session header). Checks 200, application/json, a visible-ASCII
// Mcp-Session-Id header and a result with protocolVersion; stores the id in *sid.
::testing::AssertionResult Initialize(int port, std::string* sid, std::string_view id_json = "0");

// POST /mcp with the session's headers (Mcp-Session-Id, MCP-Protocol-Version 2025-11-25).
std::string SessionPostRequest(std::string_view sid, std::string_view body);
RpcReply SessionCall(int port, std::string_view sid, std::string_view body, Ms timeout = kIo);
// {"jsonrpc":"2.0","id":<id>,"method":<m>,"params":<params>} (params omitted when empty).
std::string Rpc2025(std::string_view id_json, std::string_view method, std::string_view params_json = {});

// resources/subscribe or unsubscribe {uri}; the reply must be 200 {"result":{}} with the id.
::testing::AssertionResult SessionSubscribe(int port, std::string_view sid, std::string_view uri,
                                            std::string_view id_json = "1", bool subscribe = true);

// GET /mcp for the session; with `last_event_id`, a resume (Last-Event-ID header).
std::string SessionGetRequest(std::string_view sid, std::string_view last_event_id = {});
// GET /mcp for the session: must answer 200 text/event-stream (chunked) and, for a 2025-11-25
// session, start with the priming event (`id: <cursor>` and empty data), which it consumes:
// its id is then s.last_event_id(). The stream accepts event ids.
::testing::AssertionResult OpenSessionStream(SseStream& s, int port, std::string_view sid,
                                             std::string_view last_event_id = {});

// DELETE /mcp for the session; returns the status (0 on transport failure).
int DeleteSession(int port, std::string_view sid);

}  // namespace itest

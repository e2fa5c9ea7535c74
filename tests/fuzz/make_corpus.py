#!/usr/bin/env python3
"""Writes the seed corpus, tests/fuzz/corpus/<target>/<name>: valid and near-valid inputs.

Run it again after changing a seed here (it rewrites every file it names and removes none);
the files are committed, so the fuzz run needs no Python.
"""
import base64
import hashlib
import hmac
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
V26 = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1.0"},
        "io.modelcontextprotocol/clientCapabilities": {}}
SPLIT = b"@@SPLIT@@"


def j(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def rpc(method, params=None, id_=None, with_id=True):
    m = {"jsonrpc": "2.0"}
    if with_id:
        m["id"] = id_
    m["method"] = method
    if params is not None:
        m["params"] = params
    return j(m)


def listen(id_="listen:0", notifications=None, meta=META):
    p = {"_meta": meta}
    if notifications is not None:
        p["notifications"] = notifications
    return rpc("subscriptions/listen", p, id_)


ALL = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True,
       "resourceSubscriptions": ["file:///project/", "file:///project/a.txt", "mem://x"]}

# ---- JSON-RPC messages: the rpc decoder's seeds, and the bodies / lines of the others ----
RPC = {
    "listen_all": listen("listen:0", ALL),
    "listen_int_id": listen(7, {"toolsListChanged": True}),
    "listen_uint64_id": listen(18446744073709551615, {"promptsListChanged": True}),
    "listen_negative_id": listen(-3, {"resourceSubscriptions": ["a://b"]}),
    "listen_no_filter": listen("1"),
    "listen_draft": listen("d", {"toolsListChanged": True},
                           {"io.modelcontextprotocol/protocolVersion": "DRAFT-2026-v1"}),
    "listen_unknown_version": listen("v", {"toolsListChanged": True},
                                     {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}),
    "listen_dup_uris": listen("dup", {"resourceSubscriptions": ["x://a", "x://a", "x://b/", "x://a"]}),
    "listen_unknown_keys": listen("u", {"sampling": True, "toolsListChanged": False, "elicitation": {}}),
    "listen_escaped_uri": listen("e", {"resourceSubscriptions": ["file:///\u00e9t\u00e9/\"q\"\\\n\u0001", "\u2028"]}),
    "listen_empty_uri": listen("x", {"resourceSubscriptions": [""]}),
    "listen_uri_not_string": listen("x", {"resourceSubscriptions": [1, None]}),
    "listen_flag_not_bool": listen("x", {"toolsListChanged": "yes"}),
    "listen_filter_array": listen("x", []),
    "listen_many_uris": listen("m", {"resourceSubscriptions": ["u://%d" % i for i in range(20)]}),
    "listen_long_uri": listen("l", {"resourceSubscriptions": ["file:///" + "a" * 300]}),
    "listen_escaped_key": b'{"jsonrpc":"2.0","id":"k","method":"subscriptions/listen","params":{"_meta":'
                          b'{"io.modelcontextprotocol\\/protocolVersion":"2026-07-28"},"notifications":'
                          b'{"tools\\u004cistChanged":true,"\\u0000":true}}}',
    "listen_task_ids": listen("t", {"taskIds": ["786512e2-9e0d-44bd-8f29-789f320fe840", "t2", "t2"],
                                    "toolsListChanged": True},
                              meta=dict(META, **{"io.modelcontextprotocol/clientCapabilities":
                                                 {"extensions": {"io.modelcontextprotocol/tasks": {}}}})),
    "listen_task_ids_bad": listen("t", {"taskIds": ["", 7]},
                                  meta=dict(META, **{"io.modelcontextprotocol/clientCapabilities": {"extensions": []}})),
    "listen_no_id": rpc("subscriptions/listen", {"_meta": META, "notifications": ALL}, with_id=False),
    "discover": rpc("server/discover", {"_meta": META}, 1),
    "discover_no_params": rpc("server/discover", None, "d"),
    "ping": rpc("ping", {"_meta": META}, "p"),
    "cancelled_string": rpc("notifications/cancelled", {"requestId": "listen:0", "reason": "bye"}, with_id=False),
    "cancelled_int": rpc("notifications/cancelled", {"requestId": 7}, with_id=False),
    "cancelled_bad": rpc("notifications/cancelled", {"requestId": 1.5}, with_id=False),
    "initialize": rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                     "clientInfo": {"name": "c", "version": "1"}}, 0),
    "initialize_2025_06": rpc("initialize", {"protocolVersion": "2025-06-18"}, "i"),
    "initialize_unknown": rpc("initialize", {"protocolVersion": "1999"}, 1),
    "initialized": rpc("notifications/initialized", None, with_id=False),
    "subscribe": rpc("resources/subscribe", {"uri": "file:///project/a.txt"}, 2),
    "unsubscribe": rpc("resources/unsubscribe", {"uri": "file:///project/a.txt"}, 3),
    "subscribe_empty": rpc("resources/subscribe", {"uri": ""}, 4),
    "set_level": rpc("logging/setLevel", {"level": "debug"}, 5),
    "unknown_method": rpc("tools/list", {}, 6),
    "empty_method": b'{"jsonrpc":"2.0","id":1,"method":""}',
    "batch": b"[" + rpc("ping", None, 1) + b"," + rpc("ping", None, 2) + b"]",
    "jsonrpc_1": b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    "no_method": b'{"jsonrpc":"2.0","id":1}',
    "id_null": b'{"jsonrpc":"2.0","id":null,"method":"ping"}',
    "id_float": b'{"jsonrpc":"2.0","id":1.0,"method":"ping"}',
    "id_object": b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    "id_escaped": b'{"jsonrpc":"2.0","id":"\\u0000\\"\\\\\\/\\ud83d\\ude00","method":"ping"}',
    "params_array": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":[1,2]}',
    "meta_not_object": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":[]}}',
    "meta_version_int": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}}',
    "duplicate_keys": b'{"jsonrpc":"2.0","id":1,"id":"two","method":"ping","method":"server/discover"}',
    "whitespace": b' \t\r\n{ "jsonrpc" : "2.0" , "id" : 1 , "method" : "ping" } \r\n',
    "bom": b'\xef\xbb\xbf{"jsonrpc":"2.0","id":1,"method":"ping"}',
    "truncated": listen("listen:0", ALL)[:57],
    "bad_utf8": b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"ping"}',
    "overlong_utf8": b'{"jsonrpc":"2.0","id":"\xc0\xaf","method":"ping"}',
    "lone_high_surrogate": b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
    "lone_low_surrogate": b'{"jsonrpc":"2.0","id":"\\udc00x","method":"ping"}',
    "deep_nesting": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * 1100 + b"]" * 1100 + b"}}",
    "huge_numbers": b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping","params":{"a":1e400,"b":-0.0e-999}}',
    "huge_int_id": b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}',
    "not_object": b'"subscriptions/listen"',
    "empty": b"",
}

# ---- publish bodies ----
TASK = {"taskId": "786512e2-9e0d-44bd-8f29-789f320fe840", "status": "working", "createdAt": "2025-11-25T10:30:00Z",
        "lastUpdatedAt": "2025-11-25T10:40:00Z", "ttlMs": 60000}
PUB = {
    "design_example": j({"tenant": "acme", "method": "notifications/resources/updated",
                         "params": {"uri": "file:///project/config.json", "_meta": {"origin/rev": 42}}}),
    "list_changed": j({"method": "notifications/tools/list_changed"}),
    "array_all_kinds": j([
        {"method": "notifications/resources/updated", "params": {"uri": "file:///project/a.txt", "_meta": {"origin/rev": 42}}},
        {"method": "notifications/tools/list_changed"},
        {"tenant": "beta", "method": "notifications/prompts/list_changed", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": {"uri": "ignored://x"}}]),
    "array_three": j([{"method": "notifications/tools/list_changed"}] * 3),
    "empty_array": b"[]",
    "params_values": j({"method": "notifications/resources/updated",
                        "params": {"uri": "mem://v", "n": -1.5e-3, "t": True, "z": None, "a": [1, {"b": [None]}],
                                   "s": "line\nbreak \u2028 \"q\" \\", "o": {}}}),
    "meta_subscription_id": j({"method": "notifications/resources/updated",
                               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "forged", "k": 1},
                                          "uri": "mem://m"}}),
    "meta_escaped_subscription_id": b'{"method":"notifications/tools/list_changed","params":{"_meta":'
                                    b'{"io.modelcontextprotocol\\/subscriptionId":1,"x":2}}}',
    "empty_meta": j({"method": "notifications/prompts/list_changed", "params": {"_meta": {}}}),
    "two_metas": b'{"method":"notifications/tools/list_changed","params":{"_meta":{"a":1},"x":0,"_meta":{"b":2}}}',
    "two_uris": b'{"method":"notifications/resources/updated","params":{"uri":"a://1","uri":"a://2"}}',
    "escaped_keys": b'{"method":"notifications/resources/updated","params":{"u\\u0072i":"a://\\u00e9","\\u0000k\\n":1,'
                    b'"_meta":{"\\"":"\\ud83d\\ude00"}}}',
    "uri_unicode": j({"method": "notifications/resources/updated", "params": {"uri": "file:///\u65e5\u672c/\u00e9"}}),
    "uri_long": j({"method": "notifications/resources/updated", "params": {"uri": "file:///" + "b" * 300}}),
    "uri_missing": j({"method": "notifications/resources/updated", "params": {}}),
    "uri_empty": j({"method": "notifications/resources/updated", "params": {"uri": ""}}),
    "uri_not_string": j({"method": "notifications/resources/updated", "params": {"uri": ["x"]}}),
    "unknown_field": j({"method": "notifications/tools/list_changed", "id": 1}),
    "unknown_method": j({"method": "notifications/message", "params": {}}),
    "method_not_string": j({"method": 1}),
    "tenant_empty": j({"tenant": "", "method": "notifications/tools/list_changed"}),
    "tenant_long": j({"tenant": "t" * 300, "method": "notifications/tools/list_changed"}),
    "tenant_acme": j({"tenant": "acme", "method": "notifications/tools/list_changed"}),
    "tenant_other": j({"tenant": "other", "method": "notifications/tools/list_changed"}),
    "tenant_twice": b'{"tenant":"other","tenant":"acme","method":"notifications/tools/list_changed"}',
    "params_array": j({"method": "notifications/tools/list_changed", "params": [1]}),
    "meta_array": j({"method": "notifications/tools/list_changed", "params": {"_meta": [1]}}),
    "jsonrpc_1": j({"jsonrpc": "1.0", "method": "notifications/tools/list_changed"}),
    "array_bad_second": j([{"method": "notifications/tools/list_changed"}, 7]),
    "string_body": b'"notifications/tools/list_changed"',
    "whitespace": b' [ {\n "method" : "notifications/resources/updated" ,\t"params":{ "uri" : "a://b" } } ] ',
    "truncated": b'{"method":"notifications/resources/updated","params":{"uri":"a://b"',
    "bad_utf8": b'{"method":"notifications/resources/updated","params":{"uri":"a://\xed\xa0\x80"}}',
    "lone_surrogate_key": b'{"method":"notifications/tools/list_changed","params":{"\\udc00":1,"_meta":{"\\ud800":2}}}',
    "deep_nesting": b'{"method":"notifications/tools/list_changed","params":{"d":' + b"[" * 1100 + b"]" * 1100 + b"}}",
    "deep_ok": b'{"method":"notifications/tools/list_changed","params":{"d":' + b"[" * 500 + b"]" * 500 + b"}}",
    "huge_numbers": b'{"method":"notifications/tools/list_changed","params":{"a":1e400,"b":18446744073709551616,"c":-0}}',
    "trailing_garbage": b'{"method":"notifications/tools/list_changed"}x',
    # notifications/tasks (the Tasks extension): every status, and the ways a task is refused
    "task_working": j({"method": "notifications/tasks", "params": dict(TASK, statusMessage="step 2 of 5",
                                                                        pollIntervalMs=5000)}),
    "task_completed": j({"tenant": "acme", "method": "notifications/tasks", "params": dict(
        TASK, taskId="t1", status="completed", _meta={"origin/rev": 3},
        result={"content": [{"type": "text", "text": "Operation completed successfully."}], "isError": False})}),
    "task_failed": j({"method": "notifications/tasks", "params": dict(
        TASK, taskId="t2", status="failed", ttlMs=None, error={"code": -32603, "message": "boom"})}),
    "task_input_required": j({"method": "notifications/tasks", "params": dict(
        TASK, taskId="t3", status="input_required", requestState="eyJzIjoxfQ==",
        inputRequests={"elicit-name": {"method": "elicitation/create", "params": {"message": "name?"}}})}),
    "task_cancelled_array": j([{"method": "notifications/tasks", "params": dict(TASK, taskId="a\u0000b",
                                                                               status="cancelled", ttlMs=0)},
                               {"method": "notifications/tools/list_changed"}]),
    "task_bad_status": j({"method": "notifications/tasks", "params": dict(TASK, status="done")}),
    "task_result_not_object": j({"method": "notifications/tasks", "params": dict(TASK, status="completed",
                                                                                  result="x")}),
    "task_ttl_float": b'{"method":"notifications/tasks","params":{"taskId":"t","status":"working",'
                      b'"createdAt":"a","lastUpdatedAt":"b","ttlMs":1e3}}',
    "task_two_ids": b'{"method":"notifications/tasks","params":{"taskId":"x","taskId":"y","status":"working",'
                    b'"createdAt":"a","lastUpdatedAt":"b","ttlMs":1}}',
    "task_id_missing": j({"method": "notifications/tasks", "params": {k: v for k, v in TASK.items() if k != "taskId"}}),
}


def http(method, path, headers=(), body=b"", content_length=True, version=b"HTTP/1.1"):
    h = [method + b" " + path + b" " + version, b"Host: 127.0.0.1"]
    h += list(headers)
    if content_length and (body or method == b"POST"):
        h.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(h) + b"\r\n\r\n" + body


CT = b"Content-Type: application/json"
ACC = b"Accept: application/json, text/event-stream"


def mcp_post(body, method_header=None, version=V26.encode(), extra=()):
    hs = [CT, ACC]
    if version:
        hs.append(b"MCP-Protocol-Version: " + version)
    if method_header:
        hs.append(b"Mcp-Method: " + method_header)
    return http(b"POST", b"/mcp", hs + list(extra), body)


def chunked(method, path, headers, body, sizes=(7, 13, 1000)):
    out, i, k = [], 0, 0
    while i < len(body):
        n = sizes[k % len(sizes)]
        part = body[i:i + n]
        out.append(b"%x\r\n" % len(part) + part + b"\r\n")
        i += n
        k += 1
    out.append(b"0\r\n\r\n")
    hs = [method + b" " + path + b" HTTP/1.1", b"Host: localhost", b"Transfer-Encoding: chunked"] + list(headers)
    return b"\r\n".join(hs) + b"\r\n\r\n" + b"".join(out)


PUBLISH = lambda body, extra=(): http(b"POST", b"/v1/publish", [CT] + list(extra), body)

HTTP = {
    "listen": mcp_post(RPC["listen_all"], b"subscriptions/listen"),
    "listen_delay_fin": mcp_post(RPC["listen_all"], b"subscriptions/listen") + SPLIT,
    "listen_then_bytes": mcp_post(RPC["listen_int_id"], b"subscriptions/listen") + SPLIT + b"GET /healthz HTTP/1.1\r\n\r\n",
    "listen_draft_no_headers": mcp_post(RPC["listen_draft"], None, None),
    "listen_header_mismatch": mcp_post(RPC["listen_all"], b"server/discover", b"DRAFT-2026-v1"),
    "listen_missing_headers": mcp_post(RPC["listen_all"], None, None),
    "listen_unknown_version": mcp_post(RPC["listen_unknown_version"], b"subscriptions/listen", b"2099-01-01"),
    "listen_bad_params": mcp_post(RPC["listen_flag_not_bool"], b"subscriptions/listen"),
    "listen_long_uri": mcp_post(RPC["listen_long_uri"], b"subscriptions/listen"),
    "discover": mcp_post(RPC["discover"], b"server/discover"),
    "ping": mcp_post(RPC["ping"], b"ping"),
    "cancelled": mcp_post(rpc("notifications/cancelled", {"_meta": META, "requestId": "listen:0"}, with_id=False)),
    "unknown_method": mcp_post(rpc("tools/list", {"_meta": META}, 9), b"tools/list"),
    "parse_error": mcp_post(RPC["truncated"], b"subscriptions/listen"),
    "batch": mcp_post(RPC["batch"], b"ping"),
    "initialize": mcp_post(RPC["initialize"], None, None),
    "session_post_unknown": mcp_post(RPC["ping"].replace(b',"params":{"_meta":' + j(META) + b"}", b""), None, b"2025-11-25",
                                     [b"Mcp-Session-Id: 0123456789abcdef"]),
    "session_subscribe_unknown": mcp_post(RPC["subscribe"], None, None, [b"Mcp-Session-Id: x"]),
    "session_get_unknown": http(b"GET", b"/mcp", [b"Accept: text/event-stream", b"Mcp-Session-Id: abc"]),
    "session_get_no_id": http(b"GET", b"/mcp", [b"Accept: text/event-stream"]),
    "session_delete_unknown": http(b"DELETE", b"/mcp", [b"Mcp-Session-Id: abc"]),
    "publish": PUBLISH(PUB["design_example"]),
    "publish_array": PUBLISH(PUB["array_all_kinds"]),
    "publish_bad": PUBLISH(PUB["uri_missing"]),
    "publish_get": http(b"GET", b"/v1/publish"),
    "healthz": http(b"GET", b"/healthz"),
    "metrics": http(b"GET", b"/metrics"),
    "not_found": http(b"GET", b"/nope?x=1"),
    "put_mcp": http(b"PUT", b"/mcp", [CT], b"{}"),
    "head_healthz": http(b"HEAD", b"/healthz"),
    "options_mcp": http(b"OPTIONS", b"/mcp", [b"Origin: http://localhost:3000"]),
    "wrong_content_type": http(b"POST", b"/mcp", [b"Content-Type: text/plain", ACC], RPC["ping"]),
    "content_type_params": http(b"POST", b"/mcp", [b"Content-Type: Application/JSON ; charset=utf-8", ACC,
                                                  b"MCP-Protocol-Version: 2026-07-28", b"Mcp-Method: ping"], RPC["ping"]),
    "bad_accept": http(b"POST", b"/mcp", [CT, b"Accept: image/png"], RPC["ping"]),
    "origin_bad": mcp_post(RPC["ping"], b"ping", extra=[b"Origin: http://evil.example"]),
    "origin_ok": mcp_post(RPC["ping"], b"ping", extra=[b"Origin: http://127.0.0.1:8080"]),
    "host_bad": http(b"GET", b"/healthz", [b"Host: attacker.example"]),
    "repeated_headers": mcp_post(RPC["ping"], b"ping", extra=[b"Mcp-Method: ping", b"MCP-Protocol-Version: 2026-07-28"]),
    "pipelined": http(b"GET", b"/healthz") + PUBLISH(PUB["list_changed"]) + mcp_post(RPC["discover"], b"server/discover")
                 + http(b"GET", b"/metrics"),
    "pipelined_then_listen": http(b"GET", b"/healthz") + mcp_post(RPC["listen_all"], b"subscriptions/listen")
                             + http(b"GET", b"/healthz"),
    "pipelined_split": http(b"GET", b"/healthz")[:9] + SPLIT + http(b"GET", b"/healthz")[9:] + PUBLISH(PUB["tenant_acme"])[:30]
                       + SPLIT + PUBLISH(PUB["tenant_acme"])[30:],
    "split_in_header": mcp_post(RPC["ping"], b"ping")[:40] + SPLIT + mcp_post(RPC["ping"], b"ping")[40:],
    "split_in_body": mcp_post(RPC["listen_all"], b"subscriptions/listen")[:-20] + SPLIT
                     + mcp_post(RPC["listen_all"], b"subscriptions/listen")[-20:] + SPLIT,
    "chunked_publish": chunked(b"POST", b"/v1/publish", [CT], PUB["array_all_kinds"]),
    "chunked_listen": chunked(b"POST", b"/mcp", [CT, ACC, b"MCP-Protocol-Version: 2026-07-28",
                                                b"Mcp-Method: subscriptions/listen"], RPC["listen_all"], (1, 2, 50)),
    "chunked_extensions": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\n{\"met\r\n0\r\nTrailer: x\r\n\r\n",
    "chunked_bad_size": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "chunked_and_length": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "expect_continue": http(b"POST", b"/v1/publish", [CT, b"Expect: 100-continue"], PUB["list_changed"]),
    "expect_continue_split": http(b"POST", b"/mcp", [CT, ACC, b"Expect: 100-Continue", b"MCP-Protocol-Version: 2026-07-28",
                                                     b"Mcp-Method: ping", b"Content-Length: %d" % len(RPC["ping"])],
                                  b"", content_length=False) + SPLIT + RPC["ping"],
    "expect_other": http(b"POST", b"/v1/publish", [CT, b"Expect: 200-ok"], PUB["list_changed"]),
    "body_too_large_declared": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                               b"Content-Length: 20000\r\n\r\n{}",
    "body_too_large_chunked": chunked(b"POST", b"/v1/publish", [CT], b"[" + b" " * 17000 + b"]", (4000,)),
    "headers_too_large": http(b"GET", b"/healthz", [b"X-Pad: " + b"p" * 4200]),
    "many_headers": http(b"GET", b"/healthz", [b"X-H%d: v" % i for i in range(300)]),
    "url_too_long": http(b"GET", b"/" + b"u" * 1100),
    "http10": http(b"GET", b"/healthz", version=b"HTTP/1.0"),
    "http10_keepalive": http(b"GET", b"/healthz", [b"Connection: keep-alive"], version=b"HTTP/1.0") + http(b"GET", b"/metrics"),
    "connection_close": http(b"GET", b"/healthz", [b"Connection: close"]) + http(b"GET", b"/healthz"),
    "bare_lf": b"GET /healthz HTTP/1.1\nHost: localhost\n\n",
    "obs_fold": b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-A: 1\r\n  folded\r\n\r\n",
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    "truncated_headers": b"POST /mcp HTTP/1.1\r\nContent-Type: applic",
    "truncated_body": http(b"POST", b"/v1/publish", [CT], PUB["design_example"])[:-10],
    "null_in_header": b"GET /healthz HTTP/1.1\r\nHost: local\x00host\r\n\r\n",
    "upgrade": b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    "connect_method": b"CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "absolute_url": b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "empty": b"",
    # The proxy's request rules: what Debian's non-strict http_parser let through and a proxy must refuse.
    "ws_before_colon_te": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Transfer-Encoding : chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "trailers": b"POST /v1/publish HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nAuthorization: Bearer x\r\nX-Last: 1\r\n\r\n",
    "connection_nominates": http(b"GET", b"/healthz", [b"Connection: keep-alive, X-Hop", b"X-Hop: 1"]) + http(b"GET", b"/metrics"),
    "two_hosts": b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "target_high_bytes": b"GET /healthz?\xff HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "head_pipelined": http(b"HEAD", b"/mcp") + http(b"GET", b"/healthz"),
}

# ---- stdio: lines ----
NL = b"\n"
STDIO = {
    "listen": RPC["listen_all"] + NL,
    "listen_draft": RPC["listen_draft"] + NL,
    "listen_without_meta": rpc("subscriptions/listen", {"notifications": ALL}, "x") + NL,
    "listen_twice_same_id": RPC["listen_all"] + NL + RPC["listen_all"] + NL,
    "listen_then_cancel": RPC["listen_int_id"] + NL + RPC["cancelled_int"] + NL + RPC["ping"] + NL,
    "listen_cancel_string": RPC["listen_all"] + NL + RPC["cancelled_string"] + NL,
    "listen_wait": RPC["listen_all"] + NL + SPLIT + RPC["ping"] + NL + SPLIT,
    "listen_unknown_version": RPC["listen_unknown_version"] + NL,
    "discover": RPC["discover"] + NL,
    "session": RPC["initialize"] + NL + RPC["initialized"] + NL + RPC["subscribe"] + NL + RPC["unsubscribe"] + NL
               + RPC["set_level"] + NL + RPC["ping"] + NL,
    "initialize_twice": RPC["initialize"] + NL + RPC["initialize_2025_06"] + NL,
    "subscribe_before_initialize": RPC["subscribe"] + NL,
    "unknown_method": RPC["unknown_method"] + NL,
    "notifications_bad": RPC["cancelled_bad"] + NL + RPC["listen_no_id"] + NL,
    "crlf": RPC["ping"] + b"\r\n" + RPC["discover"] + b"\r\n",
    "blank_lines": b"\n \t\n\r\n" + RPC["ping"] + b"\n\n",
    "no_final_newline": RPC["ping"] + NL + RPC["discover"],
    "split_lines": RPC["listen_all"][:30] + SPLIT + RPC["listen_all"][30:] + NL + RPC["ping"][:5] + SPLIT + RPC["ping"][5:] + NL,
    "long_line": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 4200 + b'"}}' + NL + RPC["ping"] + NL,
    "long_line_split": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * 3000 + SPLIT + b"y" * 2000
                       + b'"}}' + NL + RPC["ping"] + NL,
    "long_line_no_newline": b"[" * 4500,
    "parse_error": RPC["truncated"] + NL + RPC["ping"] + NL,
    "bad_utf8": RPC["bad_utf8"] + NL,
    "lone_surrogate": RPC["lone_low_surrogate"] + NL,
    "deep_nesting": RPC["deep_nesting"] + NL,
    "huge_numbers": RPC["huge_numbers"] + NL,
    "batch": RPC["batch"] + NL,
    "escaped_id": RPC["id_escaped"] + NL + RPC["listen_escaped_uri"] + NL,
    "many_uris": RPC["listen_many_uris"] + NL + RPC["listen_long_uri"] + NL,
    "null_bytes": b'{"jsonrpc":"2.0","id":1,"method":"ping"}\x00\n\x00\n',
    "empty": b"",
}

# ---- the authenticated server (fuzz_auth.h: keep the secret and the keys in step) ----
AUTH = b"@@AUTH@@"                  # input for the authenticated server (stdio: its Unix socket)
AUTH_TRUSTED = b"@@AUTH-TRUSTED@@"  # stdio: attach_stdio on the authenticated server
SECRET = b"mcpfan-fuzz-hs256-secret-not-a-real-one-0001"
PUB_T1 = b"fuzz-publisher-key-t1-0000"   # bound to tenant t1
PUB_ANY = b"fuzz-publisher-key-any-000"  # any tenant


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=")


def jwt(claims, header=None, secret=SECRET, sign=True):
    """An HS256 compact JWS, minted here because the fuzzer cannot forge a signature."""
    h = b64url(j(header or {"alg": "HS256"}))  # no "typ": a shorter token fits the dictionary better
    p = b64url(j(claims))
    if not sign:
        return h + b"." + p + b"."
    return h + b"." + p + b"." + b64url(hmac.new(secret, h + b"." + p, hashlib.sha256).digest())


TOK = {  # no exp: valid for as long as the secret is
    "t1": jwt({"tenant": "t1"}),
    "t2_uris": jwt({"tenant": "t2", "uris": ["file:///project/"]}),
    "t3": jwt({"tenant": "t3"}),
    "default": jwt({"tenant": "default"}),
}
BAD_TOK = {
    "expired": jwt({"tenant": "t1", "exp": 1}),
    "not_yet_valid": jwt({"tenant": "t1", "nbf": 4102444800}),
    "alg_none": jwt({"tenant": "t1"}, {"alg": "none"}, sign=False),
    "wrong_secret": jwt({"tenant": "t1"}, secret=b"another-secret-of-at-least-32-bytes!"),
    "no_tenant": jwt({"sub": "x"}),
    "bad_uris": jwt({"tenant": "t1", "uris": "file:///"}),
    "not_jwt": b"not-a-token",
}


def bearer(tok):
    return b"Authorization: Bearer " + tok


def meta_tok(tok, prefix=b"Bearer "):
    return dict(META, **{"mcpfan/authorization": (prefix + tok).decode()})


L1 = {"resourceSubscriptions": ["file:///project/a.txt"]}
FIVE = {"resourceSubscriptions": ["u://%d" % i for i in range(5)]}  # past the 4 subscriptions per tenant


def init(id_=0, tok=None):
    return mcp_post(rpc("initialize", {"protocolVersion": "2025-11-25"}, id_), None, None,
                    [bearer(tok)] if tok else [])


def auth_listen(tok, notifications=L1, id_="listen:0"):
    return mcp_post(listen(id_, notifications), b"subscriptions/listen", extra=[bearer(tok)] if tok else [])


def pub(body, key=None):
    return PUBLISH(j(body), [b"Authorization: Bearer " + key] if key else [])


LC = {"method": "notifications/tools/list_changed"}
HTTP_AUTH = {
    "auth_listen_t1": auth_listen(TOK["t1"]),
    "auth_listen_t1_delay_fin": auth_listen(TOK["t1"]) + SPLIT,
    "auth_listen_no_token": auth_listen(None),
    "auth_listen_expired": auth_listen(BAD_TOK["expired"]),
    "auth_listen_not_yet_valid": auth_listen(BAD_TOK["not_yet_valid"]),
    "auth_listen_alg_none": auth_listen(BAD_TOK["alg_none"]),
    "auth_listen_wrong_secret": auth_listen(BAD_TOK["wrong_secret"]),
    "auth_listen_no_tenant": auth_listen(BAD_TOK["no_tenant"]),
    "auth_listen_bad_uris_claim": auth_listen(BAD_TOK["bad_uris"]),
    "auth_listen_not_bearer": mcp_post(listen("l", L1), b"subscriptions/listen", extra=[b"Authorization: Basic dTpw"]),
    "auth_listen_uri_allowed": auth_listen(TOK["t2_uris"], {"resourceSubscriptions": ["file:///project/x"]}),
    "auth_listen_uri_forbidden": auth_listen(TOK["t2_uris"], {"resourceSubscriptions": ["mem://x"]}),
    "auth_listen_too_many_subscriptions": auth_listen(TOK["t1"], FIVE),
    "auth_discover_t1": mcp_post(RPC["discover"], b"server/discover", extra=[bearer(TOK["t1"])]),
    "auth_ping_no_token": mcp_post(RPC["ping"], b"ping"),
    "auth_session_t1": init(0, TOK["t1"]) + mcp_post(RPC["initialized"], None, b"2025-11-25", [bearer(TOK["t1"]),
                                                                                              b"Mcp-Session-Id: x"]),
    "auth_session_no_token": init(0),
    "auth_sessions_per_tenant": init(0, TOK["t1"]) + init(1, TOK["t1"]) + init(2, TOK["t1"]),
    "auth_sessions_then_listen": init(0, TOK["t1"]) + init(1, TOK["t1"]) + auth_listen(TOK["t1"]),
    "auth_idle_sessions_full": init(0, TOK["t1"]) + init(1, TOK["t1"]) + init(2, TOK["t2_uris"]) + init(3, TOK["t2_uris"]),
    "auth_tenants_full": init(0, TOK["t1"]) + init(1, TOK["t2_uris"]) + auth_listen(TOK["t3"]),
    "auth_session_get_delete": http(b"GET", b"/mcp", [b"Accept: text/event-stream", b"Mcp-Session-Id: abc",
                                                      bearer(TOK["t1"])])
                               + http(b"DELETE", b"/mcp", [b"Mcp-Session-Id: abc", bearer(TOK["t1"])])
                               + http(b"GET", b"/mcp", [b"Mcp-Session-Id: abc"]),
    "auth_folded_token": mcp_post(RPC["discover"], b"server/discover",
                                  extra=[bearer(TOK["t1"][:30]) + b"\r\n " + TOK["t1"][30:]]),
    "auth_publish_bound": pub(LC, PUB_T1),
    "auth_publish_bound_own_tenant": pub(dict(LC, tenant="t1"), PUB_T1),
    "auth_publish_bound_other_tenant": pub(dict(LC, tenant="t2"), PUB_T1),
    "auth_publish_any_key": pub(dict(LC, tenant="t2"), PUB_ANY),
    "auth_publish_no_key": pub(LC),
    "auth_publish_unknown_key": pub(LC, b"fuzz-publisher-key-nope-00"),
    "auth_publish_client_token": pub(LC, TOK["t1"]),
    "auth_publish_over_burst": pub([LC] * 5, PUB_ANY),
    "auth_publish_rate": pub([LC, LC], PUB_T1) + pub([LC, LC], PUB_T1) + pub([LC, LC], PUB_T1),
    "auth_metrics": http(b"GET", b"/metrics"),
}
HTTP.update({k: AUTH + v for k, v in HTTP_AUTH.items()})


def line(method, params, id_=None, with_id=True):
    return rpc(method, params, id_, with_id) + NL


STDIO_AUTH = {  # a client of the Unix socket: nothing is served before a valid token
    "auth_unix_listen_no_token": RPC["listen_all"] + NL + RPC["ping"] + NL,
    "auth_unix_listen_token": line("subscriptions/listen", {"_meta": meta_tok(TOK["t1"]), "notifications": L1}, "l"),
    "auth_unix_token_without_bearer": line("subscriptions/listen", {"_meta": meta_tok(TOK["t1"], b""),
                                                                    "notifications": L1}, "l") + RPC["ping"] + NL,
    "auth_unix_ping_token_then_listen": line("ping", {"_meta": meta_tok(TOK["t1"])}, 1) + RPC["listen_all"] + NL,
    "auth_unix_expired": line("ping", {"_meta": meta_tok(BAD_TOK["expired"])}, 1),
    "auth_unix_alg_none": line("ping", {"_meta": meta_tok(BAD_TOK["alg_none"])}, 1),
    "auth_unix_wrong_secret": line("ping", {"_meta": meta_tok(BAD_TOK["wrong_secret"])}, 1),
    "auth_unix_token_not_string": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"mcpfan/authorization":7}}}\n',
    "auth_unix_other_tenant": line("ping", {"_meta": meta_tok(TOK["t1"])}, 1) + line("ping", {"_meta": meta_tok(TOK["t2_uris"])}, 2),
    "auth_unix_uri_forbidden": line("subscriptions/listen", {"_meta": meta_tok(TOK["t2_uris"]),
                                                            "notifications": {"resourceSubscriptions": ["mem://x"]}}, "l"),
    "auth_unix_session_uri_forbidden": line("initialize", {"protocolVersion": "2025-11-25", "_meta": meta_tok(TOK["t2_uris"])}, 0)
                                       + RPC["subscribe"] + NL + line("resources/subscribe", {"uri": "mem://x"}, 3),
    "auth_unix_listens_per_connection": line("ping", {"_meta": meta_tok(TOK["t1"])}, 0) + listen("a", L1) + NL
                                        + listen("b", L1) + NL + listen("c", L1) + NL,
    "auth_unix_streams_per_tenant": line("initialize", {"protocolVersion": "2025-11-25", "_meta": meta_tok(TOK["t1"])}, 0)
                                    + listen("a", L1) + NL + listen("b", L1) + NL,
    "auth_unix_subscriptions": line("subscriptions/listen", {"_meta": meta_tok(TOK["t1"]), "notifications": FIVE}, "l"),
    "auth_unix_split_token": line("ping", {"_meta": meta_tok(TOK["t1"])}, 1)[:80] + SPLIT
                             + line("ping", {"_meta": meta_tok(TOK["t1"])}, 1)[80:] + RPC["listen_all"] + NL + SPLIT,
    "auth_unix_escaped_token": line("ping", {"_meta": META}, 1).replace(
        b'"_meta":{', b'"_meta":{"mcpfan\\/authorization":"Bearer ' + TOK["t1"][:5] + b"\\u%04x" % TOK["t1"][5] + TOK["t1"][6:] + b'",'),
}
STDIO_TRUSTED = {  # attach_stdio on the authenticated server: tenant "default" without a token
    "auth_trusted_no_token": RPC["listen_all"] + NL,
    "auth_trusted_default_token": line("ping", {"_meta": meta_tok(TOK["default"])}, 1) + RPC["listen_all"] + NL,
    "auth_trusted_other_tenant": line("ping", {"_meta": meta_tok(TOK["t1"])}, 1),
    "auth_trusted_bad_token": line("ping", {"_meta": meta_tok(BAD_TOK["not_jwt"])}, 1),
    "auth_trusted_listens": listen("a", L1) + NL + listen("b", L1) + NL + listen("c", FIVE) + NL,
}
STDIO.update({k: AUTH + v for k, v in STDIO_AUTH.items()})
STDIO.update({k: AUTH_TRUSTED + v for k, v in STDIO_TRUSTED.items()})

# ---- HTTP/2 frames (fuzz_h2: the target writes the client preface, then these bytes) ----
def frame(type_, flags, stream, payload=b""):
    """One frame: 24-bit length, type, flags, 31-bit stream id, payload (RFC 9113 §4.1)."""
    return len(payload).to_bytes(3, "big") + bytes([type_, flags]) + (stream & 0x7fffffff).to_bytes(4, "big") + payload


DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def hpack_int(value, prefix_bits, first=0):
    """An HPACK integer (RFC 7541 §5.1) whose first byte carries `first` above its prefix."""
    top = (1 << prefix_bits) - 1
    if value < top:
        return bytes([first | value])
    out = [first | top]
    value -= top
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def hstr(b):
    return hpack_int(len(b), 7) + b  # no Huffman


STATIC = {b":authority": 1, b":method": 2, b":path": 4, b":scheme": 6, b":status": 8, b"accept": 19,
          b"content-length": 28, b"content-type": 31, b"user-agent": 58}
INDEXED = {(b":method", b"GET"): 2, (b":method", b"POST"): 3, (b":path", b"/"): 4, (b":scheme", b"http"): 6}


def hpack(fields):
    """A header block: static-table entries where they match whole, otherwise literals without
    indexing (§6.2.2), with a static name index where there is one: the dynamic table stays empty."""
    out = b""
    for name, value in fields:
        if (name, value) in INDEXED:
            out += hpack_int(INDEXED[(name, value)], 7, 0x80)
        elif name in STATIC:
            out += hpack_int(STATIC[name], 4) + hstr(value)
        else:
            out += b"\x00" + hstr(name) + hstr(value)
    return out


def req_fields(method, path, extra=()):
    return [(b":method", method), (b":scheme", b"http"), (b":path", path), (b":authority", b"127.0.0.1")] + list(extra)


def settings(*entries, flags=0):
    return frame(SETTINGS, flags, 0, b"".join(k.to_bytes(2, "big") + v.to_bytes(4, "big") for k, v in entries))


H2_SETTINGS = settings((0x2, 0), (0x3, 100), (0x4, 65535))  # ENABLE_PUSH 0, MAX_CONCURRENT_STREAMS, INITIAL_WINDOW_SIZE
H2_ACK = settings(flags=ACK)
H2_START = H2_SETTINGS + H2_ACK


def h2_get(stream, path, extra=()):
    return frame(HEADERS, END_HEADERS | END_STREAM, stream, hpack(req_fields(b"GET", path, extra)))


def h2_post(stream, path, body, extra=(), end=True, data_frames=1):
    head = frame(HEADERS, END_HEADERS, stream, hpack(req_fields(b"POST", path, list(extra) + [
        (b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))])))
    out, step = b"", max(1, -(-len(body) // data_frames))
    for i in range(0, len(body), step):
        last = i + step >= len(body)
        out += frame(DATA, END_STREAM if (last and end) else 0, stream, body[i:i + step])
    return head + out


H2_MCP = [(b"accept", b"application/json, text/event-stream"), (b"mcp-protocol-version", V26.encode())]


def h2_mcp(stream, body, method):
    return h2_post(stream, b"/mcp", body, H2_MCP + [(b"mcp-method", method)])


def rst(stream, code=8):
    return frame(RST_STREAM, 0, stream, code.to_bytes(4, "big"))


def window_update(stream, n):
    return frame(WINDOW_UPDATE, 0, stream, n.to_bytes(4, "big"))


def goaway(last, code, reason=b""):
    return frame(GOAWAY, 0, 0, last.to_bytes(4, "big") + code.to_bytes(4, "big") + reason)


LISTEN_H2 = h2_mcp(1, RPC["listen_all"], b"subscriptions/listen")
PUB_UPDATED = j({"method": "notifications/resources/updated", "params": {"uri": "file:///project/a.txt"}})
GET_LIVEZ_BLOCK = hpack(req_fields(b"GET", b"/livez", [(b"user-agent", b"fuzz-h2"), (b"x-pad", b"p" * 40)]))
H2 = {
    "settings_ack": H2_START,
    "settings_only": H2_SETTINGS,
    "no_settings_get": h2_get(1, b"/livez"),
    "get_livez": H2_START + h2_get(1, b"/livez"),
    "get_healthz_readyz_status": H2_START + h2_get(1, b"/healthz") + h2_get(3, b"/readyz") + h2_get(5, b"/status"),
    "get_metrics": H2_START + h2_get(1, b"/metrics"),
    "head_livez": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack(req_fields(b"HEAD", b"/livez"))),
    "not_found": H2_START + h2_get(1, b"/nope?x=1"),
    "publish": H2_START + h2_post(1, b"/v1/publish", PUB["list_changed"]),
    "publish_array_in_pieces": H2_START + h2_post(1, b"/v1/publish", PUB["array_all_kinds"], data_frames=4),
    "publish_bad": H2_START + h2_post(1, b"/v1/publish", PUB["uri_missing"]),
    "publish_parse_error": H2_START + h2_post(1, b"/v1/publish", PUB["truncated"]),
    "listen": H2_START + LISTEN_H2,
    "listen_delay_fin": H2_START + LISTEN_H2 + SPLIT,
    "listen_then_publish": H2_START + LISTEN_H2 + SPLIT + h2_post(3, b"/v1/publish", PUB_UPDATED) + SPLIT,
    "listen_then_rst": H2_START + LISTEN_H2 + SPLIT + rst(1) + h2_get(3, b"/livez"),
    "listen_rst_at_once": H2_START + LISTEN_H2 + rst(1),
    "listen_two_streams": H2_START + LISTEN_H2 + h2_mcp(3, RPC["listen_int_id"], b"subscriptions/listen") + SPLIT,
    "discover": H2_START + h2_mcp(1, RPC["discover"], b"server/discover"),
    "ping_rpc": H2_START + h2_mcp(1, RPC["ping"], b"ping"),
    "initialize": H2_START + h2_post(1, b"/mcp", RPC["initialize"], [(b"accept", b"application/json, text/event-stream")]),
    "listen_bad_params": H2_START + h2_mcp(1, RPC["listen_flag_not_bool"], b"subscriptions/listen"),
    "ping_frames": H2_START + frame(PING, 0, 0, b"12345678") + frame(PING, ACK, 0, b"87654321") + h2_get(1, b"/livez"),
    "window_update": H2_START + window_update(0, 1 << 20) + LISTEN_H2 + window_update(1, 65535) + SPLIT
                     + h2_post(3, b"/v1/publish", PUB["list_changed"]),
    "small_window": settings((0x4, 16)) + H2_ACK + h2_mcp(1, RPC["discover"], b"server/discover") + SPLIT
                    + window_update(1, 100) + window_update(0, 100) + SPLIT,
    "continuation": H2_START + frame(HEADERS, END_STREAM, 1, GET_LIVEZ_BLOCK[:7])
                    + frame(CONTINUATION, 0, 1, GET_LIVEZ_BLOCK[7:20])
                    + frame(CONTINUATION, END_HEADERS, 1, GET_LIVEZ_BLOCK[20:]),
    "continuation_split": H2_START + frame(HEADERS, END_STREAM, 1, GET_LIVEZ_BLOCK[:9]) + SPLIT
                          + frame(CONTINUATION, END_HEADERS, 1, GET_LIVEZ_BLOCK[9:]),
    "priority": H2_START + frame(PRIORITY, 0, 1, b"\x00\x00\x00\x00\x10") + frame(PRIORITY, 0, 3, b"\x80\x00\x00\x01\xff")
                + frame(HEADERS, END_HEADERS | END_STREAM | PRIO, 5, b"\x00\x00\x00\x03\x20" + hpack(req_fields(b"GET", b"/livez"))),
    "padded": H2_START + frame(HEADERS, END_HEADERS | PADDED, 1, b"\x03" + hpack(req_fields(b"POST", b"/v1/publish", [
        (b"content-type", b"application/json")])) + b"\x00" * 3)
              + frame(DATA, END_STREAM | PADDED, 1, b"\x05" + PUB["list_changed"] + b"\x00" * 5),
    "trailers": H2_START + h2_post(1, b"/v1/publish", PUB["list_changed"], end=False)
                + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack([(b"x-checksum", b"abc")])),
    "empty_data_end": H2_START + frame(HEADERS, END_HEADERS, 1, hpack(req_fields(b"GET", b"/livez")))
                      + frame(DATA, END_STREAM, 1),
    "goaway_from_client": H2_START + h2_get(1, b"/livez") + goaway(0, 0, b"bye"),
    "rst_unopened": H2_START + rst(7) + h2_get(1, b"/livez"),
    "split_in_frame_header": H2_START + h2_get(1, b"/livez")[:4] + SPLIT + h2_get(1, b"/livez")[4:],
    "split_in_body": H2_START + h2_mcp(1, RPC["discover"], b"server/discover")[:-10] + SPLIT
                     + h2_mcp(1, RPC["discover"], b"server/discover")[-10:],
    "many_streams": H2_START + b"".join(h2_get(1 + 2 * i, b"/livez") for i in range(20)),
    "stream_id_reused": H2_START + h2_get(3, b"/livez") + h2_get(1, b"/livez"),
    "even_stream": H2_START + h2_get(2, b"/livez"),
    "max_frame_size": settings((0x5, 1 << 20)) + H2_ACK + h2_get(1, b"/metrics"),
    "header_table_size_0": settings((0x1, 0)) + H2_ACK + h2_get(1, b"/livez") + h2_get(3, b"/metrics"),
    "dynamic_table": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x82\x86\x44\x06/livez\x41\x09127.0.0.1")
                     + frame(HEADERS, END_HEADERS | END_STREAM, 3, b"\x82\x86\xbf\xbe"),
    "uppercase_header": H2_START + h2_get(1, b"/livez", [(b"X-Upper", b"1")]),
    "connection_header": H2_START + h2_get(1, b"/livez", [(b"connection", b"close")]),
    "missing_path": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack([(b":method", b"GET"),
                                                                               (b":scheme", b"http")])),
    "connect_method": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack([(b":method", b"CONNECT"),
                                                                                 (b":authority", b"a:1")])),
    "bad_hpack": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\xff\xff\x7f"),
    "headers_too_large": H2_START + h2_get(1, b"/livez", [(b"x-pad", b"p" * 4200)]),
    "url_too_long": H2_START + h2_get(1, b"/" + b"u" * 1100),
    "head_headers_too_large": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack(
        req_fields(b"HEAD", b"/livez", [(b"x-pad", b"p" * 4200)]))),
    "head_url_too_long_path_first": H2_START + frame(HEADERS, END_HEADERS | END_STREAM, 1, hpack(
        [(b":path", b"/" + b"u" * 1100), (b":method", b"HEAD"), (b":scheme", b"http"), (b":authority", b"127.0.0.1")])),
    "body_too_large": H2_START + h2_post(1, b"/v1/publish", b"[" + b" " * 17000 + b"]", data_frames=2),
    "data_unopened": H2_START + frame(DATA, 0, 7, b"data on a stream never opened"),
    "unknown_frame_type": H2_START + frame(0x42, 0xff, 1, b"ext") + h2_get(1, b"/livez"),
    "push_promise_from_client": H2_START + frame(PUSH_PROMISE, END_HEADERS, 1, b"\x00\x00\x00\x02" + hpack(
        req_fields(b"GET", b"/livez"))),
    "garbage": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    "http1_after_preface": b"GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    "empty": b"",
}

def token_pieces(tok):
    """Dictionary entries (at most 64 bytes each) that rebuild `tok`."""
    head, sig = tok[:tok.rindex(b".")], tok[tok.rindex(b"."):]
    if len(head) <= 64:
        return [head, sig]
    h, p = head.split(b".")
    return [h + b".", p, sig]


DICTS = {
    "json": [b"{", b"}", b"[", b"]", b":", b",", b'"', b'\\"', b"\\\\", b"\\u0000", b"\\ud800", b"\\udc00",
             b"\\ud83d\\ude00", b"true", b"false", b"null", b"0", b"-1", b"1e400", b"18446744073709551616",
             b"-9223372036854775808", b"1.5", b"\xef\xbb\xbf", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80"],
    "rpc": [b'"jsonrpc"', b'"2.0"', b'"id"', b'"method"', b'"params"', b'"_meta"', b'"result"', b'"error"',
            b'"io.modelcontextprotocol/protocolVersion"', b'"io.modelcontextprotocol/clientInfo"',
            b'"io.modelcontextprotocol/clientCapabilities"', b'"io.modelcontextprotocol/subscriptionId"',
            b'"mcpfan/authorization"', b'"2026-07-28"', b'"DRAFT-2026-v1"', b'"2025-11-25"', b'"2025-06-18"',
            b'"2025-03-26"', b'"2024-11-05"', b'"subscriptions/listen"', b'"server/discover"', b'"ping"',
            b'"initialize"', b'"notifications/initialized"', b'"notifications/cancelled"', b'"resources/subscribe"',
            b'"resources/unsubscribe"', b'"logging/setLevel"', b'"notifications"', b'"toolsListChanged"',
            b'"promptsListChanged"', b'"resourcesListChanged"', b'"resourceSubscriptions"', b'"requestId"',
            b'"protocolVersion"', b'"uri"', b'"listen:0"', b'"file:///project/"', b'"taskIds"', b'"extensions"',
            b'"io.modelcontextprotocol/tasks"'],
    "publish": [b'"tenant"', b'"acme"', b'"notifications/resources/updated"', b'"notifications/tools/list_changed"',
                b'"notifications/prompts/list_changed"', b'"notifications/resources/list_changed"',
                b'"notifications/tasks"', b'"taskId"', b'"status"', b'"working"', b'"input_required"', b'"completed"',
                b'"cancelled"', b'"failed"', b'"createdAt"', b'"lastUpdatedAt"', b'"ttlMs"', b'"pollIntervalMs"',
                b'"inputRequests"', b'"requestState"', b'"statusMessage"'],
    "http": [b"GET ", b"POST ", b"DELETE ", b"HEAD ", b"PUT ", b"OPTIONS ", b" HTTP/1.1\r\n", b" HTTP/1.0\r\n",
             b"\r\n", b"\r\n\r\n", b"/mcp", b"/v1/publish", b"/healthz", b"/metrics", b"Host: 127.0.0.1\r\n",
             b"Host: localhost\r\n", b"Content-Type: application/json\r\n",
             b"Accept: application/json, text/event-stream\r\n", b"Accept: text/event-stream\r\n",
             b"MCP-Protocol-Version: 2026-07-28\r\n", b"Mcp-Method: subscriptions/listen\r\n",
             b"Mcp-Session-Id: ", b"Content-Length: ", b"Transfer-Encoding: chunked\r\n",
             b"Expect: 100-continue\r\n", b"Connection: close\r\n", b"Connection: keep-alive\r\n",
             b"Origin: http://localhost\r\n", b"Origin: http://evil.example\r\n", b"Authorization: Bearer ",
             b"0\r\n\r\n", b";ext=", b"Content-Length: 0\r\n", b"Content-Length: 99999\r\n"],
    "split": [SPLIT],
    # frame headers (length 0..; type; flags; stream 0/1/3), HPACK bytes and field names and values
    "h2": [bytes([t]) for t in range(10)] + [b"\x00\x00\x00\x04\x01\x00\x00\x00\x00", b"\x00\x00\x08\x06\x00\x00\x00\x00\x00",
           b"\x00\x00\x04\x08\x00\x00\x00\x00\x00", b"\x00\x00\x04\x03\x00\x00\x00\x00\x01",
           b"\x00\x00\x00\x00\x01\x00\x00\x00\x01", b"\x00\x00\x08\x07\x00\x00\x00\x00\x00",
           b"\x01\x05\x00\x00\x00\x01", b"\x01\x04\x00\x00\x00\x01", b"\x01\x04\x00\x00\x00\x03",
           b"\x09\x04\x00\x00\x00\x01", b"\x00\x01\x00\x00\x00\x01", b"\x00\x00\x00\x00\x03",
           b"\x00\x05\x00\x00\x40\x00", b"\x00\x04\x00\x00\x00\x00", b"\x00\x01\x00\x00\x00\x00",
           b"\x00\x03\x00\x00\x00\x01", b"\x7f\xff\xff\xff", b"\x00\x00\x00\x08",
           b"\x82", b"\x83", b"\x84", b"\x86", b"\x87", b"\x88", b"\xbe", b"\xbf", b"\x3f\xe1\x1f", b"\x20",
           b"\x04\x06/livez", b"\x04\x04/mcp", b"\x04\x0b/v1/publish", b"\x04\x08/metrics", b"\x01\x09127.0.0.1",
           b"\x1f\x10\x10application/json", b"\x0f\x04\x23application/json, text/event-stream",
           b":method", b":path", b":scheme", b":authority", b":status", b":protocol", b"GET", b"POST", b"HEAD",
           b"CONNECT", b"http", b"https", b"content-type", b"content-length", b"accept", b"te", b"trailers",
           b"connection", b"host", b"mcp-protocol-version", b"mcp-method", b"mcp-session-id", b"authorization",
           b"origin", b"application/json", b"text/event-stream", b"application/json, text/event-stream",
           b"2026-07-28", b"subscriptions/listen", b"server/discover", b"/livez", b"/healthz", b"/readyz",
           b"/status", b"/metrics", b"/mcp", b"/v1/publish", b"127.0.0.1", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"],
    # libFuzzer ignores dictionary entries over 64 bytes: a whole token (about 110) is not one,
    # so its two halves are (header.payload, then .signature), and the seeds carry whole ones.
    "auth": [AUTH, b"Bearer ", PUB_T1, PUB_ANY, b'"t1"', b'"t2"', b'"t3"', b'"default"']
            + [p for t in list(TOK.values()) + [BAD_TOK["expired"]] for p in token_pieces(t)],
    "auth_http": [b"Authorization: Bearer " + PUB_T1 + b"\r\n", b"Authorization: Bearer " + PUB_ANY + b"\r\n"],
    "auth_stdio": [AUTH_TRUSTED, b'"mcpfan/authorization":"Bearer '],
}


# ---- fuzz_oauth_token: byte 0 picks the mode (bit 0: 0 = "JWKS@@TOKEN@@token", 1 = a payload the
# target signs with its own fixed key), the algorithm (bits 1-2) and the policy (bits 3-5) ----
OAUTH_SPLIT = b"@@TOKEN@@"
OAUTH_NOW = 1800000000
OAUTH_ISS = "https://issuer.example"


def oauth_fake_rsa_n(seed):
    """2048 bits that OpenSSL takes as a modulus (it does not factor it): no token verifies under it."""
    raw = b"".join(hashlib.sha256(seed + bytes([i])).digest() for i in range(8))
    return bytes([raw[0] | 0xC0]) + raw[1:255] + bytes([raw[255] | 1])


# The P-256 generator: a point on the curve, so the EC import succeeds.
P256_GX = bytes.fromhex("6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296")
P256_GY = bytes.fromhex("4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5")
OAUTH_JWKS = j({"keys": [
    {"kty": "RSA", "kid": "rsa", "use": "sig", "n": b64url(oauth_fake_rsa_n(b"a")).decode(), "e": "AQAB"},
    {"kty": "RSA", "kid": "ps", "alg": "PS256", "n": b64url(oauth_fake_rsa_n(b"b")).decode(), "e": "AQAB"},
    {"kty": "EC", "crv": "P-256", "kid": "ec", "x": b64url(P256_GX).decode(), "y": b64url(P256_GY).decode()},
    {"kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA", "x": b64url(hashlib.sha256(b"ed").digest()).decode()},
    {"kty": "oct", "kid": "hs", "k": "c2VjcmV0"},
    {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
]})
OAUTH_CLAIMS = {"iss": OAUTH_ISS, "aud": ["mcpfan"], "exp": OAUTH_NOW + 600, "iat": OAUTH_NOW - 5,
                "org_id": "acme", "azp": "client-1", "sub": "user-1", "scope": "mcp:read mcp:write",
                "uris": ["file:///project/"], "mcp_uris": ["mem://"], "scp": ["a", "b"], "active": True}


def oauth_token(header, claims, sig=b"c2ln"):
    return b64url(j(header)) + b"." + b64url(j(claims)) + b"." + sig


OAUTH = {
    "arbitrary_rs256": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + oauth_token({"alg": "RS256", "kid": "rsa"}, OAUTH_CLAIMS),
    "arbitrary_es256": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + oauth_token({"alg": "ES256", "kid": "ec", "typ": "at+jwt"},
                                                                         OAUTH_CLAIMS),
    "arbitrary_hs256": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + oauth_token({"alg": "HS256", "kid": "hs"}, OAUTH_CLAIMS),
    "arbitrary_none": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + oauth_token({"alg": "none"}, OAUTH_CLAIMS, b""),
    "arbitrary_introspection": b"\x08" + j(OAUTH_CLAIMS) + OAUTH_SPLIT + b"max-age=300, no-cache",
    "arbitrary_metadata": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + j({"issuer": OAUTH_ISS, "jwks_uri": OAUTH_ISS + "/jwks"}),
    "arbitrary_issuer": b"\x00" + OAUTH_JWKS + OAUTH_SPLIT + b"https://issuer.example/tenant/a/",
    "signed_rs256": b"\x01" + j(OAUTH_CLAIMS),
    "signed_ps256_fixed": b"\x0b" + j(OAUTH_CLAIMS),
    "signed_es256_azp": b"\x15" + j(OAUTH_CLAIMS),
    "signed_eddsa_uris": b"\x27" + j(OAUTH_CLAIMS),
    "signed_es256_header": b"\x05" + j({"alg": "ES256", "kid": "ec", "typ": "application/at+jwt"}) + OAUTH_SPLIT +
                           j(OAUTH_CLAIMS),
    "signed_eddsa_expired": b"\x07" + j(dict(OAUTH_CLAIMS, exp=OAUTH_NOW - 61)),
    "signed_es256_bad_tenant": b"\x05" + j(dict(OAUTH_CLAIMS, org_id="a/b")),
    "signed_es256_float_times": b"\x05" + j(dict(OAUTH_CLAIMS, exp=OAUTH_NOW + 0.5, nbf=OAUTH_NOW + 60.5)),
}
DICTS_OAUTH = [OAUTH_SPLIT, b'"kty"', b'"RSA"', b'"EC"', b'"OKP"', b'"oct"', b'"crv"', b'"P-256"', b'"Ed25519"',
               b'"n"', b'"e"', b'"x"', b'"y"', b'"d"', b'"use"', b'"sig"', b'"key_ops"', b'"verify"', b'"keys"',
               b'"alg"', b'"RS256"', b'"PS256"', b'"ES256"', b'"EdDSA"', b'"HS256"', b'"none"', b'"kid"', b'"typ"',
               b'"at+jwt"', b'"crit"', b'"iss"', b'"aud"', b'"exp"', b'"nbf"', b'"iat"', b'"org_id"', b'"azp"',
               b'"sub"', b'"client_id"', b'"scope"', b'"scp"', b'"uris"', b'"mcp_uris"', b'"active"', b"true",
               b"false", b'"https://issuer.example"', b'"mcpfan"', b"1800000000", b"1800000600", b"max-age=",
               b"no-store", b"no-cache", b'"issuer"', b'"jwks_uri"', b'"introspection_endpoint"']


def write_corpus(name, seeds):
    d = os.path.join(HERE, "corpus", name)
    os.makedirs(d, exist_ok=True)
    for k, v in seeds.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)


def dict_line(tok):
    out = []
    for b in tok:
        out.append(chr(b) if 0x20 <= b < 0x7f and b not in (0x22, 0x5c) else "\\x%02x" % b)
    return '"' + "".join(out) + '"'


def write_dict(name, parts):
    with open(os.path.join(HERE, name + ".dict"), "w") as f:
        f.write("# libFuzzer dictionary for %s (written by make_corpus.py)\n" % name)
        for p in parts:
            for tok in DICTS[p]:
                f.write(dict_line(tok) + "\n")


write_corpus("fuzz_rpc_decoder", RPC)
write_corpus("fuzz_publish_decoder", PUB)
write_corpus("fuzz_http", HTTP)
write_corpus("fuzz_stdio", STDIO)
write_corpus("fuzz_h2", H2)
write_corpus("fuzz_oauth_token", OAUTH)
write_dict("fuzz_rpc_decoder", ["json", "rpc"])
write_dict("fuzz_publish_decoder", ["json", "rpc", "publish"])
write_dict("fuzz_http", ["json", "rpc", "publish", "http", "split", "auth", "auth_http"])
write_dict("fuzz_stdio", ["json", "rpc", "split", "auth", "auth_stdio"])
write_dict("fuzz_h2", ["json", "rpc", "publish", "split", "h2"])
DICTS["oauth"] = DICTS_OAUTH
write_dict("fuzz_oauth_token", ["json", "oauth"])

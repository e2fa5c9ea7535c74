#pragma once
// What fuzz_http and fuzz_stdio share: the real mcpfan::Server, in this process, twice (without
// authentication, and with it: fuzz_auth.h), started once and stopped at exit (so LeakSanitizer
// sees a clean shutdown); which of them an input goes to; writing one input to a socket with
// deadlines; and checks on what the server wrote back.
#include <simdjson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/transport/server.h"

namespace mcpfan::fuzz {

/**
 * The servers: one worker each, 127.0.0.1 on an ephemeral port, small limits so every limit is
 * reachable by a small input (README.md lists them). The authenticated one also has client
 * tokens, publisher keys, a publish rate, per-tenant ceilings and a Unix socket for stdio-framed
 * clients (fuzz_auth.h). Both start on first use; an atexit handler stops and frees them.
 */
Server& server();
Server& authed_server();

/**
 * Which server an input is for, and how a stdio input reaches it. An input for the
 * authenticated server starts with a marker (dropped before sending; the fuzzer finds it in the
 * dictionary), so every input without one means what it meant before that server existed.
 */
enum class Target {
  Plain,          // the server without authentication (stdio: attach_stdio)
  Authed,         // the authenticated server (stdio: a client of its Unix socket, which must authenticate)
  AuthedTrusted,  // stdio only: attach_stdio on the authenticated server (trusted, tenant "default")
};
inline constexpr std::string_view kAuthMarker = "@@AUTH@@";
inline constexpr std::string_view kAuthTrustedMarker = "@@AUTH-TRUSTED@@";
struct Routed {
  Target target = Target::Plain;
  std::string_view rest;  // the input without its marker
};
Routed route(std::string_view input);

/** A fresh loopback TCP connection to one of the servers, non-blocking. */
int connect_http(bool authed);
/** A fresh non-blocking connection to 127.0.0.1:port from one of 250 loopback source addresses (no TIME_WAIT pile-up).
 */
int connect_loopback(std::uint16_t port);
/** A fresh connection to the authenticated server's Unix socket, non-blocking. */
int connect_unix();

/**
 * An input is written in pieces, split at each occurrence of this marker (which is dropped),
 * with a pause between the first pieces so the server reads them separately; the fuzzer
 * finds the marker in the dictionary. A marker at the end delays the FIN instead.
 */
inline constexpr std::string_view kSplitMarker = "@@SPLIT@@";

/**
 * The HTTP/2 client preface: a connection whose first bytes are these is served as HTTP/2 (h2c
 * with prior knowledge, http1/connection.cc `sniff`). fuzz_h2 writes it before each input;
 * fuzz_http leaves the answers to such an input unchecked (they are frames, fuzz_h2's to judge).
 */
inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
std::vector<std::string_view> split_input(std::string_view data);

struct Received {
  std::string bytes;
  bool clean_eof = false;  // the server closed with a FIN (not a reset): `bytes` is all it sent
};

/**
 * Writes each piece to `fd`, reading whatever comes back meanwhile; then shutdown(SHUT_WR) and
 * reads until the server closes. A server that stops reading, or neither answers nor closes
 * within MCPFAN_FUZZ_HANG_MS (default 2000) after the FIN, is a bug: this aborts, naming it.
 */
Received exchange(int fd, const std::vector<std::string_view>& pieces, const char* transport);

/**
 * `bytes` is everything the server sent on one HTTP connection: a sequence of well-formed
 * HTTP/1.1 responses; every application/json body is JSON; every SSE `data:` line is JSON.
 * Only a text/event-stream response may end unterminated (the client's FIN cancelled it).
 */
struct HttpExpect {
  std::vector<bool> head_requests;  // per request in the input, in order: is it HEAD
  bool authed = false;              // sent to the authenticated server
  bool may_have_token = true;       // the input may carry a token signed with its secret
  bool may_have_publisher_key = true;
};
/**
 * Also, on both servers: a 401, 403, 429 or 503 is application/json; a 401 carries
 * `WWW-Authenticate: Bearer realm=...`; a 429 carries `Retry-After: <seconds >= 1>`. On the
 * authenticated server: without a signed token no 2xx answer but a text/plain one (/healthz,
 * /metrics) or a publish's {"accepted":N}; without a publisher key no {"accepted":N}.
 */
void check_http_responses(std::string_view bytes, const HttpExpect& expect);
/** For each request in `input` whose headers parse, in order: whether it is a HEAD request. */
std::vector<bool> head_requests(std::string_view input);

/** `json` is a JSON object (aborts otherwise, naming `where`); it lives in a shared parser until the next call. */
simdjson::dom::object check_json_message(std::string_view json, const char* where);
/** The complete lines of an SSE body: blank, comments, `event: message`, and `data: ` lines of JSON objects. */
void check_sse_body(std::string_view body);

struct StdioExpect {
  bool needs_token = false;     // a Unix-socket client of the authenticated server
  bool may_have_token = true;   // the input may carry a token signed with its secret
};
/**
 * Every complete line a stdio client receives is one JSON-RPC message: a JSON object with a
 * `result`, a `method`, or an `error` whose `code` is one the server uses (result.h) and whose
 * `message` is a string. -32031 (forbidden) needs a signed token. A client that must
 * authenticate and sent no signed token gets only errors: -32030 (unauthorized), or what the
 * decoder refuses before authentication (-32700, -32600, -32602).
 */
void check_stdio_lines(std::string_view bytes, const StdioExpect& expect);

}  // namespace mcpfan::fuzz

#pragma once
// What fuzz_http and fuzz_stdio share: the real mcpfan::Server, in this process, started once
// and stopped at exit (so LeakSanitizer sees a clean shutdown); writing one input to a socket
// with deadlines; and checks on what the server wrote back.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/transport/server.h"

namespace mcpfan::fuzz {

/**
 * The server: one worker, 127.0.0.1 on an ephemeral port, small limits so every limit is
 * reachable by a small input (README.md lists them). Started on first use; stopped and freed
 * by an atexit handler.
 */
Server& server();
std::uint16_t http_port();

/** A fresh loopback TCP connection to the server, non-blocking. */
int connect_http();

/**
 * An input is written in pieces, split at each occurrence of this marker (which is dropped),
 * with a pause between the first pieces so the server reads them separately; the fuzzer
 * finds the marker in the dictionary. A marker at the end delays the FIN instead.
 */
inline constexpr std::string_view kSplitMarker = "@@SPLIT@@";
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
void check_http_responses(std::string_view bytes, const std::vector<bool>& head_requests);
/** For each request in `input` whose headers parse, in order: whether it is a HEAD request. */
std::vector<bool> head_requests(std::string_view input);

/** Every complete line a stdio client receives is one JSON-RPC message (a JSON object). */
void check_stdio_lines(std::string_view bytes);

}  // namespace mcpfan::fuzz

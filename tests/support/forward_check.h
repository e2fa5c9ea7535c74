#pragma once
// The front proxy's forwarding, checked without a server (the differential property of docs/protocol.md "What is
// rejected, rewritten and never retried"): for any bytes a client may send, what mcpfan's RequestParser accepts and
// what upstream_request() builds from it must be read back by a strict, independent reader as exactly the same method,
// target, field list (less the hop-by-hop fields) and body.
//
// Two readers check it: read_strict() here (RFC 9112's grammar with no leniency at all:
// CRLF only, token names, no obs-fold, Content-Length framing only), which the fuzzers run on
// every input; and Node's llhttp in strict mode, which tests/transports/forward_diff.mjs runs
// over the fuzz corpus and generated cases through mcpfan_forward_dump.
//
// Test support: single-threaded, no global state.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http1/request_parser.h"
#include "proxy/upstream.h"

namespace mcpfan::testing {

/** The upstream every check forwards to. */
[[nodiscard]] const detail::proxy::UpstreamTarget& check_target();

struct ForwardedCase {
  struct One {
    detail::HttpRequest parsed;                // what mcpfan's parser accepted
    detail::proxy::ForwardedRequest forwarded; // what it would send upstream
    std::string method, target;                // what the upstream must read...
    std::vector<detail::Field> fields;         // ...Host, the forwardable fields in order, Content-Length
  };
  std::vector<One> requests;                   // accepted, in order
  std::optional<detail::RequestRejection> rejection;  // where parsing stopped, if it did
  bool failed = false;                         // a parse step threw (never expected)
};

/** Parses `bytes` as one client connection would deliver them, `piece` bytes at a time (0: at once). */
[[nodiscard]] ForwardedCase parse_and_forward(std::string_view bytes, std::size_t piece = 0);
/** The same, delivered in these reads. */
[[nodiscard]] ForwardedCase parse_and_forward(const std::vector<std::string_view>& reads);

/** Whether two parses of the same bytes (e.g. at once and byte by byte) agree. The difference, if any. */
[[nodiscard]] std::optional<std::string> compare_cases(const ForwardedCase& a, const ForwardedCase& b);

struct StrictRequest {
  std::string method, target;
  std::vector<detail::Field> fields;
  std::string body;
};
/** Reads one request from the front of `in` (consumed) by RFC 9112 with no leniency; the error otherwise. */
[[nodiscard]] std::optional<std::string> read_strict(std::string_view& in, StrictRequest& out);

/** read_strict() over `one.forwarded.bytes`, compared with what it must read. The difference, if any. */
[[nodiscard]] std::optional<std::string> strict_mismatch(const ForwardedCase::One& one);

}  // namespace mcpfan::testing

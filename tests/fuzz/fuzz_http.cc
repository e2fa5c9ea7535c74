// libFuzzer target: the HTTP request path of the real server (transports/src/http/: the
// connection, the routes, and the engine decoders behind them). The servers run in this process
// (fuzz_support.cc): each input is written to a fresh loopback TCP connection, in pieces split
// at "@@SPLIT@@" (with a pause between, so http_parser sees partial requests), then the client
// half-closes and reads until the server closes. An input starting with "@@AUTH@@" goes to the
// server with client tokens, publisher keys, a publish rate and per-tenant ceilings (401, 403,
// 429, 503); any other to the one without authentication.
//
// Findings: any sanitizer report in the server's worker thread; a request the front proxy would
// forward that a strict reader reads differently from how mcpfan parsed it, or bytes parsed
// differently at once and in the input's pieces (tests/support/forward_check.h); a server that stops reading or
// neither answers nor closes within 2 s of the client's FIN (a hang); a 500 answer; bytes back
// that are not well-formed HTTP/1.1 responses, a JSON body or SSE data line that is not JSON,
// or a non-SSE response cut short; a refusal without its headers (WWW-Authenticate, Retry-After)
// or JSON body; the authenticated server granting something to an input without credentials.
// Leaks: the servers are stopped at exit, so LeakSanitizer's exit check sees what they kept.
#include <unistd.h>

#include <cstdint>
#include <string_view>

#include "fuzz_auth.h"
#include "fuzz_check.h"
#include "fuzz_support.h"
#include "support/forward_check.h"

namespace fz = mcpfan::fuzz;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fz::server();  // start both before the first input (and before libFuzzer's timers)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fz::Routed in = fz::route(std::string_view(reinterpret_cast<const char*>(data), size));
  bool authed = in.target != fz::Target::Plain;  // HTTP has no trusted variant: both markers mean Authed
  int fd = fz::connect_http(authed);
  auto pieces = fz::split_input(in.rest);
  auto rx = fz::exchange(fd, pieces, authed ? "HTTP (authenticated server)" : "HTTP");
  ::close(fd);
  std::string joined;
  for (std::string_view piece : pieces) joined.append(piece);
  // The same bytes through the front proxy's forwarding, without a server: at once, and in
  // the reads the input's split markers make (the fuzzer moves them; forward_diff.mjs checks
  // the corpus byte by byte, which is too slow here).
  auto whole = mcpfan::testing::parse_and_forward(joined);
  auto in_pieces = mcpfan::testing::parse_and_forward(pieces);
  auto split = mcpfan::testing::compare_cases(whole, in_pieces);
  FUZZ_CHECK(!split, "parsed at once and in pieces differently (%s): %s", split->c_str(),
             fz::printable(joined).c_str());
  for (const auto& one : whole.requests) {
    auto mismatch = mcpfan::testing::strict_mismatch(one);
    FUZZ_CHECK(!mismatch, "%s: %s", mismatch->c_str(), fz::printable(joined).c_str());
  }
  // Starting with the HTTP/2 preface, the connection is served as HTTP/2: frames come back, not
  // HTTP/1.1 responses (fuzz_h2 checks those).
  const bool h2 = joined.substr(0, fz::kH2Preface.size()) == fz::kH2Preface;
  if (rx.clean_eof && !h2) {
    fz::HttpExpect expect;
    expect.head_requests = fz::head_requests(joined);
    expect.authed = authed;
    if (authed) {
      expect.may_have_token = fz::auth::may_carry_signed_token(joined, false);
      expect.may_have_publisher_key = fz::auth::may_carry_publisher_key(joined);
    }
    fz::check_http_responses(rx.bytes, expect);
  }
  return 0;
}

// libFuzzer target: the HTTP request path of the real server (transports/src/http/: the
// connection, the routes, and the engine decoders behind them). The server runs in this process
// (fuzz_support.cc): each input is written to a fresh loopback TCP connection, in pieces split
// at "@@SPLIT@@" (with a pause between, so http_parser sees partial requests), then the client
// half-closes and reads until the server closes.
//
// Findings: any sanitizer report in the server's worker thread; a server that stops reading or
// neither answers nor closes within 2 s of the client's FIN (a hang); a 500 answer; bytes back
// that are not well-formed HTTP/1.1 responses, a JSON body or SSE data line that is not JSON,
// or a non-SSE response cut short. Leaks: the server is stopped at exit, so LeakSanitizer's
// exit check sees everything it did not free.
#include <unistd.h>

#include <cstdint>
#include <string_view>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)mcpfan::fuzz::server();  // start it before the first input (and before libFuzzer's timers)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  int fd = mcpfan::fuzz::connect_http();
  auto pieces = mcpfan::fuzz::split_input(input);
  auto rx = mcpfan::fuzz::exchange(fd, pieces, "HTTP");
  ::close(fd);
  if (rx.clean_eof) {
    std::string joined;
    for (std::string_view piece : pieces) joined.append(piece);
    mcpfan::fuzz::check_http_responses(rx.bytes, mcpfan::fuzz::head_requests(joined));
  }
  return 0;
}

// libFuzzer target: the stdio line decoder path of the real server (transports/src/stdio/:
// line framing, over-long lines, both protocol eras, listens and their
// cancellation, and the RpcDecoder behind it). The server runs in this process
// (fuzz_support.cc, max_line_bytes 4 KiB): each input is written into one end of a fresh
// socketpair whose other end is given to Server::attach_stdio, in pieces split at
// "@@SPLIT@@" (with a pause between, so lines arrive in parts), then the client half-closes
// and reads until the server closes its end.
//
// Findings: any sanitizer report in the server's worker thread; a server that stops reading or
// does not close within 2 s of EOF (a hang); a complete output line that is not a JSON object.
// Leaks: the server is stopped at exit, so LeakSanitizer's exit check sees what it kept.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz_check.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)mcpfan::fuzz::server();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair: %s", std::strerror(errno));
  // The server owns fds[1] from here, unless it refuses it (then it is still ours).
  if (!mcpfan::fuzz::server().attach_stdio(fds[1], fds[1])) ::close(fds[1]);
  auto rx = mcpfan::fuzz::exchange(fds[0], mcpfan::fuzz::split_input(input), "stdio");
  ::close(fds[0]);
  mcpfan::fuzz::check_stdio_lines(rx.bytes);
  return 0;
}

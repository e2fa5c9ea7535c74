// libFuzzer target: the stdio line decoder path of the real server (transports/src/stdio/:
// line framing, over-long lines, both protocol eras, listens and their
// cancellation, authentication by a token in params._meta["mcpfan/authorization"], and the
// RpcDecoder behind it). The servers run in this process (fuzz_support.cc, max_line_bytes
// 4 KiB). By the input's first bytes (fuzz_support.h, route()):
//   - no marker: one end of a fresh socketpair goes to Server::attach_stdio of the server
//     without authentication;
//   - "@@AUTH@@": a fresh connection to the authenticated server's Unix socket (a --unix
//     client: it must send a token before anything is served);
//   - "@@AUTH-TRUSTED@@": attach_stdio on the authenticated server (trusted, tenant "default":
//     a token for another tenant is refused with -32031).
// The rest is written in pieces split at "@@SPLIT@@" (with a pause between, so lines arrive in
// parts), then the client half-closes and reads until the server closes its end.
//
// Findings: any sanitizer report in the server's worker thread; a server that stops reading or
// does not close within 2 s of EOF (a hang); a complete output line that is not a JSON-RPC
// message with a known error code; a client that must authenticate being served without a
// signed token. Leaks: the servers are stopped at exit, so LeakSanitizer's exit check sees what
// they kept.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fuzz_auth.h"
#include "fuzz_check.h"
#include "fuzz_support.h"

namespace fz = mcpfan::fuzz;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fz::server();
  return 0;
}

namespace {

// The client's end of a fresh stdio stream to the chosen server.
int open_client(fz::Target target) {
  if (target == fz::Target::Authed) return fz::connect_unix();
  int fds[2];
  FUZZ_CHECK(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair: %s", std::strerror(errno));
  mcpfan::Server& s = target == fz::Target::Plain ? fz::server() : fz::authed_server();
  // The server owns fds[1] from here, unless it refuses it (then it is still ours).
  if (!s.attach_stdio(fds[1], fds[1])) ::close(fds[1]);
  return fds[0];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fz::Routed in = fz::route(std::string_view(reinterpret_cast<const char*>(data), size));
  int fd = open_client(in.target);
  auto pieces = fz::split_input(in.rest);
  auto rx = fz::exchange(fd, pieces, in.target == fz::Target::Plain ? "stdio" : "stdio (authenticated server)");
  ::close(fd);
  fz::StdioExpect expect;
  if (in.target != fz::Target::Plain) {
    std::string joined;
    for (std::string_view piece : pieces) joined.append(piece);
    expect.needs_token = in.target == fz::Target::Authed;
    expect.may_have_token = fz::auth::may_carry_signed_token(joined, true);
  }
  fz::check_stdio_lines(rx.bytes, expect);
  return 0;
}

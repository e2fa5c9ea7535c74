// An embedding host: runs mcpfan::Server in-process, attaches one stdio-framed client over a
// socketpair, opens a subscriptions/listen on it, publishes through the Hub and reads the
// notification back. Prints "embed_example: ok" and exits 0 when every step worked.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "mcpfan/publish_decoder.h"
#include "mcpfan/transport/server.h"

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "embed_example: FAIL: %s\n", what.c_str());
  return 1;
}

// One line from `fd` within 5 s (the rest of what was read stays in `buf`).
bool read_line(int fd, std::string& buf, std::string& line) {
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return true;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char chunk[4096];
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) return false;
    buf.append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace

int main() {
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;  // ephemeral loopback port: the HTTP side is not used here
  cfg.workers = 1;
  mcpfan::Server server(cfg);
  auto port = server.start();
  if (!port) return fail("start: " + port.error().message);

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return fail("socketpair");
  if (auto attached = server.attach_stdio(sv[0], sv[0]); !attached)
    return fail("attach_stdio: " + attached.error().message);

  const std::string listen =
      R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{"_meta":{)"
      R"("io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},)"
      R"("notifications":{"resourceSubscriptions":["file:///example/"]}}})"
      "\n";
  if (::write(sv[1], listen.data(), listen.size()) != static_cast<ssize_t>(listen.size())) return fail("write listen");
  std::string buf, line;
  if (!read_line(sv[1], buf, line) || line.find("notifications/subscriptions/acknowledged") == std::string::npos) {
    return fail("no acknowledgement: " + line);
  }

  // Publish as a backend in the same process would: decode once, hand the payloads to the hub.
  mcpfan::PublishDecoder decoder;
  auto decoded =
      decoder.decode(R"({"method":"notifications/resources/updated","params":{"uri":"file:///example/a.txt"}})",
                     server.hub().tenants());
  if (!decoded) return fail("decode: " + decoded.error().message);
  if (!server.hub().publish(decoded.value().payloads)) return fail("publish refused");
  if (!read_line(sv[1], buf, line) || line.find(R"("uri":"file:///example/a.txt")") == std::string::npos ||
      line.find(R"("io.modelcontextprotocol/subscriptionId":"listen:0")") == std::string::npos) {
    return fail("no notification: " + line);
  }
  if (auto stopped = server.stop(); !stopped) return fail("stop: " + stopped.error().message);
  ::close(sv[1]);
  std::printf("embed_example: ok (server on 127.0.0.1:%u, notification: %s)\n", static_cast<unsigned>(port.value()),
              line.c_str());
  return 0;
}

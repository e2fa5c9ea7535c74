// A host that spawns child processes which speak MCP on their stdin/stdout (as a local MCP
// client does) and attaches each child's pipes to an embedded mcpfan Server with
// Server::attach_stdio(): the server reads the child's stdout and writes to its stdin.
// Each child (a /bin/sh script here) opens a 2026 `subscriptions/listen` as its first line,
// and reports the lines it receives on its stderr, which the host reads to check them.
// attach_stdio() returns a typed handle per child; the server tells the host when a child's
// connection has ended (StdioOptions::on_end, with why), and the host ends one with
// detach_stdio(). Exits 0 when each child got its acknowledgement and then its own
// notification only, the two that exit are reported as InputEnded, and the one the host
// detaches got its listen's final result before its stdin closed.
//
// fds: attach_stdio() takes the host's ends of the pipes; on success they are the server's
// (it closes them), on error they stay the caller's. Every pipe is O_CLOEXEC so no child
// inherits another's ends; posix_spawn's dup2 gives the child its own as 0, 1 and 2.
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "mcpfan/mcp.h"
#include "mcpfan/payload.h"
#include "mcpfan/transport/server.h"

extern char** environ;

namespace {

// Sends its listen, then echoes two received lines to stderr (the acknowledgement and one
// notification) and exits: its stdout closes, which ends its connection to the server.
constexpr const char* kChildScript =
    "printf '%s\\n' \"$1\"; read -r a; printf '%s\\n' \"$a\" >&2; read -r b; printf '%s\\n' \"$b\" >&2";
// Sends its listen, then echoes every received line to stderr until its stdin ends.
constexpr const char* kLongLivedScript = "printf '%s\\n' \"$1\"; while read -r l; do printf '%s\\n' \"$l\" >&2; done";

struct Child {
  pid_t pid = -1;
  int report = -1;  // the child's stderr, read by the host
  std::string got;
  mcpfan::StdioClient client;  // its connection in the server
};

/** The children's ends as the server reports them (on worker threads), awaited by main(). */
class EndLog {
 public:
  mcpfan::StdioOptions options() {
    mcpfan::StdioOptions o;
    o.on_end = [this](mcpfan::StdioClient c, mcpfan::StdioEnd why) {
      std::lock_guard lock(mu_);
      ends_.emplace(c.number(), why);
      cv_.notify_all();
    };
    return o;
  }
  /** How `c` ended, waiting up to 5 s for it. */
  bool wait(mcpfan::StdioClient c, mcpfan::StdioEnd& why) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(5), [&] { return ends_.count(c.number()) > 0; })) return false;
    why = ends_[c.number()];
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, mcpfan::StdioEnd> ends_;
};

bool spawn_child(mcpfan::Server& server, EndLog& ends, const char* script_text, const std::string& listen_line,
                 Child& child) {
  int to_child[2], from_child[2], report[2];
  if (::pipe2(to_child, O_CLOEXEC) || ::pipe2(from_child, O_CLOEXEC) || ::pipe2(report, O_CLOEXEC)) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
  posix_spawn_file_actions_adddup2(&fa, report[1], 2);
  std::string script = script_text;
  char* argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"), script.data(), const_cast<char*>("child"),
                  const_cast<char*>(listen_line.c_str()), nullptr};
  int rc = posix_spawn(&child.pid, "/bin/sh", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::close(report[1]);
  child.report = report[0];
  if (rc != 0) return false;
  // The server reads what the child writes and writes what the child reads.
  auto attached = server.attach_stdio(from_child[0], to_child[1], ends.options());
  if (!attached) {
    ::close(from_child[0]);
    ::close(to_child[1]);
    return false;
  }
  child.client = attached.value();
  return true;
}

/** Reads the child's report until `lines` lines arrived or 5 s pass. */
bool read_lines(Child& c, std::size_t lines) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto count = [&] {
    std::size_t n = 0;
    for (char ch : c.got) n += ch == '\n';
    return n;
  };
  while (count() < lines) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{c.report, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(c.report, buf, sizeof buf);
    if (n <= 0) return false;
    c.got.append(buf, static_cast<std::size_t>(n));
  }
  return true;
}

int fail(const std::string& what) {
  std::fprintf(stderr, "spawn_children: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  // A child that exits closes its stdin: the server's next write to it (the listen's final
  // result at the child's EOF) must fail with EPIPE, not kill the host (transport/server.h).
  std::signal(SIGPIPE, SIG_IGN);
  mcpfan::ServerConfig config;
  config.listen.port = 0;
  config.workers = 2;
  mcpfan::Server server(config);
  if (!server.start()) return fail("start() failed");

  // Children 0 and 1 exit after their notification; child 2 runs until the host detaches it.
  constexpr int kChildren = 3;
  EndLog ends;
  std::vector<Child> children(kChildren);
  for (int i = 0; i < kChildren; ++i) {
    std::string line = R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{"_meta":{)"
                       R"("io.modelcontextprotocol/protocolVersion":")" + std::string(mcpfan::mcp::kRev2026) +
                       R"(","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":)"
                       R"(["file:///child/)" + std::to_string(i) + R"(/"]}}})";
    const char* script = i < 2 ? kChildScript : kLongLivedScript;
    if (!spawn_child(server, ends, script, line, children[i]))
      return fail("cannot spawn or attach child " + std::to_string(i));
  }
  // Each child's subscription is in place once its acknowledgement arrived.
  for (auto& c : children) {
    if (!read_lines(c, 1) || c.got.find("notifications/subscriptions/acknowledged") == std::string::npos) {
      return fail("no acknowledgement: " + c.got);
    }
  }
  for (int i = 0; i < kChildren; ++i) {
    if (!server.hub().publish(mcpfan::mcp::resource_updated("file:///child/" + std::to_string(i) + "/state")))
      return fail("publish refused");
  }
  int status = 0;
  for (int i = 0; i < kChildren; ++i) {
    Child& c = children[i];
    std::string mine = "file:///child/" + std::to_string(i) + "/state";
    if (!read_lines(c, 2) || c.got.find(mine) == std::string::npos)
      return fail("child " + std::to_string(i) + " got: " + c.got);
    for (int j = 0; j < kChildren; ++j) {
      if (j != i && c.got.find("file:///child/" + std::to_string(j) + "/state") != std::string::npos) {
        return fail("child " + std::to_string(i) + " got another's notification: " + c.got);
      }
    }
  }
  // The long-lived child: the host ends its connection; the server answers its listen with
  // the final result and closes its pipes, so the child's stdin ends and it exits.
  if (!server.detach_stdio(children[2].client)) return fail("detach_stdio() failed");
  for (int i = 0; i < kChildren; ++i) {
    Child& c = children[i];
    mcpfan::StdioEnd why{};
    if (!ends.wait(c.client, why)) return fail("no end reported for child " + std::to_string(i));
    mcpfan::StdioEnd expected = i < 2 ? mcpfan::StdioEnd::InputEnded : mcpfan::StdioEnd::Detached;
    if (why != expected) return fail("child " + std::to_string(i) + " ended for another reason");
    if (i == 2 && (!read_lines(c, 3) || c.got.find(R"("id":"listen:0","result")") == std::string::npos)) {
      return fail("the detached child got no final result: " + c.got);
    }
    ::waitpid(c.pid, &status, 0);
    ::close(c.report);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("child " + std::to_string(i) + " failed");
  }
  if (!server.stop()) return fail("stop() failed");
  std::printf("spawn_children: ok (%d children attached by their stdio, each got its acknowledgement and its own "
              "notification; two ended with their input, one was detached after its final result)\n",
              kChildren);
  return 0;
}

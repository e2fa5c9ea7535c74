// Launching the real mcpfan (binary path, port from its log line) and ServerProcess.
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "harness.h"

#ifndef MCPFAN_BIN
#error "MCPFAN_BIN must name the mcpfan binary"
#endif

namespace itest {
namespace {

std::string BinaryPath() {
  const char* env = std::getenv("MCPFAN_BIN");
  return env && *env ? env : MCPFAN_BIN;
}

// Port from a line matching `listening on ([0-9.]+|\[[0-9a-f:]+\]):([0-9]+)`, or 0.
// (Hand-rolled: std::regex trips -Wmaybe-uninitialized under GCC 12 sanitizers.)
int PortInLine(std::string_view line) {
  constexpr std::string_view kKey = "listening on ";
  for (size_t at = line.find(kKey); at != std::string_view::npos; at = line.find(kKey, at + 1)) {
    std::string_view rest = line.substr(at + kKey.size());
    size_t i = 0;
    if (!rest.empty() && rest[0] == '[') {
      i = 1;
      while (i < rest.size() && (std::isxdigit(static_cast<unsigned char>(rest[i])) || rest[i] == ':')) ++i;
      if (i == 1 || i >= rest.size() || rest[i] != ']') continue;
      ++i;
    } else {
      while (i < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[i])) || rest[i] == '.')) ++i;
      if (i == 0) continue;
    }
    if (i >= rest.size() || rest[i] != ':') continue;
    size_t d = ++i;
    int port = 0;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])) && i - d < 6) {
      port = port * 10 + (rest[i] - '0');
      ++i;
    }
    if (i > d && port > 0 && port < 65536) return port;
  }
  return 0;
}

// The port from the first complete stderr line that names one, or 0.
int FindPort(const std::string& text) {
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    if (int port = PortInLine(std::string_view(text).substr(start, nl - start))) return port;
    start = nl + 1;
  }
  return 0;
}

}  // namespace

int LaunchMcpfan(ChildProcess& proc, const std::vector<std::string>& args, Ms start_timeout,
                 std::string_view what, std::string* error, int child_stdin, int child_stdout) {
  std::string bin = BinaryPath();
  std::vector<std::string> argv{bin};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!proc.Spawn(argv, child_stdin, child_stdout)) {
    *error = proc.error();
    return 0;
  }
  int port = 0;
  bool closed = false;
  proc.WaitStderrUntil([&](const std::string& text) { return (port = FindPort(text)) > 0; },
                       start_timeout, &closed);
  if (port <= 0) {
    *error = std::string(what) +
             (closed ? " exited/closed stderr before logging its port"
                     : " did not log 'listening on 127.0.0.1:PORT' in time") +
             "; binary=" + bin + "; stderr so far:\n" + proc.Stderr();
  }
  return port;
}

ServerProcess::ServerProcess(std::vector<std::string> args, Ms start_timeout) {
  args.insert(args.begin(), {"--listen", "127.0.0.1:0"});
  port_ = LaunchMcpfan(*this, args, start_timeout, "mcpfan", &error_);
}

ServerProcess::~ServerProcess() {
  Stop();
  if (::testing::Test::HasFailure()) PrintStderr("mcpfan");
}

long ProcessRssKib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 12, '\n');
  }
  return 0;
}

}  // namespace itest

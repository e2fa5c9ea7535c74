// Small helpers shared by several *_test.cc files: publish bodies, "nothing more
// arrived" checks, and a server on a Unix socket in a fresh temp directory.
#pragma once

#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "harness.h"
#include "stdio_client.h"

namespace itest {

// A notifications/resources/updated publish body for `uri` (+ extra params fields).
inline std::string Updated(std::string_view uri, std::string_view extra_params = {}) {
  std::string b = R"({"method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) + "\"";
  if (!extra_params.empty()) b.append(",").append(extra_params);
  return b + "}}";
}

// No further line arrives on `ch` within `quiet`.
inline ::testing::AssertionResult NothingMore(LineChannel& ch, Ms quiet = Ms(300)) {
  auto extra = ch.DrainFor(quiet);
  if (extra.empty()) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure() << extra.size() << " unexpected line(s):";
  for (const auto& l : extra) f << "\n    " << l.substr(0, 300);
  return f;
}

// With --publish-listen: the operator listener's port, from the log line "mcpfan: publish
// listener on HOST:PORT" (bounded wait); 0 if it never came.
// Runs a shell command and returns its stdout; `status`, when given, gets pclose()'s (-1: it did
// not run). Bound it by the command's own limits (curl --max-time, timeout): popen waits for it.
inline std::string Sh(const std::string& cmd, int* status = nullptr) {
  std::string out;
  int rc = -1;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    rc = ::pclose(p);
  }
  if (status) *status = rc;
  return out;
}

inline int PublishPort(const ServerProcess& srv) {
  const std::string needle = "publish listener on ";
  if (!srv.WaitForStderr(needle, kStart)) return 0;
  std::string log = srv.Stderr();
  auto at = log.find(needle);
  auto eol = log.find('\n', at);
  std::string hostport = log.substr(at + needle.size(), eol - at - needle.size());
  return std::atoi(hostport.substr(hostport.rfind(':') + 1).c_str());
}

inline bool PathExists(const std::string& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0;
}

// `mcpfan --unix <fresh temp dir>/mcpfan.sock --workers 2`; the server is stopped before
// the directory is removed. Started only when the directory was made.
struct UnixServer {
  UnixServer() {
    if (!dir.path().empty()) srv.emplace(std::vector<std::string>{"--unix", sock, "--workers", "2"});
  }
  // The temp dir exists and the server logged its port.
  ::testing::AssertionResult ok() const {
    if (dir.path().empty()) return ::testing::AssertionFailure() << "mkdtemp failed";
    if (!srv->ok()) return ::testing::AssertionFailure() << srv->error();
    return ::testing::AssertionSuccess();
  }

  TempDir dir;
  const std::string sock = dir.path() + "/mcpfan.sock";
  std::optional<ServerProcess> srv;
};

}  // namespace itest

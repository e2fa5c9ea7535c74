// StdioChild: `mcpfan --stdio` with its stdin/stdout on pipes held by the test.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "fd_io.h"
#include "stdio_client.h"

namespace itest {

StdioChild::StdioChild(std::vector<std::string> args, Ms start_timeout) {
  IgnoreSigpipe();  // before fork, as the child inherits it
  args.insert(args.begin(), {"--stdio", "--listen", "127.0.0.1:0"});
  int in[2] = {-1, -1}, out[2] = {-1, -1};
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    error_ = std::string("pipe2: ") + std::strerror(errno);
    for (int fd : {in[0], in[1], out[0], out[1]}) {
      if (fd >= 0) close(fd);
    }
    return;
  }
  port_ = LaunchMcpfan(*this, args, start_timeout, "mcpfan --stdio", &error_, in[0], out[1]);
  close(in[0]);
  close(out[1]);
  io_.Attach(out[0], in[1]);
}

StdioChild::~StdioChild() {
  Stop();
  io_.Close();
  if (::testing::Test::HasFailure()) {
    PrintStderr("mcpfan --stdio");
    const auto& t = io_.transcript();
    std::cerr << "---- stdout lines received (" << t.size() << ") ----\n";
    for (size_t i = 0; i < t.size() && i < 50; ++i) std::cerr << "  " << t[i].substr(0, 400) << "\n";
    std::cerr << "---- end stdout ----\n";
  }
}

}  // namespace itest

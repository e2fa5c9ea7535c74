// Server::attach_stdio's typed handles (docs/embedding.md "Attached stdio clients"): each attached client gets a
// StdioClient, its on_end hears once why it ended (input ended, detached, server stopped, refused), and detach_stdio()
// ends one client in order (final results written, then its fds closed). Misuse (a handle that names nothing, one from
// another Server) is a clear error.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "mcpfan/mcp.h"
#include "mcpfan/transport/server.h"

namespace {

using namespace std::chrono_literals;

/** What the on_end callbacks reported, waited on by the test thread. */
struct Ends {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<mcpfan::StdioClient, mcpfan::StdioEnd>> seen;

  mcpfan::StdioOptions options() {
    mcpfan::StdioOptions o;
    o.on_end = [this](mcpfan::StdioClient c, mcpfan::StdioEnd why) {
      std::lock_guard lock(mu);
      seen.emplace_back(c, why);
      cv.notify_all();
    };
    return o;
  }
  /** Waits (bounded) until `n` ends were reported; returns how many there are. */
  std::size_t wait_for(std::size_t n) {
    std::unique_lock lock(mu);
    cv.wait_for(lock, 20s, [&] { return seen.size() >= n; });
    return seen.size();
  }
  std::size_t count(mcpfan::StdioClient c) {
    std::lock_guard lock(mu);
    std::size_t k = 0;
    for (auto& [who, why] : seen) k += who == c;
    return k;
  }
};

struct Pair {
  int mine = -1;    // the test's end
  int server = -1;  // handed to attach_stdio
  Pair() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
      mine = sv[0];
      server = sv[1];
    }
  }
  ~Pair() {
    if (mine >= 0) ::close(mine);
  }
};

void send_line(int fd, const std::string& line) {
  std::string s = line + "\n";
  ASSERT_EQ(::send(fd, s.data(), s.size(), MSG_NOSIGNAL), static_cast<ssize_t>(s.size()));
}

/** Reads until `want` appears or EOF; bounded by 20 s without input. Sets `eof` when the server closed. */
std::string read_until(int fd, const std::string& want, bool* eof = nullptr) {
  std::string got;
  char buf[4096];
  while (want.empty() || got.find(want) == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20000) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (eof) *eof = n == 0;
      break;
    }
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

const char* kListen =
    R"({"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen",)"
    R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["mem://a"]}}})";

mcpfan::ServerConfig two_workers() {
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.workers = 2;
  return cfg;
}

/** Attaches `p`'s server end (its ends reported to `ends`), opens a listen on it, waits for its acknowledgement. */
mcpfan::StdioClient attach_listening(mcpfan::Server& server, Ends& ends, Pair& p) {
  auto h = server.attach_stdio(p.server, p.server, ends.options());
  if (!h) {
    ADD_FAILURE() << "attach_stdio: " << h.error().message;
    return {};
  }
  send_line(p.mine, kListen);
  EXPECT_NE(read_until(p.mine, "acknowledged").find("acknowledged"), std::string::npos);
  return h.value();
}

TEST(StdioAttach, EachClientHasItsOwnHandleAndHearsOfItsEndOnce) {
  mcpfan::Server server(two_workers());
  ASSERT_TRUE(server.start());
  Ends ends;
  Pair a, b;
  // Both are served (on different workers: attach deals them out in turn).
  mcpfan::StdioClient ha = attach_listening(server, ends, a);
  mcpfan::StdioClient hb = attach_listening(server, ends, b);
  ASSERT_TRUE(ha && hb);
  EXPECT_NE(ha, hb);
  EXPECT_NE(ha.number(), hb.number());
  // a's input ends: a alone ends, after its listen's final result.
  ::shutdown(a.mine, SHUT_WR);
  bool eof = false;
  std::string rest = read_until(a.mine, "", &eof);
  EXPECT_TRUE(eof);
  EXPECT_NE(rest.find(R"("id":"l1","result")"), std::string::npos) << rest;
  ASSERT_EQ(ends.wait_for(1), 1u);
  {
    std::lock_guard lock(ends.mu);
    EXPECT_EQ(ends.seen[0].first, ha);
    EXPECT_EQ(ends.seen[0].second, mcpfan::StdioEnd::InputEnded);
  }
  // b still gets what is published.
  ASSERT_TRUE(server.hub().publish(mcpfan::mcp::resource_updated("mem://a")));
  EXPECT_NE(read_until(b.mine, "mem://a\"").find("notifications/resources/updated"), std::string::npos);
  ASSERT_TRUE(server.stop());
  ASSERT_EQ(ends.wait_for(2), 2u);
  EXPECT_EQ(ends.count(ha), 1u);
  EXPECT_EQ(ends.count(hb), 1u);
  std::lock_guard lock(ends.mu);
  EXPECT_EQ(ends.seen[1].second, mcpfan::StdioEnd::ServerStopped);
}

TEST(StdioAttach, DetachEndsOneClientInOrder) {
  mcpfan::Server server(two_workers());
  ASSERT_TRUE(server.start());
  Ends ends;
  Pair a, b;
  mcpfan::StdioClient ha = attach_listening(server, ends, a);
  mcpfan::StdioClient hb = attach_listening(server, ends, b);
  ASSERT_TRUE(ha && hb);

  ASSERT_TRUE(server.detach_stdio(ha));
  bool eof = false;
  std::string rest = read_until(a.mine, "", &eof);
  EXPECT_TRUE(eof) << "the detached client's socket is closed";
  EXPECT_NE(rest.find(R"("id":"l1","result")"), std::string::npos) << "its listen's final result came first: " << rest;
  ASSERT_EQ(ends.wait_for(1), 1u);
  {
    std::lock_guard lock(ends.mu);
    EXPECT_EQ(ends.seen[0].first, ha);
    EXPECT_EQ(ends.seen[0].second, mcpfan::StdioEnd::Detached);
  }
  // Detaching it again is no error and tells nobody twice; b is untouched.
  EXPECT_TRUE(server.detach_stdio(ha));
  ASSERT_TRUE(server.hub().publish(mcpfan::mcp::resource_updated("mem://a")));
  EXPECT_NE(read_until(b.mine, "mem://a\"").find("notifications/resources/updated"), std::string::npos);
  ASSERT_TRUE(server.stop());
  ASSERT_EQ(ends.wait_for(2), 2u);
  EXPECT_EQ(ends.count(ha), 1u);
  EXPECT_EQ(ends.count(hb), 1u);
}

TEST(StdioAttach, MisusedHandlesAreClearErrors) {
  mcpfan::Server server(two_workers());
  mcpfan::Server other(two_workers());
  Pair a;
  auto early = server.detach_stdio(mcpfan::StdioClient{});
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, -32602);
  EXPECT_NE(early.error().message.find("names no client"), std::string::npos) << early.error().message;
  ASSERT_TRUE(server.start());
  ASSERT_TRUE(other.start());
  auto h = other.attach_stdio(a.server, a.server);
  ASSERT_TRUE(h);
  auto wrong = server.detach_stdio(h.value());
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, -32602);
  EXPECT_NE(wrong.error().message.find("another Server"), std::string::npos) << wrong.error().message;
  // The client on `other` was not touched by that: it still answers.
  send_line(a.mine, kListen);
  EXPECT_NE(read_until(a.mine, "acknowledged").find("acknowledged"), std::string::npos);
  ASSERT_TRUE(other.stop());
  auto late = other.detach_stdio(h.value());
  ASSERT_FALSE(late);
  EXPECT_NE(late.error().message.find("stopped"), std::string::npos) << late.error().message;
  ASSERT_TRUE(server.stop());
}

TEST(StdioAttach, FdsThatCannotBeServedEndAsRefused) {
  mcpfan::Server server(two_workers());
  ASSERT_TRUE(server.start());
  Ends ends;
  // One regular file as both ends cannot carry a stream of messages.
  char path[] = "/tmp/mcpfan-stdio-attach-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  auto h = server.attach_stdio(fd, fd, ends.options());
  ASSERT_TRUE(h) << "refused on the worker, not by attach_stdio";
  ASSERT_EQ(ends.wait_for(1), 1u);
  {
    std::lock_guard lock(ends.mu);
    EXPECT_EQ(ends.seen[0].first, h.value());
    EXPECT_EQ(ends.seen[0].second, mcpfan::StdioEnd::Refused);
  }
  // Closed by the server (the number may have been reused since: compare what it names).
  char target[512] = {};
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  EXPECT_TRUE(n < 0 || std::string(target, static_cast<std::size_t>(n)).find(path) == std::string::npos)
      << "the server closed the fd it was given";
  ASSERT_TRUE(server.stop());
  std::lock_guard lock(ends.mu);
  EXPECT_EQ(ends.seen.size(), 1u) << "told once";
}

TEST(StdioAttach, AttachAfterStopIsRefusedAndNeverCallsBack) {
  mcpfan::Server server(two_workers());
  ASSERT_TRUE(server.start());
  ASSERT_TRUE(server.stop());
  Ends ends;
  Pair a;
  auto h = server.attach_stdio(a.server, a.server, ends.options());
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("stopping"), std::string::npos) << h.error().message;
  EXPECT_GE(::fcntl(a.server, F_GETFD), 0) << "a refused fd stays the caller's";
  ::close(a.server);
  std::lock_guard lock(ends.mu);
  EXPECT_TRUE(ends.seen.empty());
}

}  // namespace

// The embedded Server's threads and lifetimes under load ("Thread safety
// proven"): publishers on several threads, clients opening, subscribing, unsubscribing and
// closing streams on both eras and on stdio, all while Server::stop() runs. Built into the
// ThreadSanitizer pass of the test command, where a data race fails the run; in every
// build it checks the contract: stop() returns once publishing is closed and every loop has
// ended, publishes after it are refused, fds handed over are never leaked.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

mcpfan::PayloadRef update(const std::string& uri) {
  static thread_local std::string raw;
  raw = "\"" + uri + "\"";
  mcpfan::NotificationParts parts;
  parts.kind = mcpfan::Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params = {{"uri", raw}};
  return mcpfan::encode_notification(parts);
}

// A loopback client socket (tests/support/loopback.h); every wait is a poll with a deadline.
using mcpfan::testing::connect_loopback;

bool send_all(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// Reads until `needle` appeared, EOF, or the deadline. Returns what was read.
std::string read_until(int fd, std::string_view needle, std::chrono::milliseconds budget) {
  std::string got;
  auto deadline = Clock::now() + budget;
  char buf[8192];
  while (got.find(needle) == std::string::npos && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

std::string post(std::string_view path, std::string_view body, std::string_view extra = {}) {
  return "POST " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         "Accept: application/json, text/event-stream\r\n" + std::string(extra) +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

std::string listen_request(int id, const std::string& uri) {
  std::string body =
      R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
      R"(,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
      R"("io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true,)"
      R"("resourceSubscriptions":[")" +
      uri + R"("]}}})";
  return post("/mcp", body, "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n");
}

std::string session_id_of(const std::string& response) {
  auto at = response.find("Mcp-Session-Id: ");
  if (at == std::string::npos) return {};
  auto end = response.find("\r\n", at);
  return response.substr(at + 16, end - at - 16);
}

TEST(ServerStress, PublishersAndClientsRaceStop) {
  std::signal(SIGPIPE, SIG_IGN);
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.workers = 3;
  cfg.debounce_ms = 2;  // the debouncer's thread joins the race, and its close with stop()
  cfg.shutdown_grace_ms = 300;
  cfg.http.keepalive_ms = 20;
  mcpfan::Server server(cfg);
  auto started = server.start();
  ASSERT_TRUE(started) << started.error().message;
  const std::uint16_t port = started.value();

  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> accepted{0}, refused_after_stop{0}, listens{0}, sessions{0}, stdio{0};
  std::atomic<bool> stopped{false};
  std::vector<std::thread> threads;

  // Publishers straight into the hub, from 3 threads.
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200000 && !done; ++i) {
        bool was_stopped = stopped.load();
        bool ok = server.hub().publish(update("mem://s/" + std::to_string((i + t) % 64)));
        if (ok) accepted.fetch_add(1);
        else if (was_stopped) refused_after_stop.fetch_add(1);
        if (was_stopped && ok) ADD_FAILURE() << "a publish was accepted after stop() returned";
      }
    });
  }
  // 2026 listens: open, read the ack and a few events, close.
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000 && !done; ++i) {
        int fd = connect_loopback(port);
        if (fd < 0) continue;
        if (send_all(fd, listen_request(i, "mem://s/" + std::to_string((i * 7 + t) % 64)))) {
          if (read_until(fd, "acknowledged", 2000ms).find("acknowledged") != std::string::npos) listens.fetch_add(1);
          (void)read_until(fd, "resources/updated", 20ms);
        }
        ::close(fd);
      }
    });
  }
  // 2025 sessions: initialize, open the GET stream, subscribe and unsubscribe from another
  // connection (a cross-worker post_task), delete.
  threads.emplace_back([&] {
    const std::string init =
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},)"
        R"("clientInfo":{"name":"s","version":"1"}}})";
    for (int i = 0; i < 2000 && !done; ++i) {
      int c = connect_loopback(port);
      if (c < 0) continue;
      std::string sid;
      if (send_all(c, post("/mcp", init))) sid = session_id_of(read_until(c, "\r\n\r\n", 2000ms));
      if (!sid.empty()) {
        int g = connect_loopback(port);
        std::string h = "Mcp-Session-Id: " + sid + "\r\n";
        if (g >= 0) send_all(g, "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n" + h + "\r\n");
        for (const char* m : {"resources/subscribe", "resources/unsubscribe", "resources/subscribe"}) {
          std::string body =
              std::string(R"({"jsonrpc":"2.0","id":1,"method":")") + m + R"(","params":{"uri":"mem://s/3"}})";
          if (!send_all(c, post("/mcp", body, h))) break;
          (void)read_until(c, "\r\n\r\n", 500ms);
        }
        sessions.fetch_add(1);
        if (g >= 0) {
          (void)read_until(g, "resources/updated", 20ms);
          ::close(g);
        }
        send_all(c, "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + h + "\r\n");
      }
      ::close(c);
    }
  });
  // stdio clients attached by fd (adopt messages), racing the loops' close at stop().
  threads.emplace_back([&] {
    for (int i = 0; i < 5000 && !done; ++i) {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) continue;
      ::fcntl(sv[1], F_SETFL, O_NONBLOCK);
      if (server.attach_stdio(sv[1], sv[1])) {
        stdio.fetch_add(1);
        send_all(
            sv[0],
            R"({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen",)"
            R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
            R"("io.modelcontextprotocol/clientCapabilities":{}},)"
            R"("notifications":{"resourceSubscriptions":["mem://s/1"]}}})"
            "\n");
        (void)read_until(sv[0], "\n", 10ms);
      } else {
        ::close(sv[1]);  // refused: still ours
      }
      ::close(sv[0]);
    }
  });

  // Let every kind of client get going, then stop in the middle of it all.
  auto deadline = Clock::now() + 60s;
  while ((listens < 20 || sessions < 5 || stdio < 20 || accepted < 10000) && Clock::now() < deadline)
    std::this_thread::sleep_for(5ms);
  EXPECT_GE(listens.load(), 20u);
  EXPECT_GE(sessions.load(), 5u);
  auto st = server.stop();
  EXPECT_TRUE(st) << st.error().message;
  stopped = true;
  EXPECT_FALSE(server.hub().publish(update("mem://s/1"))) << "publish after stop()";
  EXPECT_FALSE(server.attach_stdio(0, 0)) << "attach after stop()";
  // Everyone runs a little into the stopped server, then ends.
  std::this_thread::sleep_for(100ms);
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_TRUE(server.stop()) << "stop() is idempotent";
}

TEST(ServerLifecycle, MisuseIsAClearErrorNotUndefinedBehaviour) {
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.workers = 2;
  std::atomic<bool> stop_refused{false};
  std::atomic<bool> eof_seen{false};
  mcpfan::Server* self = nullptr;
  mcpfan::StdioOptions opts;
  opts.on_end = [&](mcpfan::StdioClient, mcpfan::StdioEnd) {
    // On a worker thread: stop() from here used to join its own thread.
    auto st = self->stop();
    stop_refused = !st && st.error().message.find("worker thread") != std::string::npos;
    eof_seen = true;
  };
  mcpfan::Server server(cfg);
  self = &server;
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  // Before start(): the worker count was divided by zero.
  auto early = server.attach_stdio(sv[1], sv[1]);
  EXPECT_FALSE(early);
  EXPECT_NE(early.error().message.find("before start"), std::string::npos) << early.error().message;
  EXPECT_GE(::fcntl(sv[1], F_GETFD), 0) << "a refused fd stays the caller's";
  ASSERT_TRUE(server.start());
  ASSERT_TRUE(server.attach_stdio(sv[1], sv[1], std::move(opts)));
  ::close(sv[0]);  // EOF: on_end runs on the worker
  for (int i = 0; i < 2000 && !eof_seen; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(eof_seen);
  EXPECT_TRUE(stop_refused);
  EXPECT_TRUE(server.stop());
}

}  // namespace

// A host that embeds mcpfan's Server: it starts the server on an ephemeral loopback port,
// opens one `subscriptions/listen` over a plain socket (as an MCP client would), publishes
// from two threads of its own through server.hub(), and checks that both notifications
// arrive on the listen's SSE stream, and that its own metrics sink counts them
// (Server::collect_metrics). Clients are authenticated by the host's own callback
// (ServerConfig::auth.authenticate_client, mcpfan/transport/host_auth.h): "Bearer acme-token" is
// tenant "acme", anything else is denied (401). Exits 0 on success, 1 with a message otherwise.
//
// Thread affinity, as the headers state it: Server's constructor, start(), stop() and its
// destructor run on this (the controlling) thread; hub().publish() is thread-safe; stop()
// closes the hub first, so publishing threads are joined before the Server is destroyed; the
// authenticator runs on worker threads, concurrently, and only reads what it captured.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "mcpfan/mcp.h"
#include "mcpfan/payload.h"
#include "mcpfan/transport/host_auth.h"
#include "mcpfan/transport/server.h"

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "embed_server: %s\n", what);
  return 1;
}

int connect_to(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

bool send_all(int fd, const std::string& s) {
  for (std::size_t off = 0; off < s.size();) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

/** Reads into `got` until every needle appears or 5 s pass. */
bool read_until(int fd, std::string& got, const std::vector<std::string>& needles) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    bool all = true;
    for (const auto& n : needles) all = all && got.find(n) != std::string::npos;
    if (all) return true;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return false;
    got.append(buf, static_cast<std::size_t>(n));
  }
}

/** Reads until the peer closes or 5 s pass (an answer sent with Connection: close). */
std::string read_to_eof(int fd) {
  std::string got;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return got;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<std::size_t>(n));
  }
}

/**
 * The host's authentication: a lookup in memory (it runs on a worker's event loop, so it must
 * not block), thread-safe because it only reads. A real host would look the credential up in
 * a table its own threads keep fresh.
 */
std::variant<mcpfan::ClientGrant, mcpfan::ClientDenial> authenticate(const mcpfan::ClientCredentials& c) {
  if (c.authorization == "Bearer acme-token") {
    return mcpfan::ClientGrant{"acme", std::vector<std::string>{"file:///project/"}};
  }
  return mcpfan::ClientDenial{"unknown credentials"};
}

/**
 * What a backend publishes: `notifications/resources/updated` for `uri` (no characters that
 * JSON escapes), with a _meta of its own. NotificationParts holds views: `uri` routes it,
 * `params` and `meta` are what is written (raw JSON values), all read during the call only.
 */
mcpfan::PayloadRef resource_updated(const std::string& uri, std::string_view rev, mcpfan::TenantId tenant) {
  std::string uri_json = "\"" + uri + "\"";
  mcpfan::NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = mcpfan::Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params.emplace_back("uri", uri_json);
  parts.meta.emplace_back("origin/rev", rev);
  parts.has_meta = true;
  return mcpfan::encode_notification(parts);
}

/**
 * The host's own metrics sink (mcpfan/transport/metrics.h): keeps the one number this host
 * checks. A real host would copy every family into its registry; the views die with each call.
 */
class PublishedTotal final : public mcpfan::MetricsSink {
 public:
  double value = -1;
  void family(std::string_view name, mcpfan::MetricType, std::string_view) override {
    current_ = name == "mcpfan_published_total";
  }
  void sample(std::span<const mcpfan::MetricLabel>, double v) override {
    if (current_) value = v;
  }

 private:
  bool current_ = false;
};

}  // namespace

int main() {
  std::signal(SIGPIPE, SIG_IGN);  // a peer that vanished is an EPIPE, not the end of the host (transport/server.h)
  mcpfan::ServerConfig config;
  config.listen.host = "127.0.0.1";
  config.listen.port = 0;  // ephemeral
  config.workers = 2;
  config.auth.authenticate_client = authenticate;
  mcpfan::Server server(config);
  auto port = server.start();
  if (!port) return fail("start() failed");

  std::string body = R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{"_meta":{)"
                     R"("io.modelcontextprotocol/protocolVersion":")" + std::string(mcpfan::mcp::kRev2026) +
                     R"(","io.modelcontextprotocol/clientCapabilities":{}},)"
                     R"("notifications":{"resourceSubscriptions":["file:///project/"]}}})";
  auto request = [&](std::string_view authorization, bool close) {
    return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port.value()) +
           "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
           "MCP-Protocol-Version: " + std::string(mcpfan::mcp::kRev2026) +
           "\r\nMcp-Method: subscriptions/listen\r\nAuthorization: " + std::string(authorization) +
           (close ? "\r\nConnection: close" : "") + "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\n\r\n" + body;
  };

  // A credential the host does not know: 401 with its message.
  int denied_fd = connect_to(port.value());
  if (denied_fd < 0) return fail("cannot connect to the server");
  if (!send_all(denied_fd, request("Bearer someone-else", true))) return fail("cannot send the denied request");
  std::string denied = read_to_eof(denied_fd);
  ::close(denied_fd);
  if (denied.rfind("HTTP/1.1 401", 0) != 0 || denied.find("unknown credentials") == std::string::npos) {
    std::fprintf(stderr, "%s\n", denied.c_str());
    return fail("a denied request did not get 401 with the host's message");
  }

  int fd = connect_to(port.value());
  if (fd < 0) return fail("cannot connect to the server");
  std::string got;
  if (!send_all(fd, request("Bearer acme-token", false))) return fail("cannot send the listen request");
  // The acknowledgement comes once the subscription is in place: publishes after it are delivered.
  if (!read_until(fd, got, {"notifications/subscriptions/acknowledged"})) return fail("no acknowledgement");
  // The grant acquired tenant "acme": a publish names it (another tenant's would not reach this listen).
  auto acme = server.hub().tenants().find("acme");
  if (!acme) return fail("tenant acme unknown after its grant");

  // Two host threads publish; Hub::publish() is thread-safe.
  std::vector<std::thread> publishers;
  bool accepted[2] = {false, false};
  for (int t = 0; t < 2; ++t) {
    publishers.emplace_back([&server, &accepted, t, tenant = *acme] {
      std::string uri = "file:///project/from-thread-" + std::to_string(t);
      accepted[t] = server.hub().publish(resource_updated(uri, std::to_string(t), tenant));
    });
  }
  for (auto& th : publishers) th.join();
  if (!accepted[0] || !accepted[1]) return fail("a publish was refused");
  if (!read_until(fd, got, {"file:///project/from-thread-0", "file:///project/from-thread-1"})) {
    std::fprintf(stderr, "%s\n", got.c_str());
    return fail("the published notifications did not arrive");
  }

  // The host's metrics system pulls mcpfan's numbers itself (any thread; here, this one).
  PublishedTotal published;
  if (!server.collect_metrics(published) || published.value != 2)
    return fail("collect_metrics() did not count the 2 publishes");

  // stop() closes the hub (a publish now returns false), ends the listen with its final result.
  if (!server.stop()) return fail("stop() failed");
  if (server.hub().publish(resource_updated("file:///project/late", "9", *acme)))
    return fail("publish after stop() accepted");
  if (!read_until(fd, got, {R"("resultType":"complete")"})) return fail("no final result for the listen");
  ::close(fd);
  std::puts(
      "embed_server: ok (unknown credentials 401, acme's listen acknowledged, 2 publishes from host threads delivered "
      "and counted by its metrics sink, final result on stop)");
  return 0;
}

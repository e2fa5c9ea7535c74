// ServerConfig::auth.authenticate_client (docs/embedding.md "The host's own authentication"): an in-process
// Server on an ephemeral loopback port, clients over real sockets (HTTP) and a socketpair
// (an attached stdio client). Every wait is for an event (a line, an answer, EOF) with a
// bound; nothing sleeps.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "mcpfan/mcp.h"
#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

using mcpfan::ClientCredentials;
using mcpfan::ClientDenial;
using mcpfan::ClientGrant;
using mcpfan::ClientTransport;
using Answer = std::variant<ClientGrant, ClientDenial>;

constexpr auto kWait = std::chrono::seconds(5);

using mcpfan::testing::read_until;
using mcpfan::testing::send_all;

std::string meta_2026() {
  return R"("_meta":{"io.modelcontextprotocol/protocolVersion":")" + std::string(mcpfan::mcp::kRev2026) +
         R"(","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},)"
         R"("io.modelcontextprotocol/clientCapabilities":{}})";
}

std::string listen_body(const std::string& uri) {
  return R"({"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{)" + meta_2026() +
         R"(,"notifications":{"resourceSubscriptions":[")" + uri + R"("]}}})";
}

/** A 2026 listen over HTTP; `authorization` empty: no header. Connection: close, so a refusal ends in EOF. */
std::string listen_request(std::uint16_t port, const std::string& uri, const std::string& authorization) {
  std::string body = listen_body(uri);
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: " + std::string(mcpfan::mcp::kRev2026) +
         "\r\nMcp-Method: subscriptions/listen\r\nConnection: close\r\n" +
         (authorization.empty() ? "" : "Authorization: " + authorization + "\r\n") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

/** An open listen: its socket (close it) and what was read up to the acknowledgement. */
struct Listen {
  int fd = -1;
  std::string got;
  bool acknowledged = false;
  ~Listen() {
    if (fd >= 0) ::close(fd);
  }
};

void open_listen(Listen& l, std::uint16_t port, const std::string& uri, const std::string& authorization) {
  l.fd = mcpfan::testing::connect_loopback(port);
  ASSERT_GE(l.fd, 0);
  ASSERT_TRUE(send_all(l.fd, listen_request(port, uri, authorization)));
  l.acknowledged = read_until(l.fd, l.got, "notifications/subscriptions/acknowledged");
}

/** The whole answer to a listen the server refuses (it closes: Connection: close). */
std::string refused_listen(std::uint16_t port, const std::string& uri, const std::string& authorization) {
  Listen l;
  open_listen(l, port, uri, authorization);
  if (l.acknowledged) return "acknowledged: " + l.got;
  return l.got;
}

std::string get_metrics(std::uint16_t port) {
  int fd = mcpfan::testing::connect_loopback(port);
  std::string got;
  if (fd < 0) return got;
  if (send_all(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) read_until(fd, got, "");
  ::close(fd);
  return got;
}

/** The value of one metric sample (its full name with labels), -1 when absent. */
long long metric(const std::string& text, const std::string& sample) {
  std::size_t at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + sample.size() + 2));
}

std::string auth_failures(std::string_view reason) {
  return R"(mcpfan_auth_failures_total{scope="client",reason=")" + std::string(reason) + "\"}";
}

/** The host of most tests: two tokens, two tenants; "acme-limited" restricted to file:///acme/. */
Answer host(const ClientCredentials& c) {
  if (c.authorization == "Bearer acme-token") return ClientGrant{"acme", std::nullopt};
  if (c.authorization == "Bearer beta-token") return ClientGrant{"beta", std::nullopt};
  if (c.authorization == "Bearer acme-limited") return ClientGrant{"acme", std::vector<std::string>{"file:///acme/"}};
  if (c.authorization == "Bearer nothing-allowed") return ClientGrant{"acme", std::vector<std::string>{}};
  if (c.authorization == "Bearer bad-tenant") return ClientGrant{"not a tenant!", std::nullopt};
  if (c.authorization == "Bearer throw") throw std::runtime_error("host database unavailable (secret detail)");
  return ClientDenial{"unknown credentials (host says no)"};
}

struct HostServer {
  explicit HostServer(mcpfan::ClientAuthenticator auth = host,
                      const std::function<void(mcpfan::ServerConfig&)>& more = {}) {
    // transport/server.h: a host ignores SIGPIPE (a stdio client closed before stop() writes its final result).
    std::signal(SIGPIPE, SIG_IGN);
    mcpfan::ServerConfig config;
    config.listen.port = 0;
    config.workers = 2;
    if (more) more(config);
    config.auth.authenticate_client = std::move(auth);
    server = std::make_unique<mcpfan::Server>(config);
    auto bound = server->start();
    EXPECT_TRUE(bound.ok()) << bound.error().message;
    if (bound) port = bound.value();
  }
  ~HostServer() { EXPECT_TRUE(server->stop().ok()); }
  std::unique_ptr<mcpfan::Server> server;
  std::uint16_t port = 0;
};

TEST(HostAuth, AGrantServesTheListenWithItsTenantsNotificationsOnly) {
  HostServer s;
  Listen l;
  open_listen(l, s.port, "file:///project/", "Bearer acme-token");
  ASSERT_TRUE(l.acknowledged) << l.got;
  mcpfan::Hub& hub = s.server->hub();
  auto acme = hub.tenants().find("acme");
  ASSERT_TRUE(acme.has_value());  // acquired like a verified token's tenant
  // Another tenant's publish first: were it delivered, it would arrive before acme's (one producer, in order).
  ASSERT_TRUE(hub.publish(mcpfan::mcp::resource_updated("file:///project/other-tenant")));
  ASSERT_TRUE(hub.publish(mcpfan::mcp::resource_updated("file:///project/for-acme", *acme)));
  ASSERT_TRUE(read_until(l.fd, l.got, "file:///project/for-acme")) << l.got;
  EXPECT_EQ(l.got.find("other-tenant"), std::string::npos) << l.got;
}

TEST(HostAuth, GrantedUriPrefixesAreEnforcedLikeATokensUrisClaim) {
  HostServer s;
  Listen inside;
  open_listen(inside, s.port, "file:///acme/a.txt", "Bearer acme-limited");
  EXPECT_TRUE(inside.acknowledged) << inside.got;
  std::string outside = refused_listen(s.port, "file:///other/a.txt", "Bearer acme-limited");
  EXPECT_NE(outside.find("HTTP/1.1 403"), std::string::npos) << outside;
  EXPECT_NE(outside.find("-32602"), std::string::npos) << outside;
  EXPECT_NE(outside.find("file:///other/a.txt"), std::string::npos) << outside;
  // An empty list allows nothing.
  std::string none = refused_listen(s.port, "file:///acme/a.txt", "Bearer nothing-allowed");
  EXPECT_NE(none.find("HTTP/1.1 403"), std::string::npos) << none;
}

TEST(HostAuth, ADenialIs401WithTheHostsMessageAndCounted) {
  HostServer s;
  EXPECT_EQ(metric(get_metrics(s.port), auth_failures("rejected")), 0);
  std::string denied = refused_listen(s.port, "file:///a", "Bearer who-knows");
  EXPECT_NE(denied.find("HTTP/1.1 401"), std::string::npos) << denied;
  EXPECT_NE(denied.find("unknown credentials (host says no)"), std::string::npos) << denied;
  EXPECT_NE(denied.find("WWW-Authenticate: Bearer realm=\"mcpfan\", error=\"invalid_token\""), std::string::npos)
      << denied;
  // No Authorization header at all: the host is asked with "" and decides.
  std::string missing = refused_listen(s.port, "file:///a", "");
  EXPECT_NE(missing.find("HTTP/1.1 401"), std::string::npos) << missing;
  EXPECT_NE(missing.find("WWW-Authenticate: Bearer realm=\"mcpfan\"\r\n"), std::string::npos)
      << missing;  // no error code
  EXPECT_EQ(metric(get_metrics(s.port), auth_failures("rejected")), 2);
}

TEST(HostAuth, AGrantIntoAFullTenantTableIs503) {
  HostServer s(host, [](mcpfan::ServerConfig& c) { c.tenants.max_tenants = 1; });  // the default tenant fills it
  std::string got = refused_listen(s.port, "file:///a", "Bearer acme-token");
  EXPECT_NE(got.find("HTTP/1.1 503"), std::string::npos) << got;
  EXPECT_NE(got.find("Retry-After: 1"), std::string::npos) << got;
}

TEST(HostAuth, AUnixClientIsAskedWithTransportUnix) {
  std::string path = ::testing::TempDir() + "mcpfan-host-auth-" + std::to_string(::getpid()) + ".sock";
  std::mutex mu;
  std::vector<ClientTransport> seen;
  HostServer s(
      [&](const ClientCredentials& c) {
        std::lock_guard lock(mu);
        seen.push_back(c.transport);
        return host(c);
      },
      [&](mcpfan::ServerConfig& c) { c.listen.unix_path = path; });
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof a.sun_path);
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  std::string req = R"({"jsonrpc":"2.0","id":7,"method":"server/discover","params":{)" + meta_2026() + "}}\n";
  ASSERT_TRUE(send_all(fd, req));
  std::string got;
  EXPECT_TRUE(read_until(fd, got, "-32030")) << got;  // denied: no credential
  ::close(fd);
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], ClientTransport::Unix);
}

TEST(HostAuth, AnInvalidTenantNameIs500) {
  HostServer s;
  std::string got = refused_listen(s.port, "file:///a", "Bearer bad-tenant");
  EXPECT_NE(got.find("HTTP/1.1 500"), std::string::npos) << got;
  EXPECT_NE(got.find("-32603"), std::string::npos) << got;
  EXPECT_NE(got.find("invalid tenant name"), std::string::npos) << got;
  EXPECT_EQ(metric(get_metrics(s.port), auth_failures("host_error")), 1);
}

TEST(HostAuth, AThrowingAuthenticatorIs500AndTheServerGoesOn) {
  HostServer s;
  std::string got = refused_listen(s.port, "file:///a", "Bearer throw");
  EXPECT_NE(got.find("HTTP/1.1 500"), std::string::npos) << got;
  EXPECT_NE(got.find("-32603"), std::string::npos) << got;
  EXPECT_EQ(got.find("secret detail"), std::string::npos) << "the exception's text is the operator's, not the client's";
  Listen next;
  open_listen(next, s.port, "file:///a", "Bearer acme-token");
  EXPECT_TRUE(next.acknowledged) << next.got;
  std::string m = get_metrics(s.port);
  EXPECT_EQ(metric(m, auth_failures("host_error")), 1);
  EXPECT_EQ(metric(m, "mcpfan_callback_exceptions_total"), 1);
}

TEST(HostAuth, StartRefusesTheCallbackTogetherWithTokens) {
  for (bool public_key : {false, true}) {
    mcpfan::ServerConfig config;
    config.listen.port = 0;
    config.workers = 1;
    config.auth.authenticate_client = host;
    (public_key ? config.auth.jwt_public_key_file : config.auth.jwt_secret_file) = "/nonexistent/key";
    mcpfan::Server server(config);
    auto bound = server.start();
    ASSERT_FALSE(bound.ok());
    EXPECT_EQ(bound.error().code, mcpfan::rpc_code::kInvalidParams);
    EXPECT_NE(bound.error().message.find("authenticate_client"), std::string::npos) << bound.error().message;
    EXPECT_NE(bound.error().message.find("jwt_secret_file"), std::string::npos) << bound.error().message;
    // Nothing started: attaching a client is refused.
    int sp[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    EXPECT_FALSE(server.attach_stdio(sp[1], sp[1]).ok());
    ::close(sp[0]);
    ::close(sp[1]);
  }
}

TEST(HostAuth, AReloadKeepsTheCallbackAndRefusesTokenFiles) {
  HostServer s;
  mcpfan::ServerConfig next = s.server->config();
  next.auth.authenticate_client = nullptr;  // ignored: the callback is fixed at start
  auto ok = s.server->reload(next);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_NE(ok.value().find("the host's authenticator"), std::string::npos) << ok.value();
  next.auth.jwt_secret_file = "/nonexistent/secret";
  auto refused = s.server->reload(next);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("authenticate_client"), std::string::npos) << refused.error().message;
  Listen l;
  open_listen(l, s.port, "file:///a", "Bearer acme-token");
  EXPECT_TRUE(l.acknowledged) << l.got;
  std::string denied = refused_listen(s.port, "file:///a", "Bearer nope");
  EXPECT_NE(denied.find("HTTP/1.1 401"), std::string::npos) << denied;
}

// The cross-thread path, for ThreadSanitizer: the callable runs on two workers at once. The
// first call on each worker thread waits (bounded) until a second worker thread has called
// too. The workers share one listening socket (listen_fd), so while the first worker waits
// inside the callback the other accepts the next connection: two workers are certain.
TEST(HostAuth, TheCallbackRunsConcurrentlyOnSeveralWorkers) {
  std::signal(SIGPIPE, SIG_IGN);  // as HostServer: listens closed before stop() writes their final results
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::thread::id> threads;
  std::atomic<int> calls{0};
  auto auth = [&](const ClientCredentials& c) -> Answer {
    calls.fetch_add(1);
    std::unique_lock lock(mu);
    if (threads.insert(std::this_thread::get_id()).second) {
      cv.notify_all();
      cv.wait_for(lock, kWait, [&] { return threads.size() >= 2; });
    }
    if (c.authorization == "Bearer acme-token") return ClientGrant{"acme", std::nullopt};
    return ClientDenial{"no"};
  };
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 64), 0);
  mcpfan::ServerConfig config;
  config.listen.listen_fd = lfd;
  config.workers = 2;
  config.auth.authenticate_client = auth;
  mcpfan::Server server(config);
  auto bound = server.start();
  ASSERT_TRUE(bound.ok()) << bound.error().message;
  constexpr int kClients = 8;
  std::vector<std::thread> clients;
  std::atomic<int> served{0}, denied{0};
  auto client = [&](int i) {
    bool grant = i % 2 == 0;
    Listen l;
    open_listen(l, bound.value(), "file:///c/" + std::to_string(i), grant ? "Bearer acme-token" : "Bearer x");
    if (grant && l.acknowledged) served.fetch_add(1);
    if (!grant && read_until(l.fd, l.got, "") && l.got.find("HTTP/1.1 401") != std::string::npos) denied.fetch_add(1);
  };
  // The first client's request holds its worker inside the callback; only then does the
  // second connect, so the other worker (the only one free to accept) takes it.
  clients.emplace_back(client, 0);
  {
    std::unique_lock lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, kWait, [&] { return !threads.empty(); }));
  }
  for (int i = 1; i < kClients; ++i) clients.emplace_back(client, i);
  for (auto& t : clients) t.join();
  EXPECT_EQ(served.load(), kClients / 2);
  EXPECT_EQ(denied.load(), kClients / 2);
  EXPECT_EQ(calls.load(), kClients);
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(threads.size(), 2u);
  }
  EXPECT_TRUE(server.stop().ok());
  ::close(lfd);
}

/** A stdio client on a socketpair attached to the server; lines in, lines out. */
struct StdioClient {
  explicit StdioClient(mcpfan::Server& server) {
    int sp[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    fd = sp[0];
    EXPECT_TRUE(server.attach_stdio(sp[1], sp[1]).ok());
  }
  ~StdioClient() { ::close(fd); }
  /** Sends one request line and returns the first line read that contains `needle` (e.g. its id). */
  std::string ask(const std::string& line, const std::string& needle) {
    EXPECT_TRUE(send_all(fd, line + "\n"));
    if (!read_until(fd, got, needle)) {
      ADD_FAILURE() << "no line with " << needle << " in " << got;
      return {};
    }
    std::size_t at = got.find(needle);
    std::size_t begin = got.rfind('\n', at);
    begin = begin == std::string::npos ? 0 : begin + 1;
    std::size_t end = got.find('\n', at);
    std::string answer = got.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    got.erase(0, end == std::string::npos ? got.size() : end + 1);
    return answer;
  }
  int fd = -1;
  std::string got;
};

std::string stdio_request(const std::string& id_json, const std::string& method, const std::string& credential,
                          const std::string& extra = "") {
  std::string meta = meta_2026();
  if (!credential.empty()) meta.insert(meta.size() - 1, R"(,"mcpfan/authorization":")" + credential + "\"");
  return R"({"jsonrpc":"2.0","id":)" + id_json + R"(,"method":")" + method + R"(","params":{)" + meta + extra + "}}";
}

TEST(HostAuth, AnAttachedStdioClientIsAuthenticatedByItsMetaCredential) {
  std::mutex mu;
  std::vector<std::pair<std::string, ClientTransport>> seen;
  HostServer s([&](const ClientCredentials& c) {
    {
      std::lock_guard lock(mu);
      seen.emplace_back(std::string(c.authorization), c.transport);
    }
    return host(c);
  });
  {
    // Sends nothing: the host is asked with "" (an attached client is not trusted by default), and denies.
    StdioClient anonymous(*s.server);
    std::string a = anonymous.ask(stdio_request("1", "server/discover", ""), "\"id\":1");
    EXPECT_NE(a.find("-32030"), std::string::npos) << a;
    EXPECT_NE(a.find("unknown credentials (host says no)"), std::string::npos) << a;
  }
  StdioClient c(*s.server);
  std::string ack = c.ask(stdio_request("\"l\"", "subscriptions/listen", "Bearer acme-token",
                                        R"(,"notifications":{"resourceSubscriptions":["file:///stdio/"]})"),
                          "acknowledged");
  EXPECT_NE(ack.find("notifications/subscriptions/acknowledged"), std::string::npos) << ack;
  {
    std::lock_guard lock(mu);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].first, "");
    EXPECT_EQ(seen[1].first, "Bearer acme-token");
    EXPECT_EQ(seen[1].second, ClientTransport::Stdio);
  }
  auto acme = s.server->hub().tenants().find("acme");
  ASSERT_TRUE(acme.has_value());
  ASSERT_TRUE(s.server->hub().publish(mcpfan::mcp::resource_updated("file:///stdio/x", *acme)));
  EXPECT_TRUE(read_until(c.fd, c.got, "file:///stdio/x")) << c.got;
  // Bound to acme now: a later request without a credential is served, one granted another tenant is not.
  std::string ping = c.ask(stdio_request("2", "server/discover", ""), "\"id\":2");
  EXPECT_NE(ping.find("\"result\""), std::string::npos) << ping;
  std::string moved = c.ask(stdio_request("3", "server/discover", "Bearer beta-token"), "\"id\":3");
  EXPECT_NE(moved.find("-32031"), std::string::npos) << moved;
  EXPECT_NE(moved.find("bound to tenant \\\"acme\\\""), std::string::npos) << moved;
  std::string denied = c.ask(stdio_request("4", "server/discover", "Bearer nope"), "\"id\":4");
  EXPECT_NE(denied.find("-32030"), std::string::npos) << denied;
  std::string threw = c.ask(stdio_request("5", "server/discover", "Bearer throw"), "\"id\":5");
  EXPECT_NE(threw.find("-32603"), std::string::npos) << threw;
}

}  // namespace

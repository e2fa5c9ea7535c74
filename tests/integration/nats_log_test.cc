// The backplane's events are logged, not only counted (docs "Logs"): against a real
// nats-server, one JSON line each for the connect, the disconnect (nats-server killed), the
// reconnect (started again on its port) and the outage queue's release; and a NATS that
// cannot be reached at start is an error line, followed by "connected" once it can.
#include "harness.h"
#include "json_util.h"
#include "nats_server.h"

namespace itest {
namespace {

// The first JSON line of `kind` in the server's stderr, waited for (bounded).
std::optional<Json> AwaitKind(const ServerProcess& srv, std::string_view kind, Ms timeout = Ms(15000)) {
  const std::string needle = "\"kind\":\"" + std::string(kind) + "\"";
  if (!srv.WaitForStderr(needle, timeout)) return std::nullopt;
  const std::string err = srv.Stderr();
  std::size_t at = err.find(needle);
  std::size_t begin = err.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + 1;
  std::size_t end = err.find('\n', at);
  if (end == std::string::npos) return std::nullopt;  // the line is not whole yet: never, lines are written whole
  Json j(err.substr(begin, end - begin));
  if (!j.ok()) return std::nullopt;
  return j;
}

// A loopback port nats-server can take again, with nobody listening on it now.
int FreeNatsPort() {
  NatsServer probe;
  if (!probe.ok()) return 0;
  int port = probe.port();
  probe.Kill9();
  return port;
}

TEST(NatsLog, ConnectDisconnectReconnectAndReleaseAreLogged) {
  NatsServer nats;
  ASSERT_TRUE(nats.ok()) << nats.error();
  const int port = nats.port();
  ServerProcess a({"--nats", nats.url(), "--node-name", "A", "--nats-settle-ms", "100", "--log-format", "json"});
  ASSERT_TRUE(a.ok()) << a.error();
  auto connected = AwaitKind(a, "nats_connected");
  ASSERT_TRUE(connected) << a.Stderr();
  EXPECT_EQ(connected->GetString({"level"}), "info");
  EXPECT_EQ(connected->GetString({"node"}), "A");
  EXPECT_NE(connected->GetString({"url"}).value_or("").find(":" + std::to_string(port)), std::string::npos)
      << connected->text();

  nats.Kill9();
  auto down = AwaitKind(a, "nats_disconnected");
  ASSERT_TRUE(down) << a.Stderr();
  EXPECT_EQ(down->GetString({"level"}), "warn");
  // A publish while NATS is away waits in the outage queue (the node has no subscriber: it is
  // forwarded for other nodes), and is counted in the release.
  ASSERT_TRUE(PublishOk(a.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://x"}})"));

  NatsServer again(port);
  ASSERT_TRUE(again.ok()) << again.error();
  auto up = AwaitKind(a, "nats_reconnected");
  ASSERT_TRUE(up) << a.Stderr();
  EXPECT_EQ(up->GetString({"level"}), "info");
  auto released = AwaitKind(a, "nats_outage_released");
  ASSERT_TRUE(released) << a.Stderr();
  EXPECT_GE(released->GetInt({"notifications"}).value_or(-1), 1) << released->text();
  EXPECT_GT(released->GetInt({"bytes"}).value_or(-1), 0) << released->text();
}

TEST(NatsLog, AnUnreachableNatsAtStartIsAnErrorThenConnectedWhenItComes) {
  for (const char* io : {"libuv", "threads"}) {
    SCOPED_TRACE(io);
    const int port = FreeNatsPort();
    ASSERT_GT(port, 0);
    const std::string url = "nats://127.0.0.1:" + std::to_string(port);
    ServerProcess a({"--nats", url, "--node-name", "A", "--nats-io", io, "--log-format", "json"});
    ASSERT_TRUE(a.ok()) << a.error();
    auto unreachable = AwaitKind(a, "nats_unreachable", kIo);
    ASSERT_TRUE(unreachable) << a.Stderr();
    EXPECT_EQ(unreachable->GetString({"level"}), "error");
    EXPECT_EQ(unreachable->GetString({"nats"}), url);

    NatsServer nats(port);
    ASSERT_TRUE(nats.ok()) << nats.error();
    auto connected = AwaitKind(a, "nats_connected");
    ASSERT_TRUE(connected) << a.Stderr();
    EXPECT_EQ(connected->GetString({"node"}), "A");
    EXPECT_TRUE(AwaitKind(a, "nats_outage_released")) << a.Stderr();
  }
}

}  // namespace
}  // namespace itest

// All client kinds on one server: 2026 listen streams (SSE), 2025 sessions (GET stream),
// and stdio-framed clients on the Unix socket (2026 listens and 2025 initialize). One
// publish reaches each subscriber exactly once, each in its own format.
#include <memory>
#include <string>
#include <vector>

#include "harness.h"
#include "session_client.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

constexpr int kEach = 4;

struct HttpSession {
  std::string sid;
  SseStream stream;
};

TEST(Mixed, OnePublishReachesEveryClientKindOnceInItsOwnFormat) {
  UnixServer server;
  ASSERT_TRUE(server.ok());
  ServerProcess& srv = *server.srv;
  const std::string& sock = server.sock;
  const int port = srv.port();
  const std::string uri = "file:///mixed/doc.txt";
  const std::string filter = R"({"resourceSubscriptions":[")" + uri + R"("]})";
  std::string err;

  // 2026 listen streams over HTTP.
  std::vector<std::unique_ptr<SseStream>> listens;
  for (int i = 0; i < kEach; ++i) {
    listens.push_back(std::make_unique<SseStream>());
    ASSERT_TRUE(OpenListen(*listens.back(), port, "\"sse:" + std::to_string(i) + "\"", filter, filter));
  }
  // 2025 sessions with a GET stream.
  std::vector<std::unique_ptr<HttpSession>> sessions;
  for (int i = 0; i < kEach; ++i) {
    sessions.push_back(std::make_unique<HttpSession>());
    HttpSession& s = *sessions.back();
    ASSERT_TRUE(Initialize(port, &s.sid));
    ASSERT_TRUE(OpenSessionStream(s.stream, port, s.sid));
    ASSERT_TRUE(SessionSubscribe(port, s.sid, uri, std::to_string(i + 1)));
  }
  // stdio-framed clients on the Unix socket: 2026 listens, then 2025 sessions.
  std::vector<std::unique_ptr<LineChannel>> unix_listens, unix_sessions;
  for (int i = 0; i < kEach; ++i) {
    unix_listens.push_back(std::make_unique<LineChannel>());
    LineChannel& c = *unix_listens.back();
    ASSERT_TRUE(ConnectUnix(c, sock, kIo, &err)) << err;
    ASSERT_TRUE(c.SendLine(StdioListen(std::to_string(100 + i), filter)));
    auto ack = c.NextJson(kIo, &err);
    ASSERT_TRUE(ack) << err;
    ASSERT_TRUE(IsAck(*ack, std::to_string(100 + i), filter));

    unix_sessions.push_back(std::make_unique<LineChannel>());
    LineChannel& s = *unix_sessions.back();
    ASSERT_TRUE(ConnectUnix(s, sock, kIo, &err)) << err;
    ASSERT_TRUE(s.SendLine(StdioInitialize("0")));
    auto init = s.NextJson(kIo, &err);
    ASSERT_TRUE(init) << err;
    ASSERT_TRUE(init->Has({"result", "protocolVersion"})) << init->text();
    ASSERT_TRUE(
        s.SendLine(R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":")" + uri + R"("}})"));
    auto sub = s.NextJson(kIo, &err);
    ASSERT_TRUE(sub) << err;
    ASSERT_TRUE(IsResult(*sub, "1", "{}"));
  }
  const int total = 4 * kEach;
  ASSERT_TRUE(PollMetricEq(port, "mcpfan_subscriptions_active", total));
  ASSERT_TRUE(PollMetricEq(port, "mcpfan_sessions_active", kEach)) << "only HTTP sessions are counted here";
  auto deliveries_before = ReadMetric(port, "mcpfan_deliveries_total");
  ASSERT_TRUE(deliveries_before);

  const std::string params = R"({"uri":")" + uri + R"(","_meta":{"origin/rev":"abc","test/n":3}})";
  ASSERT_TRUE(PublishOk(port, R"({"method":"notifications/resources/updated","params":)" + params + "}"));

  for (int i = 0; i < kEach; ++i) {
    auto m = listens[size_t(i)]->NextMessage(kIo, &err);
    ASSERT_TRUE(m) << "listen " << i << ": " << err;
    EXPECT_TRUE(IsNotification(*m, "notifications/resources/updated", "\"sse:" + std::to_string(i) + "\"", params));

    auto sm = sessions[size_t(i)]->stream.NextMessage(kIo, &err);
    ASSERT_TRUE(sm) << "session " << i << ": " << err;
    EXPECT_TRUE(IsPlainNotification(*sm, "notifications/resources/updated", params)) << "session " << i;

    auto um = unix_listens[size_t(i)]->NextJson(kIo, &err);
    ASSERT_TRUE(um) << "unix listen " << i << ": " << err;
    EXPECT_TRUE(IsNotification(*um, "notifications/resources/updated", std::to_string(100 + i), params));

    auto us = unix_sessions[size_t(i)]->NextJson(kIo, &err);
    ASSERT_TRUE(us) << "unix session " << i << ": " << err;
    EXPECT_TRUE(IsPlainNotification(*us, "notifications/resources/updated", params)) << "unix session " << i;
  }

  // Then a tools/list_changed: 2025 sessions always get it, the listens did not ask for it.
  ASSERT_TRUE(PublishOk(port, R"({"method":"notifications/tools/list_changed","params":{"_meta":{"after":1}}})"));
  for (int i = 0; i < kEach; ++i) {
    auto sm = sessions[size_t(i)]->stream.NextMessage(kIo, &err);
    ASSERT_TRUE(sm) << "session " << i << ": " << err;
    EXPECT_TRUE(IsPlainNotification(*sm, "notifications/tools/list_changed", R"({"_meta":{"after":1}})"))
        << "session " << i;
    auto us = unix_sessions[size_t(i)]->NextJson(kIo, &err);
    ASSERT_TRUE(us) << "unix session " << i << ": " << err;
    EXPECT_TRUE(IsPlainNotification(*us, "notifications/tools/list_changed", R"({"_meta":{"after":1}})"))
        << "unix session " << i;
  }

  // Nothing else anywhere (each got the update exactly once).
  std::this_thread::sleep_for(Ms(300));
  for (int i = 0; i < kEach; ++i) {
    listens[size_t(i)]->ReadAvailable();
    EXPECT_TRUE(listens[size_t(i)]->events().empty())
        << "listen " << i << ":" << DescribeEvents(listens[size_t(i)]->events());
    sessions[size_t(i)]->stream.ReadAvailable();
    EXPECT_TRUE(sessions[size_t(i)]->stream.events().empty())
        << "session " << i << ":" << DescribeEvents(sessions[size_t(i)]->stream.events());
    for (LineChannel* c : {unix_listens[size_t(i)].get(), unix_sessions[size_t(i)].get()}) {
      c->ReadAvailable();
      EXPECT_TRUE(c->lines().empty()) << "unix client " << i << ": " << c->lines().front();
    }
  }
  auto deliveries_after = ReadMetric(port, "mcpfan_deliveries_total");
  ASSERT_TRUE(deliveries_after);
  EXPECT_EQ(*deliveries_after - *deliveries_before, total + 2 * kEach)
      << "one delivery per subscriber for the update, one per 2025 session for tools/list_changed";

  // Everyone leaves: every client-state gauge returns to zero.
  listens.clear();
  unix_listens.clear();
  unix_sessions.clear();
  for (auto& s : sessions) EXPECT_EQ(DeleteSession(port, s->sid), 200);
  sessions.clear();
  EXPECT_TRUE(PollMetricEq(port, "mcpfan_subscriptions_active", 0));
  EXPECT_TRUE(PollMetricEq(port, "mcpfan_listen_streams_open", 0));
  EXPECT_TRUE(PollMetricEq(port, "mcpfan_sessions_active", 0));
}

}  // namespace
}  // namespace itest

// `--unix PATH`: each connection is one stdio-framed client (design §2.3), dealt to
// worker loops. 1,000 concurrent clients, per-connection state, shutdown, socket removal.
#include <signal.h>
#include <sys/stat.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

TEST(Unix, ThousandClientsEachReceiveOnePublishExactlyOnce) {
  constexpr size_t kClients = 1000;
  uint64_t limit = RaiseFdLimit(4 * kClients + 256);  // inherited by the server: it holds one fd per client too
  ASSERT_GE(limit, 2 * kClients + 128) << "RLIMIT_NOFILE too low for this test";
  UnixServer server;
  ASSERT_TRUE(server.ok());
  ServerProcess& srv = *server.srv;
  const std::string& sock = server.sock;
  ASSERT_TRUE(PathExists(sock)) << sock;

  // Ids alternate between strings and numbers; every client listens to the same URI.
  auto id_of = [](size_t i) { return i % 2 ? std::to_string(i) : "\"c" + std::to_string(i) + "\""; };
  const std::string filter = R"({"resourceSubscriptions":["file:///many/x"]})";
  std::vector<std::unique_ptr<LineChannel>> clients;
  std::vector<LineChannel*> ptrs;
  for (size_t i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<LineChannel>());
    std::string err;
    ASSERT_TRUE(ConnectUnix(*clients.back(), sock, kIo, &err)) << "client " << i << ": " << err;
    ASSERT_TRUE(clients.back()->SendLine(StdioListen(id_of(i), filter), kIo, &err)) << "client " << i << ": " << err;
    ptrs.push_back(clients.back().get());
  }
  size_t acked = PumpLines(ptrs, [](LineChannel& c) { return !c.lines().empty(); }, Ms(30000));
  ASSERT_EQ(acked, kClients) << "clients without an acknowledgement";
  for (size_t i = 0; i < kClients; ++i) {
    Json ack(clients[i]->lines().front());
    clients[i]->lines().pop_front();
    ASSERT_TRUE(IsAck(ack, id_of(i), filter)) << "client " << i;
    ASSERT_TRUE(clients[i]->lines().empty())
        << "client " << i << " got more than its ack: " << clients[i]->lines().front();
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", kClients));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", kClients));

  const std::string params = R"({"uri":"file:///many/x","_meta":{"origin/rev":7}})";
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":)" + params + "}"));
  size_t got = PumpLines(ptrs, [](LineChannel& c) { return !c.lines().empty(); }, Ms(30000));
  EXPECT_EQ(got, kClients) << "clients that did not receive the publish";
  // Give duplicates (or strays) a chance to show up, then check exactly one line each.
  PumpLines(ptrs, [](LineChannel&) { return false; }, Ms(500));
  size_t bad = 0;
  for (size_t i = 0; i < kClients && bad < 10; ++i) {
    auto& lines = clients[i]->lines();
    if (lines.size() != 1) {
      ++bad;
      ADD_FAILURE() << "client " << i << " received " << lines.size() << " lines after the publish, want exactly 1"
                    << (lines.empty() ? "" : ": " + lines.front().substr(0, 300));
      continue;
    }
    auto ok = IsNotification(Json(lines.front()), "notifications/resources/updated", id_of(i), params);
    if (!ok) {
      ++bad;
      ADD_FAILURE() << "client " << i << ": " << ok.message();
    }
  }

  // Unix-socket clients' lines go through the io_uring send ring like SSE streams (where the
  // kernel gives the loops a ring): at least the acknowledgement and the publish, each.
  auto rings = ReadMetric(srv.port(), "mcpfan_io_uring_workers");
  auto sends = ReadMetric(srv.port(), "mcpfan_io_uring_sends_total");
  ASSERT_TRUE(rings && sends);
  if (*rings > 0) {
    EXPECT_GE(*sends, 2.0 * kClients);
  }

  for (auto& c : clients) c->Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 0, Ms(15000)));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0, Ms(15000)));

  ASSERT_TRUE(srv.Signal(SIGTERM));
  ASSERT_TRUE(srv.WaitExit(Ms(5000))) << "not exited 5 s after SIGTERM";
  EXPECT_EQ(srv.DescribeStatus(), "exit 0");
  EXPECT_FALSE(PathExists(sock)) << "the socket file must be removed on shutdown: " << sock;
}

// Every connection is its own client: the same listen id on two connections is fine,
// and a cancel, an initialize or an EOF touches only its own connection.
TEST(Unix, EachConnectionIsItsOwnClient) {
  UnixServer server;
  ASSERT_TRUE(server.ok());
  ServerProcess& srv = *server.srv;
  const std::string& sock = server.sock;
  LineChannel a, b, s;
  std::string err;
  ASSERT_TRUE(ConnectUnix(a, sock, kIo, &err)) << err;
  ASSERT_TRUE(ConnectUnix(b, sock, kIo, &err)) << err;
  ASSERT_TRUE(ConnectUnix(s, sock, kIo, &err)) << err;
  const std::string filter = R"({"toolsListChanged":true})";
  for (LineChannel* c : {&a, &b}) {
    ASSERT_TRUE(c->SendLine(StdioListen(R"("same")", filter)));
    auto ack = c->NextJson(kIo, &err);
    ASSERT_TRUE(ack) << err;
    EXPECT_TRUE(IsAck(*ack, R"("same")", filter));
  }
  // A 2025 client on the third connection.
  ASSERT_TRUE(s.SendLine(StdioInitialize("0")));
  auto init = s.NextJson(kIo, &err);
  ASSERT_TRUE(init) << err;
  EXPECT_EQ(init->GetString({"result", "protocolVersion"}), "2025-11-25") << init->text();
  ASSERT_TRUE(s.SendLine(R"({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"file:///u/1"}})"));
  auto sub = s.NextJson(kIo, &err);
  ASSERT_TRUE(sub) << err;
  EXPECT_TRUE(IsResult(*sub, "1", "{}"));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 3));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_listen_streams_open", 3));

  ASSERT_TRUE(a.SendLine(StdioCancel(R"("same")")));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 2));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///u/1"}})"));
  auto mb = b.NextJson(kIo, &err);
  ASSERT_TRUE(mb) << err;
  EXPECT_TRUE(IsNotification(*mb, "notifications/tools/list_changed", R"("same")"));
  auto ms1 = s.NextJson(kIo, &err);
  ASSERT_TRUE(ms1) << err;
  EXPECT_TRUE(IsPlainNotification(*ms1, "notifications/tools/list_changed", "{}"));
  auto ms2 = s.NextJson(kIo, &err);
  ASSERT_TRUE(ms2) << err;
  EXPECT_TRUE(IsPlainNotification(*ms2, "notifications/resources/updated", R"({"uri":"file:///u/1"})"));
  EXPECT_TRUE(NothingMore(a));
  EXPECT_TRUE(NothingMore(b, Ms(50)));
  EXPECT_TRUE(NothingMore(s, Ms(50)));

  // EOF on one connection ends its subscriptions only; the server keeps running.
  b.CloseWrite();
  EXPECT_TRUE(b.WaitEof(kIo)) << "the server should close a connection whose client sent EOF";
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 1));
  s.Close();
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 0));
  EXPECT_TRUE(ServesListenAndPublish(srv.port()));
  EXPECT_FALSE(srv.exited()) << "a Unix-socket client's EOF must not stop the server: " << srv.DescribeStatus();
}

TEST(Unix, SigtermEndsListensWithCompleteResultAndRemovesSocket) {
  UnixServer server;
  ASSERT_TRUE(server.ok());
  ServerProcess& srv = *server.srv;
  const std::string& sock = server.sock;
  std::vector<std::unique_ptr<LineChannel>> clients;
  std::string err;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<LineChannel>());
    ASSERT_TRUE(ConnectUnix(*clients.back(), sock, kIo, &err)) << err;
    std::string id = "\"l" + std::to_string(i) + "\"";
    ASSERT_TRUE(clients.back()->SendLine(StdioListen(id, R"({"promptsListChanged":true})")));
    auto ack = clients.back()->NextJson(kIo, &err);
    ASSERT_TRUE(ack) << err;
    ASSERT_TRUE(IsAck(*ack, id));
  }
  // One client holds two listens.
  ASSERT_TRUE(clients[0]->SendLine(StdioListen("99", R"({"toolsListChanged":true})")));
  auto ack99 = clients[0]->NextJson(kIo, &err);
  ASSERT_TRUE(ack99) << err;
  ASSERT_TRUE(IsAck(*ack99, "99"));
  ASSERT_TRUE(PollMetricEq(srv.port(), "mcpfan_subscriptions_active", 5));

  ASSERT_TRUE(srv.Signal(SIGTERM));
  for (size_t i = 0; i < clients.size(); ++i) {
    std::set<std::string> want = {"\"l" + std::to_string(i) + "\""};
    if (i == 0) want.insert("99");
    std::set<std::string> got;
    auto lines = clients[i]->DrainFor(Ms(3000));
    for (const auto& l : lines) {
      Json j(l);
      auto id = j.Get({"id"});
      ASSERT_TRUE(id) << "client " << i << ": only final results may follow SIGTERM: " << l;
      EXPECT_TRUE(IsCompleteResult(j, Dump(*id))) << "client " << i;
      got.insert(Dump(*id));
    }
    EXPECT_EQ(got, want) << "client " << i;
    EXPECT_TRUE(clients[i]->eof()) << "client " << i << ": the connection must close after the final results";
  }
  ASSERT_TRUE(srv.WaitExit(kExitBound));
  EXPECT_EQ(srv.DescribeStatus(), "exit 0");
  EXPECT_FALSE(PathExists(sock)) << sock;
}

}  // namespace
}  // namespace itest

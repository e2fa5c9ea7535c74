// On the backplane the subject decides the tenant. A real nats-server gives each
// tenant's backend user a publish permission on its own subject prefix (mcpfan.v1.<tenant>.>),
// the operator model docs/operations.md "Per-tenant NATS permissions" documents. A message that tenant acme's user
// publishes cannot reach tenant victim's listeners: not with a body naming victim, not with
// several notifications in one message; a direct publish on acme's own subject is delivered.
#include <fstream>

#include "child_process.h"
#include "harness.h"
#include "nats_server.h"
#include "stdio_client.h"

namespace itest {
namespace {

// A nats-server whose users the test configures: `node` (the mcpfan nodes) may publish and
// subscribe under mcpfan.v1.>, `acme` may only publish under mcpfan.v1.acme.>.
std::string WriteAuthConfig(const std::string& dir) {
  const std::string conf = dir + "/nats.conf";
  std::ofstream(conf) << R"(authorization {
  users = [
    {user: "node", password: "node-pw", permissions: {publish: "mcpfan.v1.>", subscribe: "mcpfan.v1.>"}}
    {user: "acme", password: "acme-pw", permissions: {publish: "mcpfan.v1.acme.>", subscribe: "_INBOX.>"}}
  ]
}
)";
  return conf;
}

std::string NodeUrl(const NatsServer& nats) { return "nats://node:node-pw@127.0.0.1:" + std::to_string(nats.port()); }

// A tenant's backend talking the NATS protocol itself (as docs/operations.md invites): CONNECT as a
// user, PUB, and a PING whose PONG says the server has processed everything before it.
class RawNatsClient {
 public:
  ::testing::AssertionResult Connect(int port, std::string_view user, std::string_view pass) {
    std::string err;
    if (!conn_.Connect(port, kIo, &err)) return ::testing::AssertionFailure() << "connect: " << err;
    if (!ReadUntil("\r\n", &err)) return ::testing::AssertionFailure() << "no INFO: " << err;
    if (conn_.in().rfind("INFO ", 0) != 0) return ::testing::AssertionFailure() << "not INFO: " << conn_.in();
    conn_.in().clear();
    std::string hello = R"(CONNECT {"verbose":false,"pedantic":false,"user":")" + std::string(user) + R"(","pass":")" +
                        std::string(pass) + R"(","name":"backend-)" + std::string(user) + "\"}\r\n";
    if (!conn_.Send(hello, kIo, &err)) return ::testing::AssertionFailure() << err;
    std::string out;
    return Sync(out) ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << "CONNECT refused: " << out;
  }
  // Publishes and waits for the server's answer to the PING behind it; `out` gets any -ERR.
  bool Publish(std::string_view subject, std::string_view body, std::string& out) {
    std::string pub =
        "PUB " + std::string(subject) + " " + std::to_string(body.size()) + "\r\n" + std::string(body) + "\r\n";
    if (!conn_.Send(pub, kIo)) return false;
    return Sync(out);
  }

 private:
  bool Sync(std::string& out) {
    if (!conn_.Send("PING\r\n", kIo)) return false;
    bool ok = ReadUntil("PONG\r\n", nullptr);
    out = conn_.in();
    conn_.in().clear();
    return ok && out.find("-ERR") == std::string::npos;
  }
  bool ReadUntil(std::string_view needle, std::string* err) {
    const Deadline end = After(kIo);
    while (conn_.in().find(needle) == std::string::npos) {  // bounded by the deadline
      if (conn_.ReadSome(end) <= 0) {
        if (err) *err = "no '" + std::string(needle.substr(0, 4)) + "' from the server; got: " + conn_.in();
        return false;
      }
    }
    return true;
  }
  Conn conn_;
};

std::string FirstWith(const std::vector<std::string>& subs, std::string_view piece) {
  for (const auto& s : subs) {
    if (s.find(piece) != std::string::npos) return s;
  }
  return {};
}

std::string TenantUpdate(std::string_view tenant, std::string_view uri, int n) {
  std::string t = tenant.empty() ? "" : R"("tenant":")" + std::string(tenant) + R"(",)";
  return "{" + t + R"("method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) +
         R"(","_meta":{"n":)" + std::to_string(n) + "}}}";
}

TEST(NatsTenantAuth, AMessageFromAcmesUserNeverReachesVictimsListeners) {
  TempDir dir;
  NatsServer nats(-1, "", WriteAuthConfig(dir.path()));
  ASSERT_TRUE(nats.ok()) << nats.error();
  const std::string secret = "nats-tenant-auth-secret-0123456789abcdef";
  std::ofstream(dir.path() + "/secret") << secret << "\n";
  ServerProcess node({"--workers", "2", "--nats", NodeUrl(nats), "--node-name", "B", "--jwt-secret-file",
                      dir.path() + "/secret"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  SseStream acme, victim;
  ASSERT_TRUE(ListenAsTenant(acme, node.port(), secret, "acme", "mem://acme-doc"));
  ASSERT_TRUE(ListenAsTenant(victim, node.port(), secret, "victim", "mem://secret"));
  ASSERT_TRUE(Eventually([&] { return nats.Subscriptions("B").size() == 2; }, "B's two subjects at the NATS server"));
  const std::string acme_subject = FirstWith(nats.Subscriptions("B"), "mcpfan.v1.acme.r.");
  const std::string victim_subject = FirstWith(nats.Subscriptions("B"), "mcpfan.v1.victim.r.");
  ASSERT_FALSE(acme_subject.empty());
  ASSERT_FALSE(victim_subject.empty());

  RawNatsClient backend;
  ASSERT_TRUE(backend.Connect(nats.port(), "acme", "acme-pw"));
  std::string answer;
  // The permission model: acme's user cannot publish on victim's subjects at all.
  EXPECT_FALSE(backend.Publish(victim_subject, TenantUpdate("victim", "mem://secret", 1), answer));
  EXPECT_NE(answer.find("Permissions Violation"), std::string::npos) << answer;
  // On its own subject, a body naming another tenant...
  ASSERT_TRUE(backend.Publish(acme_subject, TenantUpdate("victim", "mem://secret", 2), answer)) << answer;
  // ...and several notifications in one message, acme's own among them.
  ASSERT_TRUE(backend.Publish(acme_subject,
                              "[" + TenantUpdate("victim", "mem://secret", 3) + "," +
                                  TenantUpdate("victim", "mem://secret", 4) + "," +
                                  TenantUpdate("acme", "mem://acme-doc", 5) + "]",
                              answer))
      << answer;
  // A legitimate direct publish on acme's subject is delivered, with or without a tenant field.
  ASSERT_TRUE(backend.Publish(acme_subject, TenantUpdate("acme", "mem://acme-doc", 6), answer)) << answer;
  ASSERT_TRUE(backend.Publish(acme_subject, TenantUpdate("", "mem://acme-doc", 7), answer)) << answer;
  std::string err;
  for (int want : {6, 7}) {
    auto m = acme.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << m->text();
  }
  // One subject, one publisher connection: NATS kept their order, and one delivery thread
  // handed them on in it. So the rejected messages went by before acme's 6 and 7 arrived, and
  // a publish made now through the node's HTTP API is victim's first notification.
  ASSERT_TRUE(PublishOk(node.port(), TenantUpdate("victim", "mem://secret", 99)));
  auto v = victim.NextMessage(kIo, &err);
  ASSERT_TRUE(v) << err;
  EXPECT_EQ(v->GetInt({"params", "_meta", "n"}), 99) << "acme's message reached victim: " << v->text();
  // Dropped and counted by reason.
  EXPECT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_rejected_total{reason=\"tenant\"}", 1));
  EXPECT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_rejected_total{reason=\"batch\"}", 1));
  EXPECT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_rejected_total", 2));
}

}  // namespace
}  // namespace itest

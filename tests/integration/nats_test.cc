// The NATS backplane (issue 11) against a real nats-server (Debian's, started by the test on
// ephemeral loopback ports): a publish to any node reaches every matching stream on every
// node exactly once, a node receives only what its subscribers need (read from NATS's own
// /connz), and a nats-server killed with -9 and restarted costs no stream, is reported by
// /healthz, and the next publish arrives exactly once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <regex>

#include "child_process.h"
#include "harness.h"

namespace itest {
namespace {

constexpr const char* kNatsServer = "/usr/sbin/nats-server";

// nats-server on 127.0.0.1: a random client port (or `port`) and a random monitoring port,
// both read from its log. Stopped by PID.
class NatsServer {
 public:
  explicit NatsServer(int port = -1) {
    if (::access(kNatsServer, X_OK) != 0) {
      error_ = std::string(kNatsServer) + " is not installed (tools/setup.sh installs nats-server)";
      return;
    }
    if (!proc_.Spawn({kNatsServer, "-a", "127.0.0.1", "-p", std::to_string(port), "-m", "-1"})) {
      error_ = proc_.error();
      return;
    }
    std::smatch m;
    static const std::regex client(R"(Listening for client connections on 127\.0\.0\.1:(\d+))");
    static const std::regex monitor(R"(Starting http monitor on 127\.0\.0\.1:(\d+))");
    proc_.WaitStderrUntil(
        [&](const std::string& log) {
          if (std::regex_search(log, m, client)) port_ = std::stoi(m[1]);
          if (std::regex_search(log, m, monitor)) monitor_ = std::stoi(m[1]);
          return port_ > 0 && monitor_ > 0;
        },
        kStart);
    if (port_ <= 0 || monitor_ <= 0) error_ = "nats-server did not log its ports:\n" + proc_.Stderr();
  }
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  void Kill9() {
    proc_.Signal(SIGKILL);
    proc_.WaitExit(kIo);
  }
  // The subjects NATS holds for the client connection named `name` (from /connz?subs=1).
  std::vector<std::string> Subscriptions(std::string_view name) const {
    auto r = Roundtrip(monitor_, BuildRequest("GET", "/connz?subs=1", {}));
    if (!r || r->status != 200) return {"<no /connz>"};
    Json j(r->body);
    std::vector<std::string> subs;
    auto conns = j.Get({"connections"});
    if (!conns) return {"<no connections>"};
    for (auto c : conns->get_array()) {
      std::string_view n;
      if (c["name"].get_string().get(n) || n != name) continue;
      simdjson::dom::array list;
      if (c["subscriptions_list"].get_array().get(list)) continue;
      for (auto s : list) subs.emplace_back(std::string_view(s.get_string().value()));
    }
    return subs;
  }

 private:
  ChildProcess proc_;
  int port_ = 0;
  int monitor_ = 0;
  std::string error_;
};

// Polls (bounded) until `pred` holds.
::testing::AssertionResult Eventually(const std::function<bool()>& pred, std::string_view what, Ms timeout = kIo) {
  for (auto end = After(timeout); Clock::now() < end; std::this_thread::sleep_for(Ms(10))) {
    if (pred()) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << what << " did not happen within " << timeout.count() << " ms";
}

std::vector<std::string> NodeArgs(const NatsServer& nats, std::string_view name) {
  return {"--workers", "2", "--nats", nats.url(), "--node-name", std::string(name), "--nats-linger-ms", "100"};
}

bool HasSubject(const std::vector<std::string>& subs, std::string_view piece) {
  for (const auto& s : subs) {
    if (s.find(piece) != std::string::npos) return true;
  }
  return false;
}

class Nats : public ::testing::Test {
 protected:
  void SetUp() override {
    nats_ = std::make_unique<NatsServer>();
    ASSERT_TRUE(nats_->ok()) << nats_->error();
    for (const char* name : {"A", "B", "C"}) {
      nodes_.push_back(std::make_unique<ServerProcess>(NodeArgs(*nats_, name)));
      ASSERT_TRUE(nodes_.back()->ok()) << nodes_.back()->error();
    }
    for (auto& n : nodes_) ASSERT_TRUE(PollMetricEq(n->port(), "mcpfan_backplane_connected", 1));
  }
  int port(std::size_t i) const { return nodes_[i]->port(); }
  std::unique_ptr<NatsServer> nats_;
  std::vector<std::unique_ptr<ServerProcess>> nodes_;
};

TEST_F(Nats, APublishToAnyNodeReachesEveryMatchingStreamOnEveryNodeOnce) {
  SseStream a, b;
  ASSERT_TRUE(OpenListen(a, port(0), R"("a")", R"({"resourceSubscriptions":["file:///p/"]})"));
  ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"toolsListChanged":true,"resourceSubscriptions":["file:///p/"]})"));
  // The interest proof, read from NATS: B's subjects are there, C (no subscribers) has none.
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 2; }, "B's two subjects at the NATS server"));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("A").size() == 1; }, "A's subject at the NATS server"));
  EXPECT_TRUE(nats_->Subscriptions("C").empty());
  EXPECT_TRUE(HasSubject(nats_->Subscriptions("B"), ".l.tools"));

  // Published on C (no subscribers): reaches A and B once each.
  ASSERT_TRUE(PublishOk(port(2), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/x y.txt","_meta":{"n":1}}})"));
  ASSERT_TRUE(PublishOk(port(2), R"({"method":"notifications/tools/list_changed","params":{"_meta":{"n":2}}})"));
  // Published on B itself: local delivery, and A through NATS (B never gets its own back).
  ASSERT_TRUE(PublishOk(port(1), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/z","_meta":{"n":3}}})"));
  std::string err;
  // Different publishers (C and B): no order between them, only each once.
  std::vector<std::string> at_a;
  for (int i = 0; i < 2; ++i) {
    auto m = a.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetString({"params", "_meta", std::string(kSubId)}), "a");
    at_a.push_back(m->GetString({"params", "uri"}).value_or("?") + "#" + std::to_string(m->GetInt({"params", "_meta", "n"}).value_or(-1)));
  }
  std::sort(at_a.begin(), at_a.end());
  EXPECT_EQ(at_a, (std::vector<std::string>{"file:///p/x y.txt#1", "file:///p/z#3"}));
  std::vector<std::int64_t> at_b;
  for (int i = 0; i < 3; ++i) {
    auto m = b.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    at_b.push_back(m->GetInt({"params", "_meta", "n"}).value_or(-1));
  }
  std::sort(at_b.begin(), at_b.end());
  EXPECT_EQ(at_b, (std::vector<std::int64_t>{1, 2, 3}));
  // Exactly once: a last marker to each, and nothing before it.
  ASSERT_TRUE(PublishOk(port(2), R"({"method":"notifications/resources/updated","params":{"uri":"file:///p/end"}})"));
  for (SseStream* s : {&a, &b}) {
    auto end = s->NextMessage(kIo, &err);
    ASSERT_TRUE(end) << err;
    EXPECT_EQ(end->GetString({"params", "uri"}), "file:///p/end") << end->text();
  }
  EXPECT_TRUE(PollMetricEq(port(2), "mcpfan_backplane_received_total", 0)) << "C subscribes to nothing";
}

TEST_F(Nats, InterestLeavesNatsAfterTheLingerWhenTheLastSubscriberGoes) {
  {
    SseStream b;
    ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"promptsListChanged":true})"));
    ASSERT_TRUE(Eventually([&] { return HasSubject(nats_->Subscriptions("B"), ".l.prompts"); }, "B's subject at NATS"));
  }  // the stream closes
  EXPECT_TRUE(Eventually([&] { return nats_->Subscriptions("B").empty(); }, "B's UNSUB after the 100 ms linger"));
}

TEST_F(Nats, AServerKilledAndRestartedCostsNoStreamAndTheNextPublishArrivesOnce) {
  SseStream b;
  ASSERT_TRUE(OpenListen(b, port(1), R"("b")", R"({"resourceSubscriptions":["mem://k"]})"));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 1; }, "B's subject at NATS"));
  const int nats_port = nats_->port();
  nats_->Kill9();
  for (std::size_t i : {0u, 1u}) {
    ASSERT_TRUE(PollMetricEq(port(i), "mcpfan_backplane_connected", 0));
    auto h = Roundtrip(port(i), BuildRequest("GET", "/healthz", {}));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 503) << "/healthz must not be ok while the backplane is down: " << h->body;
  }
  // Local delivery goes on meanwhile.
  ASSERT_TRUE(PublishOk(port(1), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":1}}})"));
  std::string err;
  auto local = b.NextMessage(kIo, &err);
  ASSERT_TRUE(local) << err;
  EXPECT_EQ(local->GetInt({"params", "_meta", "n"}), 1);

  nats_ = std::make_unique<NatsServer>(nats_port);  // the same address: the nodes reconnect by themselves
  ASSERT_TRUE(nats_->ok()) << nats_->error();
  for (std::size_t i : {0u, 1u}) ASSERT_TRUE(PollMetricEq(port(i), "mcpfan_backplane_connected", 1, Ms(15000)));
  ASSERT_TRUE(Eventually([&] { return nats_->Subscriptions("B").size() == 1; }, "B's interest back at the new server"));
  auto h = Roundtrip(port(1), BuildRequest("GET", "/healthz", {}));
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  ASSERT_TRUE(PublishOk(port(0), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":2}}})"));
  ASSERT_TRUE(PublishOk(port(0), R"({"method":"notifications/resources/updated","params":{"uri":"mem://k","_meta":{"n":3}}})"));
  for (std::int64_t want : {2, 3}) {
    auto m = b.NextMessage(kIo, &err);
    ASSERT_TRUE(m) << err;
    EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), want) << "exactly once, in the publisher's order";
  }
  EXPECT_FALSE(b.ended()) << "the stream survived the outage";
}

// The outage policy: while NATS is unreachable, notifications for other nodes wait in a
// bounded buffer; a publish that would not fit is refused whole (503, Retry-After) and not
// delivered locally either.
TEST(NatsOutage, AFullOutageBufferRefusesThePublishWhole) {
  auto nats = std::make_unique<NatsServer>();
  ASSERT_TRUE(nats->ok()) << nats->error();
  const int nats_port = nats->port();
  ServerProcess node({"--nats", nats->url(), "--node-name", "solo", "--nats-outage-buffer-bytes", "65536"});
  ASSERT_TRUE(node.ok()) << node.error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1));
  SseStream s;
  ASSERT_TRUE(OpenListen(s, node.port(), R"("x")", R"({"resourceSubscriptions":["mem://x"]})"));
  nats->Kill9();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 0));
  const std::string pad(4000, 'p');
  int accepted = 0;
  std::optional<HttpResponse> refused;
  for (int i = 0; i < 100 && !refused; ++i) {  // 64 KiB hold about 15 of these
    auto r = Publish(node.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://y","pad":")" + pad + R"("}})");
    ASSERT_TRUE(r);
    if (r->status == 503) refused = r;
    else ASSERT_EQ(r->status, 202) << r->body;
    accepted += r->status == 202;
  }
  ASSERT_TRUE(refused) << "the outage buffer never filled";
  EXPECT_GT(accepted, 5);
  EXPECT_TRUE(refused->Get("retry-after")) << "a refusal says when to retry";
  EXPECT_NE(refused->body.find("outage buffer"), std::string::npos) << refused->body;
  // Refused whole: not delivered here either.
  auto to_x = Publish(node.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","pad":")" + pad + R"(","_meta":{"n":0}}})");
  ASSERT_TRUE(to_x);
  EXPECT_EQ(to_x->status, 503);
  EXPECT_TRUE(PollMetric(node.port(), "mcpfan_backplane_refused_total", [](double v) { return v >= 2; }));
  // Back: the buffer drains, publishing works, and the listen's first message is the new one.
  nats = std::make_unique<NatsServer>(nats_port);
  ASSERT_TRUE(nats->ok()) << nats->error();
  ASSERT_TRUE(PollMetricEq(node.port(), "mcpfan_backplane_connected", 1, Ms(15000)));
  ASSERT_TRUE(PublishOk(node.port(), R"({"method":"notifications/resources/updated","params":{"uri":"mem://x","_meta":{"n":1}}})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_EQ(m->GetInt({"params", "_meta", "n"}), 1) << "the refused publish must not have been delivered: " << m->text();
}

}  // namespace
}  // namespace itest

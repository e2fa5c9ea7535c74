// Poll-to-push (--upstream-task-poll, docs/protocol.md "Poll-to-push") against a scripted
// upstream whose task goes working -> input_required -> working -> completed as the test says:
// one tasks/get per interval whatever the number of listeners (100 listens over one HTTP/2
// connection), each state delivered once to each listener, none polled after completion, the
// upstream seeing Mcp-Name, the creating request's credentials and the newest requestState;
// listens of another principal or tenant hear nothing; polling pauses when the last listener
// goes, and stops at the task's TTL and after failures in a row.
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "fake_upstream.h"
#include "h2_client.h"
#include "harness.h"
#include "json_util.h"
#include "stdio_client.h"
#include "test_helpers.h"
#include "token_mint.h"

namespace itest {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::string_view kSecret = "task-poll-test-secret-0123456789abcdef";
constexpr std::string_view kTaskId = "task-7f3c9a";
constexpr std::string_view kStatuses[] = {"working", "input_required", "working", "completed"};

struct Poll {
  int phase = 0;  // the state it was answered with
  Clock::time_point at;
  std::string mcp_name, mcp_method, authorization, body;
};

// The upstream's side: a tools/call creates the task; tasks/get answers the current phase.
class TaskScript {
 public:
  TaskScript(int interval_ms, std::string ttl_json) : interval_ms_(interval_ms), ttl_json_(std::move(ttl_json)) {}

  FakeUpstream::Next Serve(int fd, const UpstreamRequest& r) {
    constexpr std::string_view kJson = "Content-Type: application/json\r\n";
    if (r.body.find(R"("method":"tools/call")") != std::string::npos) {
      FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, Answer(IdOf(r), 0, "task")));
      return FakeUpstream::Next::Read;
    }
    std::unique_lock lock(mu_);
    if (fail_) {
      polls_.push_back(Poll{-1, Clock::now(), {}, {}, {}, r.body});
      cv_.notify_all();
      lock.unlock();
      FakeUpstream::Write(fd, FakeUpstream::Answer(500, kJson, "{}"));
      return FakeUpstream::Next::Read;
    }
    int phase = phase_;
    polls_.push_back(Poll{phase, Clock::now(), r.Get("mcp-name").value_or(""), r.Get("mcp-method").value_or(""),
                          r.Get("authorization").value_or(""), r.body});
    cv_.notify_all();
    lock.unlock();
    FakeUpstream::Write(fd, FakeUpstream::Answer(200, kJson, Answer(IdOf(r), phase, "complete")));
    return FakeUpstream::Next::Read;
  }

  // The task as the upstream reports it in `phase` (requestState changes with the state only).
  std::string Task(int phase) const {
    std::string t = R"({"taskId":")" + std::string(kTaskId) + R"(","status":")" + std::string(kStatuses[phase]) +
                    R"(","createdAt":"2026-11-28T10:00:00Z","lastUpdatedAt":"2026-11-28T10:00:0)" +
                    std::to_string(phase) + R"(Z","ttlMs":)" + ttl_json_ + R"(,"pollIntervalMs":)" +
                    std::to_string(interval_ms_) + R"(,"requestState":"rs-)" + std::to_string(phase) + '"';
    if (phase == 1) t += R"(,"inputRequests":{"name":{"method":"elicitation/create","params":{}}})";
    if (phase == 3) t += R"(,"result":{"content":[{"type":"text","text":"done"}],"isError":false})";
    return t + "}";
  }

  void Advance() {
    std::lock_guard lock(mu_);
    ++phase_;
  }
  void Fail() {
    std::lock_guard lock(mu_);
    fail_ = true;
  }
  // Waits (bounded) until `pred(polls)` holds.
  bool WaitPolls(const std::function<bool(const std::vector<Poll>&)>& pred, Ms timeout = Ms(10000)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(polls_); });
  }
  bool WaitPollsIn(int phase, std::size_t n, Ms timeout = Ms(10000)) {
    return WaitPolls([&](const std::vector<Poll>& p) { return InPhase(p, phase) >= n; }, timeout);
  }
  static std::size_t InPhase(const std::vector<Poll>& polls, int phase) {
    std::size_t n = 0;
    for (const Poll& p : polls) n += p.phase == phase;
    return n;
  }
  std::vector<Poll> polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }

 private:
  std::string Answer(const std::string& id, int phase, std::string_view result_type) const {
    std::string task = Task(phase);
    return R"({"jsonrpc":"2.0","id":)" + id + R"(,"result":{"resultType":")" + std::string(result_type) + "\"," +
           task.substr(1) + "}";
  }

  int interval_ms_;
  std::string ttl_json_;
  std::mutex mu_;
  std::condition_variable cv_;
  int phase_ = 0;
  bool fail_ = false;
  std::vector<Poll> polls_;
};

std::string Token(std::string_view tenant, std::string_view sub) {
  return Hs256Token(kSecret, tenant, 3600, R"(,"sub":")" + std::string(sub) + '"');
}

// A 2026 request body declaring the Tasks extension (what a task listen needs).
std::string TasksBody(std::string_view id_json, std::string_view method, std::string_view fields) {
  return R"({"jsonrpc":"2.0","id":)" + std::string(id_json) + R"(,"method":")" + std::string(method) +
         R"(","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
         R"("io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},)" +
         std::string(fields) + "}}";
}
std::string TaskListenBody(std::string_view id_json) {
  return TasksBody(id_json, "subscriptions/listen", R"("notifications":{"taskIds":[")" + std::string(kTaskId) + "\"]}");
}
std::vector<Header> Authorized(std::string_view method, const std::string& token, std::string_view name = {}) {
  std::vector<Header> h = name.empty() ? McpHeaders(kV2026, method) : McpHeaders(kV2026, method, name);
  h.push_back({"Authorization", "Bearer " + token});
  return h;
}

// mcpfan in front of the script, with client tokens and poll-to-push on.
struct PollServer {
  explicit PollServer(TaskScript& script, std::vector<std::string> extra = {})
      : up([&script](int fd, const UpstreamRequest& r) { return script.Serve(fd, r); }) {
    std::ofstream(dir.path() + "/secret") << kSecret << "\n";
    std::vector<std::string> args{"--workers",
                                  "2",
                                  "--upstream",
                                  up.url(),
                                  "--jwt-secret-file",
                                  dir.path() + "/secret",
                                  "--upstream-task-poll",
                                  "--upstream-task-poll-min-ms",
                                  "50"};
    args.insert(args.end(), extra.begin(), extra.end());
    srv.emplace(args);
  }
  int port() const { return srv->port(); }
  FakeUpstream up;
  TempDir dir;
  std::optional<ServerProcess> srv;
};

// The tools/call that makes the upstream create the task, as `token`'s caller.
::testing::AssertionResult CreateTask(int port, const std::string& token) {
  RpcReply r = McpCall(
      port,
      McpPost(TasksBody("1", "tools/call", R"("name":"slow","arguments":{})"),
              Authorized("tools/call", token, "slow")));
  if (r.http.status != 200) return ::testing::AssertionFailure() << "tools/call: " << r.http.status << r.http.body;
  if (r.http.body.find(R"("resultType":"task")") == std::string::npos) {
    return ::testing::AssertionFailure() << "not the upstream's CreateTaskResult: " << r.http.body;
  }
  // Taken on once the answer is whole; the listens below must find its owner recorded.
  return PollMetricEq(port, "mcpfan_upstream_tasks_tracked_total", 1);
}

bool IsAck(const SseEvent& e) {
  return e.data.find("notifications/subscriptions/acknowledged") != std::string::npos;
}

// The statuses of the notifications/tasks a stream got, in order.
std::vector<std::string> Statuses(const std::deque<SseEvent>& events) {
  std::vector<std::string> out;
  for (const SseEvent& e : events) {
    if (IsAck(e)) continue;
    Json j(e.data);
    out.push_back(j.GetString({"method"}).value_or("?") + ":" + j.GetString({"params", "status"}).value_or("?"));
  }
  return out;
}

TEST(TaskPoll, OnePollPerIntervalServesAHundredListenersEachStateOnce) {
  constexpr int kInterval = 150;
  constexpr int kListeners = 100;
  TaskScript script(kInterval, "60000");
  PollServer s(script);
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  const std::string alice = Token("acme", "alice");
  ASSERT_TRUE(CreateTask(s.port(), alice));

  // Nobody listens yet: nothing is polled.
  EXPECT_TRUE(script.polls().empty());

  H2Client c;
  ASSERT_TRUE(c.Connect(s.port()));
  std::vector<std::int32_t> ids;
  for (int i = 0; i < kListeners; ++i) {
    std::string id = "\"l" + std::to_string(i) + "\"";
    ids.push_back(c.Request("POST", "/mcp", Authorized("subscriptions/listen", alice), TaskListenBody(id)));
    ASSERT_GT(ids.back(), 0);
  }
  // Each gets its acknowledgement, agreeing to the task, then the task's state kept since its creation.
  ASSERT_TRUE(c.RunUntil([&] {
    for (std::int32_t id : ids) {
      if (c.stream(id).events.size() < 2) return false;
    }
    return true;
  })) << c.stream(ids[0]).data;
  for (std::int32_t id : ids) {
    ASSERT_EQ(c.stream(id).status, 200);
    Json ack(c.stream(id).events[0].data);
    ASSERT_TRUE(IsAck(c.stream(id).events[0])) << ack.text();
    EXPECT_EQ(Dump(*ack.Get({"params", "notifications", "taskIds"})), R"([")" + std::string(kTaskId) + R"("])");
  }

  // Another principal of the same tenant: the task id is not agreed to (left out of the ack).
  SseStream bob;
  std::string err;
  ASSERT_TRUE(bob.Open(s.port(),
                       McpPost(TaskListenBody("\"bob\""), Authorized("subscriptions/listen", Token("acme", "bob"))),
                       kIo, &err))
      << err;
  auto bob_ack = bob.NextMessage();
  ASSERT_TRUE(bob_ack);
  EXPECT_FALSE(bob_ack->Has({"params", "notifications", "taskIds"})) << bob_ack->text();
  // Another tenant, even with the same subject: its task of that id would be another task; it hears nothing.
  SseStream globex;
  ASSERT_TRUE(globex.Open(
      s.port(), McpPost(TaskListenBody("\"globex\""), Authorized("subscriptions/listen", Token("globex", "alice"))),
      kIo, &err))
      << err;
  ASSERT_TRUE(globex.NextMessage());

  // The script moves the task on after three polls in each state, and completes it.
  for (int phase = 0; phase < 3; ++phase) {
    ASSERT_TRUE(script.WaitPollsIn(phase, 3)) << "phase " << phase << ": polls " << script.polls().size();
    script.Advance();
  }
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_task_polls_stopped_terminal_total", 1));
  ASSERT_TRUE(c.RunUntil([&] {
    for (std::int32_t id : ids) {
      if (Statuses(c.stream(id).events).size() < 4) return false;
    }
    return true;
  })) << c.stream(ids[0]).data;

  std::vector<Poll> polls = script.polls();
  // Exactly one poll in the completed state: none after completion (the task is gone from the
  // table once the metric says so, so none can come later).
  EXPECT_EQ(TaskScript::InPhase(polls, 3), 1u);
  ASSERT_GE(polls.size(), 10u);
  // One poll per interval, whatever the number of listeners: consecutive polls are at least an
  // interval apart (100 polls per interval would be milliseconds apart).
  for (std::size_t i = 1; i < polls.size(); ++i) {
    auto gap = std::chrono::duration_cast<Ms>(polls[i].at - polls[i - 1].at).count();
    EXPECT_GE(gap, kInterval - 10) << "polls " << i - 1 << " and " << i << " were " << gap << " ms apart";
  }
  // What the upstream saw: the routing headers, the creator's credentials, the newest requestState.
  for (std::size_t i = 0; i < polls.size(); ++i) {
    EXPECT_EQ(polls[i].mcp_method, "tasks/get");
    EXPECT_EQ(polls[i].mcp_name, kTaskId);
    EXPECT_EQ(polls[i].authorization, "Bearer " + alice);
    std::string newest = "rs-" + std::to_string(i == 0 ? 0 : polls[i - 1].phase);
    EXPECT_NE(polls[i].body.find(R"("requestState":")" + newest + '"'), std::string::npos)
        << "poll " << i << ": " << polls[i].body;
    EXPECT_NE(polls[i].body.find(R"("taskId":")" + std::string(kTaskId) + '"'), std::string::npos);
  }
  // Every listener: each state once, in order, tagged with its own subscription id.
  const std::vector<std::string> want = {"notifications/tasks:working", "notifications/tasks:input_required",
                                         "notifications/tasks:working", "notifications/tasks:completed"};
  for (int i = 0; i < kListeners; ++i) {
    H2Client::Stream& st = c.stream(ids[static_cast<std::size_t>(i)]);
    EXPECT_EQ(Statuses(st.events), want) << "listener " << i;
    for (const SseEvent& e : st.events) {
      Json j(e.data);
      EXPECT_EQ(j.GetString({"params", "_meta", "io.modelcontextprotocol/subscriptionId"}), "l" + std::to_string(i));
    }
  }
  Json last(c.stream(ids[0]).events.back().data);
  EXPECT_TRUE(last.Has({"params", "result", "content"})) << last.text();
  EXPECT_FALSE(last.Has({"params", "resultType"})) << "the result's discriminator is not the task's";

  // The other principal and the other tenant heard nothing.
  EXPECT_FALSE(bob.Next(Ms(200))) << "another principal got the task";
  EXPECT_FALSE(globex.Next(Ms(200))) << "another tenant got the task";
  EXPECT_TRUE(PollMetric(s.port(), "mcpfan_upstream_task_ids_withheld_total", [](double v) { return v >= 1; }));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_tasks_tracked", 0));
  EXPECT_TRUE(PollMetric(s.port(), "mcpfan_upstream_task_polls_total",
                         [&](double v) { return v == static_cast<double>(polls.size()); }));
}

TEST(TaskPoll, PollingPausesWhenTheLastListenerGoesAndResumesForANewOne) {
  constexpr int kInterval = 100;
  TaskScript script(kInterval, "60000");
  PollServer s(script);
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  const std::string alice = Token("acme", "alice");
  ASSERT_TRUE(CreateTask(s.port(), alice));
  {
    SseStream l;
    std::string err;
    ASSERT_TRUE(
        l.Open(s.port(), McpPost(TaskListenBody("\"a\""), Authorized("subscriptions/listen", alice)), kIo, &err))
        << err;
    ASSERT_TRUE(l.NextMessage());  // the ack
    ASSERT_TRUE(script.WaitPollsIn(0, 2));
  }  // the listener goes
  // Once the server has seen it go (its stream count back to 0), at most the poll in flight
  // then can still come: a later tick finds nobody listening.
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_listen_streams_open", 0));
  std::size_t at_close = script.polls().size();
  EXPECT_FALSE(script.WaitPolls([&](const std::vector<Poll>& p) { return p.size() > at_close + 1; }, Ms(8 * kInterval)))
      << "polled with nobody listening";
  // A new listener starts the polling again, within an interval.
  std::size_t before = script.polls().size();
  SseStream again;
  std::string err;
  ASSERT_TRUE(
      again.Open(s.port(), McpPost(TaskListenBody("\"b\""), Authorized("subscriptions/listen", alice)), kIo, &err))
      << err;
  ASSERT_TRUE(again.NextMessage());
  auto replayed = again.NextMessage();  // the newest state, kept for late listeners
  ASSERT_TRUE(replayed);
  EXPECT_EQ(replayed->GetString({"params", "status"}), "working");
  EXPECT_TRUE(script.WaitPolls([&](const std::vector<Poll>& p) { return p.size() >= before + 2; }));
}

TEST(TaskPoll, PollingStopsAtTheTasksTtl) {
  TaskScript script(100, "600");  // ttlMs 600: about six polls
  PollServer s(script);
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  const std::string alice = Token("acme", "alice");
  ASSERT_TRUE(CreateTask(s.port(), alice));
  SseStream l;
  std::string err;
  ASSERT_TRUE(l.Open(s.port(), McpPost(TaskListenBody("\"a\""), Authorized("subscriptions/listen", alice)), kIo, &err))
      << err;
  ASSERT_TRUE(script.WaitPollsIn(0, 1));
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_task_polls_stopped_ttl_total", 1));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_tasks_tracked", 0));
  std::size_t n = script.polls().size();
  EXPECT_LE(n, 8u) << "polled past the TTL";
  EXPECT_TRUE(PollMetric(s.port(), "mcpfan_upstream_task_polls_total", [&](double v) { return v == double(n); }));
}

TEST(TaskPoll, FailuresAreRetriedAndPollingStopsAfterTooManyInARow) {
  TaskScript script(100, "60000");
  PollServer s(script, {"--upstream-task-poll-max-failures", "3"});
  ASSERT_TRUE(s.srv->ok()) << s.srv->error();
  const std::string alice = Token("acme", "alice");
  ASSERT_TRUE(CreateTask(s.port(), alice));
  script.Fail();  // every tasks/get is answered 500 from now on
  SseStream l;
  std::string err;
  ASSERT_TRUE(l.Open(s.port(), McpPost(TaskListenBody("\"a\""), Authorized("subscriptions/listen", alice)), kIo, &err))
      << err;
  ASSERT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_task_polls_stopped_failures_total", 1));
  EXPECT_TRUE(PollMetricEq(s.port(), "mcpfan_upstream_task_poll_failures_total", 3));
  EXPECT_EQ(script.polls().size(), 3u);
}

TEST(TaskPoll, WithoutTheFlagNothingIsPolled) {
  TaskScript script(100, "60000");
  FakeUpstream up([&script](int fd, const UpstreamRequest& r) { return script.Serve(fd, r); });
  ServerProcess srv({"--workers", "1", "--upstream", up.url()});
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), McpPost(TasksBody("1", "tools/call", R"("name":"slow","arguments":{})"),
                                           McpHeaders(kV2026, "tools/call", "slow")));
  ASSERT_EQ(r.http.status, 200);
  SseStream l;
  std::string err;
  ASSERT_TRUE(
      l.Open(srv.port(), McpPost(TaskListenBody("\"a\""), McpHeaders(kV2026, "subscriptions/listen")), kIo, &err))
      << err;
  ASSERT_TRUE(l.NextMessage());
  EXPECT_FALSE(l.Next(Ms(400))) << "a task state without poll-to-push";
  EXPECT_TRUE(script.polls().empty());
}

}  // namespace
}  // namespace itest

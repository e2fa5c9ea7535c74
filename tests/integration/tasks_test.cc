// Task status on listen streams (the Tasks extension, SEP-2663; docs/protocol.md "Task status"),
// against the real binary over raw HTTP and stdio: the capability a task listen needs, the
// acknowledgement, delivery by task id, the newest state replayed to a late listener (once),
// tenants, publish validation, and the limits, counted.
#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

TEST(Tasks, AListenForTasksWithoutTheExtensionIsRefusedWithTheMissingCapability) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply r = McpCall(srv.port(), TaskListen(R"("l")", R"({"taskIds":["t1"]})", /*declare=*/false));
  ASSERT_TRUE(IsRpcError(r, 400, -32021, R"("l")", {"io.modelcontextprotocol/tasks"}));
  auto data = r.msg.Get({"error", "data", "requiredCapabilities", "extensions", "io.modelcontextprotocol/tasks"});
  ASSERT_TRUE(data && data->is_object()) << r.msg.text();
  // Nothing else was refused: the same listen without taskIds is served.
  SseStream s;
  EXPECT_TRUE(OpenListen(s, srv.port(), R"("ok")", R"({"toolsListChanged":true})", R"({"toolsListChanged":true})"));
}

TEST(Tasks, TheAckEchoesTheTaskIdsAndEachTaskReachesItsListenersOnly) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  SseStream a, b;
  ASSERT_TRUE(OpenTaskListen(a, srv.port(), R"("a")", R"({"taskIds":["t1","t2","t1"],"toolsListChanged":true})",
                             R"({"toolsListChanged":true,"taskIds":["t1","t2"]})"));
  ASSERT_TRUE(OpenTaskListen(b, srv.port(), "7", R"({"taskIds":["t2"]})", R"({"taskIds":["t2"]})"));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("other", "working")));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t1", "working")));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t2", "input_required")));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t1", "completed")));
  EXPECT_TRUE(NextTask(a, R"("a")", "t1", "working"));
  EXPECT_TRUE(NextTask(a, R"("a")", "t2", "input_required"));
  EXPECT_TRUE(NextTask(a, R"("a")", "t1", "completed"));
  EXPECT_TRUE(NextTask(b, "7", "t2", "input_required"));
  // b got nothing of t1 nor of the other task: the next event is a new t2 state.
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t2", "cancelled")));
  EXPECT_TRUE(NextTask(b, "7", "t2", "cancelled"));
}

TEST(Tasks, ALateListenerGetsTheNewestStateRightAfterTheAckAndOnlyOnce) {
  ServerProcess srv({"--workers", "2"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  // The client got CreateTaskResult; the task moved twice before its listen opened.
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t1", "working")));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t1", "completed")));
  SseStream s;
  ASSERT_TRUE(OpenTaskListen(s, srv.port(), R"("late")", R"({"taskIds":["t1","never"],"toolsListChanged":true})",
                             R"({"toolsListChanged":true,"taskIds":["t1","never"]})"));
  EXPECT_TRUE(NextTask(s, R"("late")", "t1", "completed"));
  // Nothing else was queued for it: the next event is the marker.
  ASSERT_TRUE(PublishOk(srv.port(), R"({"method":"notifications/tools/list_changed"})"));
  std::string err;
  auto m = s.NextMessage(kIo, &err);
  ASSERT_TRUE(m) << err;
  EXPECT_TRUE(IsNotification(*m, "notifications/tools/list_changed", R"("late")"));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_task_replays_total", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_task_states", 1));
}

TEST(Tasks, TenantsNeverSeeEachOthersTasksLiveOrReplayed) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  // "beta" has no client here: its task's state is kept all the same, under its name.
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("shared-id", "working", "beta")));
  SseStream s;
  ASSERT_TRUE(OpenTaskListen(s, srv.port(), R"("d")", R"({"taskIds":["shared-id"]})", R"({"taskIds":["shared-id"]})"));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("shared-id", "failed", "beta")));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("shared-id", "cancelled")));  // the default tenant's own
  EXPECT_TRUE(NextTask(s, R"("d")", "shared-id", "cancelled"));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_task_states", 2));
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_task_replays_total", 0));
}

TEST(Tasks, ARefusedPublishNamesTheProblemAndLeavesNoState) {
  ServerProcess srv({"--max-task-bytes", "400", "--max-task-id-length", "8"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  struct Bad {
    std::string body, mention;
  };
  const std::string times = R"("createdAt":"a","lastUpdatedAt":"b","ttlMs":1000)";
  const std::vector<Bad> bad = {
      {R"({"method":"notifications/tasks","params":{"status":"working",)" + times + "}}", "taskId"},
      {R"({"method":"notifications/tasks","params":{"taskId":"","status":"working",)" + times + "}}", "taskId"},
      {R"({"method":"notifications/tasks","params":{"taskId":"t1","status":"done",)" + times + "}}",
       "working, input_required, completed, cancelled, failed"},
      {R"({"method":"notifications/tasks","params":{"taskId":"t1","status":"completed",)" + times + "}}", "result"},
      {R"({"method":"notifications/tasks","params":{"taskId":"t1","status":"failed",)" + times + "}}", "error"},
      {R"({"method":"notifications/tasks","params":{"taskId":"t123456789","status":"working",)" + times + "}}",
       "longer than 8"},
      {R"({"method":"notifications/tasks","params":{"taskId":"t1","status":"working","statusMessage":")" +
           std::string(400, 'x') + R"(",)" + times + "}}",
       "--max-task-bytes"},
      // All or nothing: a valid first notification is not published with an invalid second one.
      {"[" + TaskPublish("t1", "working") + R"(,{"method":"notifications/tasks","params":{"taskId":"t1"}}])",
       "notification 1"},
  };
  for (const Bad& b : bad) {
    auto r = Publish(srv.port(), b.body);
    ASSERT_TRUE(r) << b.body;
    EXPECT_EQ(r->status, 400) << b.body;
    EXPECT_NE(r->body.find(b.mention), std::string::npos) << r->body << " should mention " << b.mention;
  }
  EXPECT_TRUE(PollMetricEq(srv.port(), "mcpfan_task_states", 0));
  EXPECT_TRUE(PollMetricEq(srv.port(), R"(mcpfan_limit_hits_total{limit="task_bytes"})", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), R"(mcpfan_limit_hits_total{limit="task_id_length"})", 1));
  SseStream s;
  ASSERT_TRUE(OpenTaskListen(s, srv.port(), R"("l")", R"({"taskIds":["t1"]})", R"({"taskIds":["t1"]})"));
  ASSERT_TRUE(PublishOk(srv.port(), TaskPublish("t1", "working")));
  EXPECT_TRUE(NextTask(s, R"("l")", "t1", "working")) << "the refused states reached nobody, live or replayed";
}

TEST(Tasks, ListenLimitsOnTaskIdsAreEnforcedAndCounted) {
  ServerProcess srv({"--max-task-ids-per-listen", "2", "--max-task-id-length", "4"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  RpcReply many = McpCall(srv.port(), TaskListen(R"("m")", R"({"taskIds":["a","b","c"]})"));
  EXPECT_TRUE(IsRpcError(many, 200, -32602, R"("m")", {"more than 2 task ids"}));
  RpcReply longer = McpCall(srv.port(), TaskListen(R"("n")", R"({"taskIds":["abcde"]})"));
  EXPECT_TRUE(IsRpcError(longer, 200, -32602, R"("n")", {"longer than 4"}));
  RpcReply empty = McpCall(srv.port(), TaskListen(R"("e")", R"({"taskIds":[""]})"));
  EXPECT_TRUE(IsRpcError(empty, 200, -32602, R"("e")", {"empty task id"}));
  EXPECT_TRUE(PollMetricEq(srv.port(), R"(mcpfan_limit_hits_total{limit="task_ids_per_listen"})", 1));
  EXPECT_TRUE(PollMetricEq(srv.port(), R"(mcpfan_limit_hits_total{limit="task_id_length"})", 1));
}

TEST(Tasks, StdioListensGetTaskStatusTooWithTheSameRules) {
  StdioChild child;
  ASSERT_TRUE(child.ok()) << child.error();
  ASSERT_TRUE(child.io().SendLine(TaskListenBody("1", R"({"taskIds":["t1"]})", /*declare=*/false)));
  std::string err;
  auto refused = child.io().NextJson(kIo, &err);
  ASSERT_TRUE(refused) << err;
  EXPECT_TRUE(IsError(*refused, "1", -32021));
  auto data = refused->Get({"error", "data", "requiredCapabilities", "extensions"});
  EXPECT_TRUE(data && data->is_object()) << refused->text();

  ASSERT_TRUE(PublishOk(child.port(), TaskPublish("t1", "working")));  // before the listen: replayed
  ASSERT_TRUE(child.io().SendLine(TaskListenBody(R"("s")", R"({"taskIds":["t1"]})")));
  auto ack = child.io().NextJson(kIo, &err);
  ASSERT_TRUE(ack) << err;
  EXPECT_TRUE(IsAck(*ack, R"("s")", R"({"taskIds":["t1"]})"));
  auto replayed = child.io().NextJson(kIo, &err);
  ASSERT_TRUE(replayed) << err;
  EXPECT_TRUE(IsNotification(*replayed, "notifications/tasks", R"("s")", TaskParams("t1", "working")));
  ASSERT_TRUE(PublishOk(child.port(), TaskPublish("t1", "completed")));
  auto live = child.io().NextJson(kIo, &err);
  ASSERT_TRUE(live) << err;
  EXPECT_TRUE(IsNotification(*live, "notifications/tasks", R"("s")", TaskParams("t1", "completed")));
}

}  // namespace
}  // namespace itest

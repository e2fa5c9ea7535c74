// Poll-to-push's reading of upstream answers (transports/src/server/task_poller.h): a
// CreateTaskResult or a tasks/get result read as a task, as JSON or in an event stream; what is
// not a task is refused. The polling itself runs against the real binary:
// tests/integration/task_poll_test.cc.
#include "server/task_poller.h"

#include <gtest/gtest.h>

namespace mcpfan::detail {
namespace {

TEST(TaskAnswer, ACreateTaskResultIsReadAsItsTaskWithoutTheDiscriminator) {
  auto t =
      read_task_answer(R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"t-1","status":"working",)"
                       R"("createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,)"
                       R"("pollIntervalMs":250,"requestState":"rs"}})",
                       true);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->task_id, "t-1");
  EXPECT_FALSE(t->terminal);
  EXPECT_EQ(t->poll_interval_ms, 250u);
  EXPECT_EQ(t->ttl_ms, 60000u);
  EXPECT_EQ(t->request_state, "rs");
  EXPECT_EQ(t->task_json,
            R"({"taskId":"t-1","status":"working","createdAt":"2026-01-01T00:00:00Z",)"
            R"("lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":250,"requestState":"rs"})");
}

TEST(TaskAnswer, ANullTtlIsUnlimitedAndATerminalStatusIsSeen) {
  auto t = read_task_answer(
      R"({"id":2,"result":{"resultType":"complete","taskId":"t","status":"completed","ttlMs":null,"result":{}}})",
      false);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->terminal);
  EXPECT_FALSE(t->ttl_ms);
  EXPECT_FALSE(t->poll_interval_ms);
}

TEST(TaskAnswer, WhatIsNotATaskIsRefused) {
  // A tool's ordinary result, an error, another resultType, no id, an unknown status, not JSON.
  EXPECT_FALSE(read_task_answer(R"({"id":1,"result":{"content":[]}})", true));
  EXPECT_FALSE(read_task_answer(R"({"id":1,"error":{"code":-32602,"message":"no"}})", false));
  EXPECT_FALSE(
      read_task_answer(R"({"id":1,"result":{"resultType":"complete","taskId":"t","status":"working"}})", true));
  EXPECT_FALSE(read_task_answer(R"({"id":1,"result":{"resultType":"task","status":"working"}})", true));
  EXPECT_FALSE(read_task_answer(R"({"id":1,"result":{"resultType":"task","taskId":"","status":"working"}})", true));
  EXPECT_FALSE(read_task_answer(R"({"id":1,"result":{"resultType":"task","taskId":"t","status":"sleeping"}})", true));
  EXPECT_FALSE(read_task_answer("not json", true));
}

TEST(TaskAnswer, TheResponseInAnEventStreamIsTheLastEventThatIsOne) {
  std::string body =
      "id: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n"
      ": comment\n\n"
      "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\ndata: \"result\":{\"taskId\":\"t\"}}\n\n";
  auto r = response_in(body, true);
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, "{\"jsonrpc\":\"2.0\",\"id\":3,\n\"result\":{\"taskId\":\"t\"}}");
  // Unterminated last event, and a JSON body as it is.
  EXPECT_EQ(response_in("data: {\"id\":1,\"result\":{}}", true).value_or(""), "{\"id\":1,\"result\":{}}");
  EXPECT_EQ(response_in("{\"id\":1}", false).value_or(""), "{\"id\":1}");
  EXPECT_FALSE(response_in("data: {\"method\":\"x\"}\n\n", true));
}

}  // namespace
}  // namespace mcpfan::detail

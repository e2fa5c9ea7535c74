// The backplane's receive on its loop (transports/src/nats/loop_receive.h): which messages it
// takes from nats.c (the data subjects of the v1 contract, nothing else a connection may
// subscribe to), and that Debian's libnats has the hook it needs (else every node would fall
// back to nats.c's delivery pool without anyone noticing but the log).
#include <gtest/gtest.h>

#include <string>

#include "nats/loop_receive.h"
#include "nats/subjects.h"

namespace mcpfan::detail::nats {
namespace {

TEST(LoopReceive, TheLoadedLibnatsHasTheHook) {
  EXPECT_TRUE(LoopReceive::available());
}

TEST(LoopReceive, TakesEveryDataSubjectOfTheContract) {
  for (const char* prefix : {"mcpfan", "a.b-c_d"}) {
    SCOPED_TRACE(prefix);
    for (const char* tenant : {"default", "", "acme.eu", "a b",
                               "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}) {
      SCOPED_TRACE(tenant);
      EXPECT_TRUE(LoopReceive::is_data_subject(prefix, resource_subject(prefix, tenant, "file:///proj/a b.txt")));
      EXPECT_TRUE(LoopReceive::is_data_subject(prefix, resource_subject(prefix, tenant, "urn:a..b")));
      EXPECT_TRUE(LoopReceive::is_data_subject(prefix, resource_subject(prefix, tenant, "")));
      for (Kind k : {Kind::ToolsListChanged, Kind::PromptsListChanged, Kind::ResourcesListChanged}) {
        EXPECT_TRUE(LoopReceive::is_data_subject(prefix, list_subject(prefix, tenant, k)));
      }
      std::string task;
      append_task_subject(task, prefix, tenant, "task-1");
      EXPECT_TRUE(LoopReceive::is_data_subject(prefix, task));
    }
  }
}

TEST(LoopReceive, LeavesEverythingElseToNatsC) {
  for (const char* s :
       {"", "mcpfan", "mcpfan.v1", "mcpfan.v1.", "mcpfan.v1.default", "mcpfan.v1.default.r", "mcpfan.v1.default.r.",
        "mcpfan.v2.default.r.K4S2u_kVlo6", "other.v1.default.r.K4S2u_kVlo6", "mcpfanx.v1.default.r.K4S2u_kVlo6",
        "mcpfan.v1..r.K4S2u_kVlo6", "mcpfan.v1.default.x.K4S2u_kVlo6", "mcpfan.v1.default.rr.K4S2u_kVlo6",
        "mcpfan.v1.hb.n0", "mcpfan.v1.~hb", "mcpfan.hb.n0", "_INBOX.abc"}) {
    EXPECT_FALSE(LoopReceive::is_data_subject("mcpfan", s)) << s;
  }
}

}  // namespace
}  // namespace mcpfan::detail::nats

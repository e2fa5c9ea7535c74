// Tests for engine/src/kind.cc: the MCP change notifications, their table and what is derived from it.
#include "mcpfan/kind.h"

#include <gtest/gtest.h>

namespace mcpfan {
namespace {

TEST(Kind, MethodNamesAreTheMcpNotifications) {
  EXPECT_EQ(method_name(Kind::ResourceUpdated), "notifications/resources/updated");
  EXPECT_EQ(method_name(Kind::ResourcesListChanged), "notifications/resources/list_changed");
  EXPECT_EQ(method_name(Kind::ToolsListChanged), "notifications/tools/list_changed");
  EXPECT_EQ(method_name(Kind::PromptsListChanged), "notifications/prompts/list_changed");
  EXPECT_EQ(method_name(Kind::TaskStatus), "notifications/tasks");
}

TEST(Kind, MethodLookupRoundTripsEveryKind) {
  for (int i = 0; i < kKindCount; ++i) {
    auto k = static_cast<Kind>(i);
    auto back = kind_from_method(method_name(k));
    ASSERT_TRUE(back.has_value()) << i;
    EXPECT_EQ(*back, k);
  }
}

TEST(Kind, OtherMethodsAreNotKinds) {
  for (const char* m : {"", "notifications/resources/updated ", "notifications/resources/Updated",
                        "notifications/resources", "notifications/tools/list_changed/x", "resources/updated",
                        "notifications/message", "notifications/cancelled", "tools/list_changed"}) {
    EXPECT_FALSE(kind_from_method(m).has_value()) << '"' << m << '"';
  }
}

TEST(Kind, BitsAreDistinctSingleBits) {
  unsigned seen = 0;
  for (int i = 0; i < kKindCount; ++i) {
    unsigned b = kind_bit(static_cast<Kind>(i));
    EXPECT_EQ(b & (b - 1), 0u) << "not a single bit: " << b;
    EXPECT_NE(b, 0u);
    EXPECT_EQ(seen & b, 0u) << "bit reused";
    seen |= b;
  }
  static_assert(kind_bit(Kind::ToolsListChanged) != kind_bit(Kind::PromptsListChanged));
}

TEST(Kind, TheCapabilitiesAreThoseTheKindsAnnounce) {
  // server/discover (2026-07-28) also announces the Tasks extension; a 2025 session hears no task.
  EXPECT_EQ(kind_capabilities_json(),
            R"({"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},)"
            R"("prompts":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}}})");
  EXPECT_EQ(kind_capabilities_json(CapabilityEra::Rev2025),
            R"({"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},)"
            R"("prompts":{"listChanged":true}})");
}

TEST(Kind, ListenFlagsNameTheKindsAskedForByFlag) {
  EXPECT_EQ(kind_from_listen_flag("toolsListChanged"), Kind::ToolsListChanged);
  EXPECT_EQ(kind_from_listen_flag("promptsListChanged"), Kind::PromptsListChanged);
  EXPECT_EQ(kind_from_listen_flag("resourcesListChanged"), Kind::ResourcesListChanged);
  EXPECT_FALSE(kind_from_listen_flag("resourceSubscriptions"));  // URIs, not a flag
  EXPECT_FALSE(kind_from_listen_flag("taskIds"));
  EXPECT_FALSE(kind_from_listen_flag(""));
  for (const KindInfo& k : kKinds) {
    // Every kind is asked for one way: by its flag, or by a list of keys.
    EXPECT_NE(k.listen_flag.empty(), !k.keyed()) << k.method;
    EXPECT_EQ(k.listen_keys.empty(), !k.keyed()) << k.method;
    EXPECT_EQ(k.subject_token.empty(), k.keyed()) << k.method;
  }
}

TEST(Kind, KeyListsNameTheKeyedKinds) {
  EXPECT_EQ(kind_from_listen_keys("resourceSubscriptions"), Kind::ResourceUpdated);
  EXPECT_EQ(kind_from_listen_keys("taskIds"), Kind::TaskStatus);
  EXPECT_FALSE(kind_from_listen_keys("toolsListChanged"));
  EXPECT_EQ(kind_info(Kind::ResourceUpdated).key_member, "uri");
  EXPECT_EQ(kind_info(Kind::TaskStatus).key_member, "taskId");
  // Only URIs have prefixes: a task id ending in '/' is just a task id.
  EXPECT_TRUE(is_prefix_key(Kind::ResourceUpdated, "file:///a/"));
  EXPECT_FALSE(is_prefix_key(Kind::ResourceUpdated, "file:///a"));
  EXPECT_FALSE(is_prefix_key(Kind::TaskStatus, "task/"));
  EXPECT_FALSE(kind_info(Kind::TaskStatus).in_2025_sessions);
}

}  // namespace
}  // namespace mcpfan

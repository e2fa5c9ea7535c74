// The receiving side of the subject contract (transports/src/nats/inbound.h; docs/operations.md "What a node accepts
// from NATS"): one notification per message, the subject decides the tenant, everything else is dropped with its
// reason. And decode_tenant_token(), which reads a tenant token back (subjects.h).
#include <gtest/gtest.h>

#include <string>

#include "nats/inbound.h"
#include "nats/subjects.h"

namespace mcpfan::detail::nats {
namespace {

class Inbound_ : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* t : {"acme", "victim", "acme.eu"}) ASSERT_TRUE(tenants_.acquire(t));
    ASSERT_TRUE(tenants_.acquire(long_name_));
  }
  Inbound check(std::string_view subject, std::string_view body) {
    return check_inbound(decoder_, "mcpfan", subject, body, tenants_);
  }
  static std::string updated(std::string_view tenant, std::string_view uri) {
    std::string t = tenant.empty() ? "" : R"("tenant":")" + std::string(tenant) + R"(",)";
    return "{" + t + R"("method":"notifications/resources/updated","params":{"uri":")" + std::string(uri) + R"("}})";
  }
  TenantTable tenants_;
  PublishDecoder decoder_;
  const std::string long_name_ = std::string(70, 'x');  // escaped form over 64 bytes: a `~h` token
};

TEST_F(Inbound_, ADirectPublishOnTheTenantsOwnSubjectIsDelivered) {
  const std::string subject = resource_subject("mcpfan", "acme", "mem://doc");
  for (const std::string& body : {updated("acme", "mem://doc"), updated("", "mem://doc")}) {
    Inbound in = check(subject, body);
    ASSERT_FALSE(in.rejected) << body << ": " << reject_name(*in.rejected);
    ASSERT_TRUE(in.payload) << body;
    EXPECT_EQ(in.payload->tenant(), tenants_.find("acme")) << "a body without a tenant is the subject's tenant's";
    EXPECT_EQ(in.payload->uri(), "mem://doc");
  }
  Inbound list = check(list_subject("mcpfan", "acme.eu", Kind::ToolsListChanged),
                       R"({"tenant":"acme.eu","method":"notifications/tools/list_changed"})");
  ASSERT_FALSE(list.rejected);
  ASSERT_TRUE(list.payload);
  EXPECT_EQ(list.payload->tenant(), tenants_.find("acme.eu"));
}

TEST_F(Inbound_, ABodyNamingAnotherTenantIsDroppedAsTenant) {
  Inbound in = check(resource_subject("mcpfan", "acme", "mem://doc"), updated("victim", "mem://doc"));
  ASSERT_TRUE(in.rejected);
  EXPECT_EQ(*in.rejected, Reject::Tenant);
  EXPECT_FALSE(in.payload);
}

TEST_F(Inbound_, SeveralNotificationsInOneMessageAreDroppedAsBatch) {
  const std::string subject = resource_subject("mcpfan", "acme", "mem://doc");
  for (const std::string& body : {"[" + updated("victim", "x") + "," + updated("acme", "mem://doc") + "]",
                                  "  \n[" + updated("acme", "mem://doc") + "]", std::string("[]")}) {
    Inbound in = check(subject, body);
    ASSERT_TRUE(in.rejected) << body;
    EXPECT_EQ(*in.rejected, Reject::Batch) << body;
  }
}

TEST_F(Inbound_, AUriOrKindThatIsNotTheSubjectsIsDroppedAsSubject) {
  const std::string subject = resource_subject("mcpfan", "acme", "mem://doc");
  Inbound other_uri = check(subject, updated("acme", "mem://other"));
  ASSERT_TRUE(other_uri.rejected);
  EXPECT_EQ(*other_uri.rejected, Reject::Subject);
  Inbound other_kind = check(subject, R"({"tenant":"acme","method":"notifications/tools/list_changed"})");
  ASSERT_TRUE(other_kind.rejected);
  EXPECT_EQ(*other_kind.rejected, Reject::Subject);
  Inbound list_as_prompts = check(list_subject("mcpfan", "acme", Kind::ToolsListChanged),
                                  R"({"method":"notifications/prompts/list_changed"})");
  ASSERT_TRUE(list_as_prompts.rejected);
  EXPECT_EQ(*list_as_prompts.rejected, Reject::Subject);
}

TEST_F(Inbound_, AHashedTenantTokenIsCheckedThroughTheBodysName) {
  const std::string subject = resource_subject("mcpfan", long_name_, "mem://doc");
  ASSERT_NE(subject.find(".~h"), std::string::npos) << subject;
  Inbound ok = check(subject, updated(long_name_, "mem://doc"));
  ASSERT_FALSE(ok.rejected) << reject_name(*ok.rejected);
  ASSERT_TRUE(ok.payload);
  EXPECT_EQ(ok.payload->tenant(), tenants_.find(long_name_));
  Inbound other = check(subject, updated("victim", "mem://doc"));
  ASSERT_TRUE(other.rejected);
  EXPECT_EQ(*other.rejected, Reject::Tenant);
  // No name in the body: the default tenant, whose token is not this one.
  Inbound unnamed = check(subject, updated("", "mem://doc"));
  ASSERT_TRUE(unnamed.rejected);
  EXPECT_EQ(*unnamed.rejected, Reject::Tenant);
}

TEST_F(Inbound_, WhatIsNotOneNotificationOnAContractSubjectIsMalformed) {
  const std::string good = resource_subject("mcpfan", "acme", "mem://doc");
  const std::string body = updated("acme", "mem://doc");
  const std::string tail = good.substr(std::string("mcpfan.v1.acme").size());
  for (const std::string& subject :
       {std::string("other") + good.substr(6), "mcpfan.v2.acme" + tail, std::string("mcpfan.v1.acme"),
        "mcpfan.v1.ac~6Dme" + tail /* `m` escaped: not canonical */, "mcpfan.v1.~e" + tail,
        "mcpfan.v1.~2e" + tail /* lowercase hex */, std::string("mcpfan.v1.acme.x.y"), std::string(),
        std::string("mcpfanx.v1.acme.r.A")}) {
    Inbound in = check(subject, body);
    ASSERT_TRUE(in.rejected) << subject;
    EXPECT_EQ(*in.rejected, Reject::Malformed) << subject;
  }
  for (std::string_view bad :
       {"", "{", "42", R"({"method":"nope"})", R"({"tenant":"acme"})", "{\"tenant\":\"acme\"} x"}) {
    Inbound in = check(good, bad);
    ASSERT_TRUE(in.rejected) << bad;
    EXPECT_EQ(*in.rejected, Reject::Malformed) << bad;
  }
}

TEST_F(Inbound_, AValidMessageForATenantWithNoClientsHereCarriesNoPayload) {
  Inbound in = check(resource_subject("mcpfan", "nobody", "mem://doc"), updated("nobody", "mem://doc"));
  EXPECT_FALSE(in.rejected);
  EXPECT_FALSE(in.payload);
}

TEST(TenantToken, ReadsBackExactlyWhatTheEncoderWrites) {
  for (std::string_view name : {"a", "acme", "acme.eu", "a b", "~", "\xC3\xA9", "x-y_z", "*>", "0123456789"}) {
    std::string token;
    append_tenant_token(token, name);
    auto back = decode_tenant_token(token);
    ASSERT_TRUE(back) << token;
    EXPECT_FALSE(back->hashed);
    EXPECT_EQ(back->name, name) << token;
  }
  std::string hashed;
  append_tenant_token(hashed, std::string(40, '.'));  // 120 escaped bytes: hashed
  auto h = decode_tenant_token(hashed);
  ASSERT_TRUE(h) << hashed;
  EXPECT_TRUE(h->hashed);
  auto e = decode_tenant_token("~e");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->name, "");
  for (std::string_view bad :
       {"", "~", "~4", "~2e", "~41" /* `A` needs no escape */, "a~ZZ", "~hshort", "~hAAAAAAAAAAA", "a.b", "a*"}) {
    EXPECT_FALSE(decode_tenant_token(bad)) << bad;
  }
  EXPECT_FALSE(decode_tenant_token(std::string(65, 'a'))) << "over 64 bytes: the encoder would have hashed it";
}

}  // namespace
}  // namespace mcpfan::detail::nats

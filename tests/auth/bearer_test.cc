// parse_bearer(), ClientIdentity::uri_allowed() and the failure names used as metric labels.
#include "auth_util.h"

namespace authtest {
namespace {

using mcpfan::detail::AuthFailure;
using mcpfan::detail::parse_bearer;

std::string token_or_kind(std::string_view header) {
  auto r = parse_bearer(header);
  if (auto* t = std::get_if<std::string_view>(&r)) return "token:" + std::string(*t);
  return std::string(mcpfan::detail::auth_failure_name(std::get<AuthError>(r).kind));
}

TEST(Bearer, AcceptsOneSpaceAnySchemeCaseAndSurroundingWhitespace) {
  EXPECT_EQ(token_or_kind("Bearer abc.def.ghi"), "token:abc.def.ghi");
  EXPECT_EQ(token_or_kind("bearer abc"), "token:abc");
  EXPECT_EQ(token_or_kind("BEARER abc"), "token:abc");
  EXPECT_EQ(token_or_kind("  \tBearer abc \r\n"), "token:abc");
}

TEST(Bearer, EmptyIsMissing) {
  EXPECT_EQ(token_or_kind(""), "missing");
  EXPECT_EQ(token_or_kind("   \t "), "missing");
}

TEST(Bearer, EverythingElseIsMalformed) {
  EXPECT_EQ(token_or_kind("Bearer"), "malformed");
  EXPECT_EQ(token_or_kind("Bearer   "), "malformed");    // trimmed to "Bearer"
  EXPECT_EQ(token_or_kind("Bearer  abc"), "malformed");  // two spaces
  EXPECT_EQ(token_or_kind("Bearer\tabc"), "malformed");
  EXPECT_EQ(token_or_kind("Bearer a b"), "malformed");
  EXPECT_EQ(token_or_kind("Bearerabc"), "malformed");
  EXPECT_EQ(token_or_kind("Basic dXNlcjpwYXNz"), "malformed");
  EXPECT_EQ(token_or_kind("abc.def.ghi"), "malformed");
}

TEST(Bearer, MessageDoesNotEchoTheValue) {
  auto r = parse_bearer("Basic c2VjcmV0LXBhc3N3b3Jk");
  ASSERT_TRUE(std::holds_alternative<AuthError>(r));
  EXPECT_EQ(std::get<AuthError>(r).message.find("c2VjcmV0"), std::string::npos);
}

TEST(UriAllowed, UnrestrictedAllowsEverything) {
  ClientIdentity id;
  EXPECT_TRUE(id.uri_allowed("file:///anything"));
  EXPECT_TRUE(id.uri_allowed(""));
}

TEST(UriAllowed, RestrictedMatchesByPrefix) {
  ClientIdentity id;
  id.uris_restricted = true;
  id.uri_prefixes = {"file:///project/", "db://orders"};
  EXPECT_TRUE(id.uri_allowed("file:///project/"));
  EXPECT_TRUE(id.uri_allowed("file:///project/a/b.txt"));
  EXPECT_TRUE(id.uri_allowed("db://orders"));
  EXPECT_TRUE(id.uri_allowed("db://orders/42"));
  EXPECT_TRUE(id.uri_allowed("db://orders-archive"));  // plain string prefix: end a prefix with '/' for a folder
  EXPECT_FALSE(id.uri_allowed("file:///project"));     // shorter than the prefix
  EXPECT_FALSE(id.uri_allowed("file:///"));            // a broader subscription would see more
  EXPECT_FALSE(id.uri_allowed("file:///other/x"));
  EXPECT_FALSE(id.uri_allowed(""));
}

TEST(UriAllowed, RestrictedToNothing) {
  ClientIdentity id;
  id.uris_restricted = true;
  EXPECT_FALSE(id.uri_allowed("file:///a"));
}

TEST(AuthFailureName, SnakeCaseLabels) {
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::Missing), "missing");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::Malformed), "malformed");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::BadSignature), "bad_signature");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::WrongAlgorithm), "wrong_algorithm");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::Expired), "expired");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::NotYetValid), "not_yet_valid");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::MissingTenant), "missing_tenant");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::BadClaims), "bad_claims");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::Rejected), "rejected");
  EXPECT_EQ(mcpfan::detail::auth_failure_name(AuthFailure::HostError), "host_error");
  // Every reason has a name: /metrics and /status.json iterate them all.
  for (std::size_t i = 0; i < mcpfan::detail::kAuthFailureCount; ++i) {
    EXPECT_NE(mcpfan::detail::auth_failure_name(static_cast<AuthFailure>(i)), "unknown") << i;
  }
}

}  // namespace
}  // namespace authtest

// transports/src/oauth/metadata.h: server metadata, discovery URLs, Cache-Control, RFC 9728
// protected resource metadata, RFC 7662 introspection answers.
#include "oauth/metadata.h"

#include <simdjson.h>

#include "oauth_test_util.h"

namespace oauthtest {
namespace {

using oauth::TokenFailure;

TEST(OAuthMetadata, ParsesWhatItUses) {
  std::string doc = R"({"issuer":"https://issuer.example/tenant-a","jwks_uri":"https://issuer.example/keys",
    "introspection_endpoint":"https://issuer.example/introspect","scopes_supported":["mcp:read","openid"],
    "response_types_supported":["code"]})";
  auto r = oauth::parse_server_metadata(doc, kIssuer);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r.value().issuer, kIssuer);
  EXPECT_EQ(r.value().jwks_uri, "https://issuer.example/keys");
  EXPECT_EQ(r.value().introspection_endpoint, "https://issuer.example/introspect");
  EXPECT_EQ(r.value().scopes_supported, (std::vector<std::string>{"mcp:read", "openid"}));
  auto local = oauth::parse_server_metadata(
      R"({"issuer":"http://127.0.0.1:9000","jwks_uri":"http://127.0.0.1:9000/j"})", "http://127.0.0.1:9000");
  ASSERT_TRUE(local) << local.error().message;
  EXPECT_EQ(local.value().introspection_endpoint, "");
}

TEST(OAuthMetadata, Refusals) {
  auto err = [](std::string_view doc, std::string_view issuer = "https://i.example") {
    auto r = oauth::parse_server_metadata(doc, issuer);
    return r ? std::string("(parsed)") : r.error().message;
  };
  // RFC 8414 §3.3: another issuer's document, even one differing by a trailing slash.
  EXPECT_NE(err(R"({"issuer":"https://evil.example","jwks_uri":"https://i.example/j"})").find("RFC 8414"),
            std::string::npos);
  EXPECT_NE(err(R"({"issuer":"https://i.example/","jwks_uri":"https://i.example/j"})").find("issuer"),
            std::string::npos);
  EXPECT_NE(err(R"({"issuer":"https://i.example"})").find("jwks_uri"), std::string::npos);
  EXPECT_NE(err(R"({"issuer":"https://i.example","jwks_uri":"/keys"})").find("jwks_uri"), std::string::npos);
  EXPECT_NE(err(R"({"issuer":"https://i.example","jwks_uri":"https://i.example/j","introspection_endpoint":1})")
                .find("introspection_endpoint"),
            std::string::npos);
  EXPECT_NE(err(R"({"issuer":"https://i.example","issuer":"https://i.example","jwks_uri":"https://i.example/j"})")
                .find("twice"),
            std::string::npos);
  EXPECT_NE(err("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(err(std::string_view{}).find("not a JSON object"), std::string::npos);  // null data()
  std::string big(oauth::kMaxMetadataBytes + 1, ' ');
  EXPECT_NE(err(big).find("over the"), std::string::npos);
}

TEST(OAuthMetadata, DiscoveryUrls) {
  EXPECT_EQ(oauth::discovery_urls("https://issuer.example"),
            (std::vector<std::string>{"https://issuer.example/.well-known/oauth-authorization-server",
                                      "https://issuer.example/.well-known/openid-configuration"}));
  EXPECT_EQ(oauth::discovery_urls("https://issuer.example/"), oauth::discovery_urls("https://issuer.example"));
  EXPECT_EQ(oauth::discovery_urls("https://issuer.example/tenant/a/"),
            (std::vector<std::string>{"https://issuer.example/.well-known/oauth-authorization-server/tenant/a",
                                      "https://issuer.example/tenant/a/.well-known/openid-configuration"}));
  EXPECT_EQ(oauth::discovery_urls("http://127.0.0.1:8081/realms/x"),
            (std::vector<std::string>{"http://127.0.0.1:8081/.well-known/oauth-authorization-server/realms/x",
                                      "http://127.0.0.1:8081/realms/x/.well-known/openid-configuration"}));
  EXPECT_TRUE(oauth::discovery_urls("ftp://issuer.example").empty());
  EXPECT_TRUE(oauth::discovery_urls("https://issuer.example/?a=b").empty());
  EXPECT_TRUE(oauth::discovery_urls("https://issuer.example#f").empty());
  EXPECT_TRUE(oauth::discovery_urls("https://").empty());
  EXPECT_TRUE(oauth::discovery_urls("").empty());
}

TEST(OAuthMetadata, CacheMaxAge) {
  EXPECT_EQ(oauth::cache_max_age("max-age=300"), 300u);
  EXPECT_EQ(oauth::cache_max_age("public, Max-Age=60, must-revalidate"), 60u);
  EXPECT_EQ(oauth::cache_max_age("max-age=\"90\""), 90u);
  EXPECT_EQ(oauth::cache_max_age("max-age=5, max-age=600"), 5u);
  EXPECT_EQ(oauth::cache_max_age("max-age=99999999999999999999999"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(oauth::cache_max_age("no-store"), 0u);
  EXPECT_EQ(oauth::cache_max_age("max-age=600, no-cache"), 0u);
  EXPECT_EQ(oauth::cache_max_age("no-cache=\"set-cookie\""), 0u);
  EXPECT_EQ(oauth::cache_max_age("public"), std::nullopt);
  EXPECT_EQ(oauth::cache_max_age("max-age=-1"), std::nullopt);
  EXPECT_EQ(oauth::cache_max_age("max-age="), std::nullopt);
  EXPECT_EQ(oauth::cache_max_age("s-maxage=10"), std::nullopt);
  EXPECT_EQ(oauth::cache_max_age(""), std::nullopt);
}

TEST(OAuthMetadata, ProtectedResourceMetadataIsValidJson) {
  std::string doc = oauth::protected_resource_metadata("https://mcp.example/mcp?\"q\"\\",
                                                       {"https://issuer.example/tenant-a", "https://b\n.example"},
                                                       {"mcp:read", "bad\xff"});
  simdjson::dom::parser parser;
  simdjson::dom::object obj;
  ASSERT_FALSE(parser.parse(doc).get(obj)) << doc;
  std::string_view s;
  ASSERT_FALSE(obj["resource"].get_string().get(s));
  EXPECT_EQ(s, "https://mcp.example/mcp?\"q\"\\");
  simdjson::dom::array servers;
  ASSERT_FALSE(obj["authorization_servers"].get_array().get(servers));
  ASSERT_EQ(servers.size(), 2u);
  ASSERT_FALSE(servers.at(1).get_string().get(s));
  EXPECT_EQ(s, "https://b\n.example");
  simdjson::dom::array scopes;
  ASSERT_FALSE(obj["scopes_supported"].get_array().get(scopes));
  EXPECT_EQ(scopes.size(), 2u);
  simdjson::dom::array methods;
  ASSERT_FALSE(obj["bearer_methods_supported"].get_array().get(methods));
  ASSERT_EQ(methods.size(), 1u);
  ASSERT_FALSE(methods.at(0).get_string().get(s));
  EXPECT_EQ(s, "header");
  // No scopes: the member is left out.
  std::string bare = oauth::protected_resource_metadata("https://r", {"https://i"}, {});
  ASSERT_FALSE(parser.parse(bare).get(obj)) << bare;
  simdjson::dom::element absent;
  EXPECT_TRUE(obj["scopes_supported"].get(absent));
}

TEST(OAuthIntrospection, ActiveAnswers) {
  std::string active = R"({"active":true,"iss":")" + kIssuer + R"(","aud":["mcpfan"],"exp":)" +
                       std::to_string(kNow + 100) +
                       R"(,"org_id":"acme","sub":"u","scope":"mcp:read","client_id":"c","uris":["mem://"]})";
  auto v = oauth::read_introspection(active, policy(), kNow);
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->tenant, "acme");
  EXPECT_EQ(ok(v)->subject, "u");
  EXPECT_EQ(ok(v)->client_id, "c");
  EXPECT_EQ(ok(v)->exp, kNow + 100);
  EXPECT_TRUE(ok(v)->has_scope("mcp:read"));
  EXPECT_TRUE(ok(v)->uris_restricted);
  // Only `active` is required by RFC 7662: no iss, aud or exp is fine.
  v = oauth::read_introspection(R"({"active":true,"org_id":"acme"})", policy(), kNow);
  ASSERT_NE(ok(v), nullptr) << describe(v);
  EXPECT_EQ(ok(v)->exp, 0);
}

TEST(OAuthIntrospection, Refusals) {
  auto k = [](std::string_view json) { return kind(oauth::read_introspection(json, policy(), kNow)); };
  EXPECT_EQ(k(R"({"active":false})"), TokenFailure::Inactive);
  EXPECT_EQ(k(R"({"active":false,"org_id":"acme"})"), TokenFailure::Inactive);
  EXPECT_EQ(k(R"({"active":"true","org_id":"acme"})"), TokenFailure::Malformed);
  EXPECT_EQ(k(R"({"org_id":"acme"})"), TokenFailure::Malformed);
  EXPECT_EQ(k("nope"), TokenFailure::Malformed);
  EXPECT_EQ(k(std::string_view{}), TokenFailure::Malformed);
  EXPECT_EQ(k(R"({"active":true,"active":false,"org_id":"acme"})"), TokenFailure::Malformed);
  EXPECT_EQ(k(R"({"active":true,"org_id":"acme","exp":)" + std::to_string(kNow - 61) + "}"), TokenFailure::Expired);
  EXPECT_EQ(k(R"({"active":true,"org_id":"acme","aud":"https://other.example"})"), TokenFailure::WrongAudience);
  EXPECT_EQ(k(R"({"active":true,"org_id":"acme","iss":"https://other.example"})"), TokenFailure::WrongIssuer);
  EXPECT_EQ(k(R"({"active":true})"), TokenFailure::MissingTenant);
  EXPECT_EQ(k(R"({"active":true,"org_id":"a/b"})"), TokenFailure::BadTenant);
}

}  // namespace
}  // namespace oauthtest

// The v1 NATS subject contract (transports/src/nats/subjects.h) on concrete examples: the
// pinned hash values (a change here breaks every mixed-version cluster), tenant escaping,
// the fold boundary, prefix interests, list subjects, the bounds and NATS matching.
#include "nats/subjects.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace mcpfan::detail::nats {
namespace {

std::vector<std::string> tokens(std::string_view s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    out.emplace_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

std::string h(HashDomain d, std::string_view bytes) {
  std::string out;
  append_hash_token(out, d, bytes);
  return out;
}
std::string seg(std::string_view bytes) { return h(HashDomain::Segment, bytes); }

std::string tenant_token(std::string_view tenant) {
  std::string out;
  append_tenant_token(out, tenant);
  return out;
}

// A URI of `n` segments: s0/s1/.../s(n-1).
std::string uri_of(int n) {
  std::string uri;
  for (int i = 0; i < n; ++i) {
    if (i > 0) uri.push_back('/');
    uri += "s" + std::to_string(i);
  }
  return uri;
}

TEST(Hash, FnvMatchesTheReferenceVectorsAndTheTokensArePinned) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
  // v1 forever: these are the values quoted in subjects.h.
  EXPECT_EQ(seg(""), "O_QH2C6mSkm");
  EXPECT_EQ(seg("file:"), "K4S2u_kVlo6");
  EXPECT_EQ(seg("proj"), "Htf3SSb97AH");
  EXPECT_EQ(seg("a b.txt"), "MZA-LR5nFKr");
  EXPECT_EQ(seg("urn:a..b"), "EkfY5RaZRJw");
  EXPECT_EQ(token_hash("a"), token_hash("a"));
}

TEST(Hash, TheDomainIsInTheFirstCharacter) {
  for (std::string_view s : {"", "a", "file:", "x/y/z", "\xff\xfe"}) {
    std::string d0 = h(HashDomain::Segment, s), d1 = h(HashDomain::FoldedRest, s), d2 = h(HashDomain::Tenant, s);
    ASSERT_EQ(d0.size(), kHashTokenBytes);
    EXPECT_TRUE(d0[0] >= 'A' && d0[0] <= 'P') << d0;
    EXPECT_TRUE((d1[0] >= 'Q' && d1[0] <= 'Z') || (d1[0] >= 'a' && d1[0] <= 'f')) << d1;
    EXPECT_TRUE(d2[0] >= 'g' && d2[0] <= 'v') << d2;
    EXPECT_EQ(d0.substr(1), d1.substr(1));  // the same hash bits otherwise
    EXPECT_EQ(d0.substr(1), d2.substr(1));
  }
}

TEST(Prefix, ValidationNamesWhatIsWrong) {
  EXPECT_EQ(prefix_error("mcpfan"), std::nullopt);
  EXPECT_EQ(prefix_error("a.b-c.D_9"), std::nullopt);
  EXPECT_EQ(prefix_error(std::string(32, 'p')), std::nullopt);
  EXPECT_NE(prefix_error(std::string(33, 'p')), std::nullopt);
  EXPECT_NE(prefix_error(""), std::nullopt);
  for (std::string_view bad : {".a", "a.", "a..b", "a b", "a*", "a.>", "a~b", "é", "a\tb", "a/b"}) {
    std::optional<std::string> err = prefix_error(bad);
    ASSERT_NE(err, std::nullopt) << bad;
    EXPECT_NE(err->find("prefix"), std::string::npos) << *err;
  }
  EXPECT_NE(prefix_error("a..b")->find("empty token"), std::string::npos);
  EXPECT_NE(prefix_error("a b")->find("byte 1"), std::string::npos);
}

TEST(Tenant, PlainBytesStayAndTheRestIsEscapedInUppercaseHex) {
  EXPECT_EQ(tenant_token("default"), "default");
  EXPECT_EQ(tenant_token("Acme_eu-1"), "Acme_eu-1");
  EXPECT_EQ(tenant_token("acme.eu"), "acme~2Eeu");
  EXPECT_EQ(tenant_token("acme~2Eeu"), "acme~7E2Eeu");  // a raw `~` is escaped: no clash with the line above
  EXPECT_EQ(tenant_token("a b"), "a~20b");
  EXPECT_EQ(tenant_token("*>"), "~2A~3E");
  EXPECT_EQ(tenant_token("\xc3\xa9"), "~C3~A9");
  EXPECT_EQ(tenant_token(std::string_view("\0\x7f", 2)), "~00~7F");
  EXPECT_EQ(tenant_token(""), "~e");
}

TEST(Tenant, AnEscapedFormOver64BytesIsHashed) {
  std::string plain64(64, 't');
  EXPECT_EQ(tenant_token(plain64), plain64);
  std::string plain65(65, 't');
  EXPECT_EQ(tenant_token(plain65), "~h" + h(HashDomain::Tenant, plain65));
  std::string dots21(21, '.');  // 63 escaped bytes
  EXPECT_EQ(tenant_token(dots21).size(), 63u);
  std::string dots22(22, '.');  // 66
  EXPECT_EQ(tenant_token(dots22), "~h" + h(HashDomain::Tenant, dots22));
  EXPECT_EQ(tenant_token(dots22).size(), 2 + kHashTokenBytes);
  EXPECT_NE(tenant_token(std::string(65, 'u')), tenant_token(plain65));
}

TEST(Resource, FileUriWithASpace) {
  std::string s = resource_subject("mcpfan", "default", "file:///proj/a b.txt");
  EXPECT_EQ(s, "mcpfan.v1.default.r.K4S2u_kVlo6.O_QH2C6mSkm.O_QH2C6mSkm.Htf3SSb97AH.MZA-LR5nFKr");
  EXPECT_TRUE(valid_publish_subject(s));
  // An exact subscription is the same subject, no wildcard.
  EXPECT_EQ(resource_interest("mcpfan", "default", "file:///proj/a b.txt"), s);
}

TEST(Resource, DotsInAUriAreHashedNotSplit) {
  std::string s = resource_subject("mcpfan", "default", "urn:a..b");
  EXPECT_EQ(s, "mcpfan.v1.default.r.EkfY5RaZRJw");
  EXPECT_TRUE(valid_publish_subject(s));
  EXPECT_NE(s, resource_subject("mcpfan", "default", "urn:a.b"));
}

TEST(Resource, EmptySegmentsCount) {
  auto t = tokens(resource_subject("mcpfan", "default", "file:///a"));
  ASSERT_EQ(t.size(), 4u + 4u);
  EXPECT_EQ(t[4], seg("file:"));
  EXPECT_EQ(t[5], seg(""));
  EXPECT_EQ(t[6], seg(""));
  EXPECT_EQ(t[7], seg("a"));
  EXPECT_EQ(tokens(resource_subject("mcpfan", "default", "")).back(), seg(""));
  EXPECT_EQ(tokens(resource_subject("mcpfan", "default", "/")).size(), 4u + 2u);
}

TEST(Resource, TheFoldBoundary) {
  // 11 and 12 segments: one token each, no fold.
  auto t11 = tokens(resource_subject("p", "t", uri_of(11)));
  auto t12 = tokens(resource_subject("p", "t", uri_of(12)));
  ASSERT_EQ(t11.size(), 4u + 11u);
  ASSERT_EQ(t12.size(), 4u + 12u);
  EXPECT_EQ(t12.back(), seg("s11"));
  // 13 segments: 11 segment tokens and the folded rest `s11/s12`.
  auto t13 = tokens(resource_subject("p", "t", uri_of(13)));
  ASSERT_EQ(t13.size(), 4u + 12u);
  for (int i = 0; i < 11; ++i) EXPECT_EQ(t13[4 + i], seg("s" + std::to_string(i)));
  EXPECT_EQ(t13.back(), h(HashDomain::FoldedRest, "s11/s12"));
  // A 12-segment URI whose last segment holds the same bytes as a 13-segment URI's rest
  // cannot hold a `/`, and the domain keeps the two apart anyway.
  EXPECT_NE(t13.back(), seg("s11/s12"));
  // 40 segments still give 12 tokens; the rest keeps every `/`.
  auto t40 = tokens(resource_subject("p", "t", uri_of(40)));
  ASSERT_EQ(t40.size(), 4u + 12u);
  std::string u40 = uri_of(40);
  std::size_t pos = 0;
  for (int i = 0; i < 11; ++i) pos = u40.find('/', pos) + 1;
  EXPECT_EQ(t40.back(), h(HashDomain::FoldedRest, std::string_view(u40).substr(pos)));
}

TEST(Resource, AFourKilobyteUriStaysWithinTheBound) {
  std::string one_segment = "urn:" + std::string(4092, 'x');
  std::string many = "file:///";
  while (many.size() < 4096) many += "d/";
  many.resize(4096);
  std::string dots = "urn:" + std::string(4092, '.');
  for (const std::string& uri : {one_segment, many, dots}) {
    ASSERT_EQ(uri.size(), 4096u);
    std::string s = resource_subject(std::string(32, 'p'), std::string(64, 't'), uri);
    EXPECT_LE(s.size(), 246u);
    EXPECT_TRUE(valid_publish_subject(s)) << s;
    std::string i = resource_interest(std::string(32, 'p'), std::string(64, 't'), uri + "/");
    EXPECT_TRUE(valid_interest_subject(i)) << i;
    EXPECT_TRUE(subject_matches(i, resource_subject(std::string(32, 'p'), std::string(64, 't'), uri + "/x")));
  }
  // The longest subject there is: a 32-byte prefix, a 64-byte tenant token, 12 tokens.
  std::string longest = resource_subject(std::string(32, 'p'), std::string(64, 't'), many);
  EXPECT_EQ(longest.size(), 246u);
}

TEST(Interest, APrefixMatchesItselfAndWhatIsBelowIt) {
  std::string i = resource_interest("mcpfan", "default", "file:///proj/");
  EXPECT_EQ(i, "mcpfan.v1.default.r.K4S2u_kVlo6.O_QH2C6mSkm.O_QH2C6mSkm.Htf3SSb97AH.>");
  EXPECT_TRUE(valid_interest_subject(i));
  EXPECT_FALSE(valid_publish_subject(i));
  auto sub = [](std::string_view uri) { return resource_subject("mcpfan", "default", uri); };
  EXPECT_TRUE(subject_matches(i, sub("file:///proj/")));
  EXPECT_TRUE(subject_matches(i, sub("file:///proj/x")));
  EXPECT_TRUE(subject_matches(i, sub("file:///proj/x/y")));
  EXPECT_TRUE(subject_matches(i, sub("file:///proj//")));
  EXPECT_FALSE(subject_matches(i, sub("file:///proj")));
  EXPECT_FALSE(subject_matches(i, sub("file:///project/x")));
  EXPECT_FALSE(subject_matches(i, sub("file:///pro/")));
  EXPECT_FALSE(subject_matches(i, sub("file://proj/x")));
  EXPECT_FALSE(subject_matches(i, resource_subject("mcpfan", "other", "file:///proj/x")));
  EXPECT_FALSE(subject_matches(i, resource_subject("mcpfan2", "default", "file:///proj/x")));
  // The root: `/` is a prefix of every URI starting with `/`.
  std::string root = resource_interest("mcpfan", "default", "/");
  EXPECT_EQ(root, "mcpfan.v1.default.r." + seg("") + ".>");
  EXPECT_TRUE(subject_matches(root, sub("/")));
  EXPECT_TRUE(subject_matches(root, sub("/a/b")));
  EXPECT_FALSE(subject_matches(root, sub("a/b")));
}

TEST(Interest, APrefixAtTheFoldIsASuperset) {
  // 11 `/`s: 11 literal tokens then `>`, exact (the published 12th segment is a real token).
  std::string p11 = uri_of(11) + "/";
  std::string i11 = resource_interest("p", "t", p11);
  EXPECT_EQ(tokens(i11).size(), 4u + 11u + 1u);
  EXPECT_TRUE(subject_matches(i11, resource_subject("p", "t", p11)));
  EXPECT_TRUE(subject_matches(i11, resource_subject("p", "t", p11 + "x/y/z")));
  EXPECT_FALSE(subject_matches(i11, resource_subject("p", "t", uri_of(11))));
  // 12 and more `/`s: still 11 literal tokens then `>`; it matches what is below it...
  std::string p12 = uri_of(12) + "/";
  std::string i12 = resource_interest("p", "t", p12);
  EXPECT_EQ(tokens(i12).size(), 4u + 11u + 1u);
  EXPECT_TRUE(subject_matches(i12, resource_subject("p", "t", p12)));
  EXPECT_TRUE(subject_matches(i12, resource_subject("p", "t", p12 + "x")));
  std::string p20 = uri_of(20) + "/";
  std::string i20 = resource_interest("p", "t", p20);
  EXPECT_EQ(i20, i12);
  EXPECT_TRUE(subject_matches(i20, resource_subject("p", "t", p20 + "x/y")));
  // ...and over-matches a sibling sharing the first 11 segments (the local index drops it).
  EXPECT_TRUE(subject_matches(i12, resource_subject("p", "t", uri_of(11) + "/other")));
  // An exact subscription past the fold has no wildcard: it needs the same folded rest.
  std::string e13 = resource_interest("p", "t", uri_of(13));
  EXPECT_TRUE(valid_publish_subject(e13));
  EXPECT_FALSE(subject_matches(e13, resource_subject("p", "t", uri_of(13) + "x")));
}

TEST(List, OneSubjectPerKindAndTenant) {
  EXPECT_EQ(list_subject("mcpfan", "default", Kind::ToolsListChanged), "mcpfan.v1.default.l.tools");
  EXPECT_EQ(list_subject("mcpfan", "default", Kind::PromptsListChanged), "mcpfan.v1.default.l.prompts");
  EXPECT_EQ(list_subject("mcpfan", "default", Kind::ResourcesListChanged), "mcpfan.v1.default.l.resources");
  EXPECT_EQ(list_subject("mcpfan", "default", Kind::ResourceUpdated), "");
  EXPECT_EQ(list_subject("a.b", "acme.eu", Kind::ToolsListChanged), "a.b.v1.acme~2Eeu.l.tools");
  std::set<std::string> all;
  for (std::string_view tenant : {"default", "acme.eu", "acme~2Eeu", "", "x y"}) {
    for (Kind k : {Kind::ToolsListChanged, Kind::PromptsListChanged, Kind::ResourcesListChanged}) {
      std::string s = list_subject("mcpfan", tenant, k);
      EXPECT_TRUE(valid_publish_subject(s)) << s;
      EXPECT_TRUE(all.insert(s).second) << s;
      // No resource interest of the tenant reaches a list subject.
      EXPECT_FALSE(subject_matches(resource_interest("mcpfan", tenant, "/"), s));
      EXPECT_FALSE(subject_matches(resource_interest("mcpfan", tenant, "tools"), s));
    }
  }
}

TEST(Tenant, ATenantWithADotIsOneToken) {
  std::string s = resource_subject("mcpfan", "acme.eu", "file:///a");
  EXPECT_EQ(tokens(s)[2], "acme~2Eeu");
  EXPECT_EQ(tokens(s).size(), 4u + 4u);
  EXPECT_NE(s, resource_subject("mcpfan", "acme~2Eeu", "file:///a"));
  EXPECT_FALSE(subject_matches(resource_interest("mcpfan", "acme", "eu/"), s));
}

TEST(Append, WritesIntoTheCallersBufferWithoutReallocating) {
  std::string out = "head:";
  out.reserve(5 + 3 * kMaxSubjectBytes);
  const char* data = out.data();
  append_resource_subject(out, "mcpfan", "default", "file:///proj/a b.txt");
  out.push_back(' ');
  append_resource_interest(out, std::string(32, 'p'), std::string(200, '.'), std::string(4096, '/'));
  out.push_back(' ');
  append_list_subject(out, "mcpfan", "default", Kind::ToolsListChanged);
  EXPECT_EQ(out.data(), data);
  EXPECT_EQ(out.substr(0, 5 + 79), "head:" + resource_subject("mcpfan", "default", "file:///proj/a b.txt"));
  EXPECT_TRUE(out.ends_with(" mcpfan.v1.default.l.tools"));
}

TEST(Matching, FollowsNatsWildcardRules) {
  EXPECT_TRUE(subject_matches("a.b.c", "a.b.c"));
  EXPECT_FALSE(subject_matches("a.b.c", "a.b"));
  EXPECT_FALSE(subject_matches("a.b", "a.b.c"));
  EXPECT_FALSE(subject_matches("a.b.c", "a.b.cd"));
  EXPECT_TRUE(subject_matches("a.*.c", "a.b.c"));
  EXPECT_FALSE(subject_matches("a.*.c", "a.b.d"));
  EXPECT_FALSE(subject_matches("a.*", "a.b.c"));
  EXPECT_FALSE(subject_matches("*", "a.b"));
  EXPECT_TRUE(subject_matches("*", "a"));
  EXPECT_TRUE(subject_matches("a.>", "a.b"));
  EXPECT_TRUE(subject_matches("a.>", "a.b.c.d"));
  EXPECT_FALSE(subject_matches("a.>", "a"));
  EXPECT_FALSE(subject_matches("a.>", "b.c"));
  EXPECT_TRUE(subject_matches(">", "a"));
  EXPECT_TRUE(subject_matches("*.>", "a.b"));
  EXPECT_FALSE(subject_matches("*.>", "a"));
}

TEST(Validity, NatsSubjectRules) {
  EXPECT_TRUE(valid_publish_subject("a.b-c.D_~9"));
  EXPECT_FALSE(valid_publish_subject(""));
  EXPECT_FALSE(valid_publish_subject("a..b"));
  EXPECT_FALSE(valid_publish_subject(".a"));
  EXPECT_FALSE(valid_publish_subject("a."));
  EXPECT_FALSE(valid_publish_subject("a b"));
  EXPECT_FALSE(valid_publish_subject("a\tb"));
  EXPECT_FALSE(valid_publish_subject("a\x7f"));
  EXPECT_FALSE(valid_publish_subject("a.*"));
  EXPECT_FALSE(valid_publish_subject("a.>"));
  EXPECT_FALSE(valid_publish_subject("a.b>"));
  EXPECT_FALSE(valid_publish_subject(std::string(kMaxSubjectBytes + 1, 'a')));
  EXPECT_TRUE(valid_publish_subject(std::string(kMaxSubjectBytes, 'a')));
  EXPECT_TRUE(valid_interest_subject("a.*.>"));
  EXPECT_TRUE(valid_interest_subject(">"));
  EXPECT_FALSE(valid_interest_subject("a.>.b"));
  EXPECT_FALSE(valid_interest_subject("a.b*"));
  EXPECT_FALSE(valid_interest_subject("a.>>"));
  EXPECT_FALSE(valid_interest_subject("a..>"));
}

}  // namespace
}  // namespace mcpfan::detail::nats

// PublisherKeys: the keys file format, its errors, and lookups.
#include "auth_util.h"

namespace authtest {
namespace {

using mcpfan::detail::PublisherKeys;

std::string load_error(const std::string& path) {
  auto r = PublisherKeys::load(path);
  return r ? std::string("loaded") : r.error().message;
}

const std::string kKeyA = "key-a-0123456789abcdef";
const std::string kKeyB = "key-b-0123456789abcdef";
const std::string kKeyAny = "key-any-0123456789ab";

class Publishers : public ::testing::Test {
 protected:
  TempDir dir_;
  PublisherKeys keys_ = load();

  PublisherKeys load() {
    auto r = PublisherKeys::load(dir_.write("keys", "# publisher keys\n\n" + kKeyA + " acme\n   # indented comment\n" +
                                                        kKeyB + "\tglobex\r\n" + kKeyAny + "   *  \n"));
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? std::move(r).value() : PublisherKeys{};
  }
};

TEST_F(Publishers, ParsesKeysCommentsAndBlankLines) {
  EXPECT_TRUE(keys_.enabled());
  EXPECT_EQ(keys_.size(), 3u);
  EXPECT_FALSE(PublisherKeys{}.enabled());
}

TEST_F(Publishers, LookupHit) {
  auto a = keys_.lookup_bearer("Bearer " + kKeyA);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->any_tenant);
  EXPECT_EQ(a->tenant, "acme");
  EXPECT_EQ(a->key_index, 0u);
  auto b = keys_.lookup_bearer("  bearer " + kKeyB + " ");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->tenant, "globex");
  EXPECT_EQ(b->key_index, 1u);
}

TEST_F(Publishers, LookupAnyTenant) {
  auto g = keys_.lookup_bearer("Bearer " + kKeyAny);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->any_tenant);
  EXPECT_EQ(g->tenant, "");
  EXPECT_EQ(g->key_index, 2u);
}

TEST_F(Publishers, LookupMiss) {
  EXPECT_FALSE(keys_.lookup_bearer("Bearer " + kKeyA + "x"));
  EXPECT_FALSE(keys_.lookup_bearer("Bearer " + kKeyA.substr(0, kKeyA.size() - 1)));
  EXPECT_FALSE(keys_.lookup_bearer("Bearer acme"));
  EXPECT_FALSE(keys_.lookup_bearer(""));
  EXPECT_FALSE(keys_.lookup_bearer(kKeyA));               // no scheme
  EXPECT_FALSE(keys_.lookup_bearer("Basic " + kKeyA));
  EXPECT_FALSE(keys_.lookup_bearer("Bearer  " + kKeyA));  // two spaces
  EXPECT_FALSE(PublisherKeys{}.lookup_bearer("Bearer " + kKeyA));
}

TEST_F(Publishers, MalformedLineNamesFileAndLine) {
  auto path = dir_.write("bad", "# header\n" + kKeyA + " acme\n" + kKeyB + "\n");
  EXPECT_EQ(load_error(path), path + ":3: expected \"KEY TENANT\" (TENANT \"*\" = any tenant)");
  path = dir_.write("three", kKeyA + " acme extra\n");
  EXPECT_NE(load_error(path).find(path + ":1: expected"), std::string::npos);
}

TEST_F(Publishers, ShortKey) {
  auto path = dir_.write("short", "\n\n0123456789abcde acme\n");  // 15 bytes
  EXPECT_EQ(load_error(path), path + ":3: key is 15 bytes; need at least 16");
}

TEST_F(Publishers, DuplicateKey) {
  auto path = dir_.write("dup", kKeyA + " acme\n" + kKeyB + " b\n" + kKeyA + " other\n");
  EXPECT_EQ(load_error(path), path + ":3: duplicate key (also on line 1)");
}

TEST_F(Publishers, BadTenant) {
  auto path = dir_.write("tenant", kKeyA + " ac/me\n");
  EXPECT_NE(load_error(path).find(path + ":1: tenant must be"), std::string::npos);
}

TEST_F(Publishers, NoKeysOrNoFile) {
  auto path = dir_.write("empty", "# nothing yet\n\n");
  EXPECT_EQ(load_error(path), "publisher keys file " + path + ": no keys");
  EXPECT_NE(load_error(dir_.path() + "/missing").find(dir_.path() + "/missing: No such file"), std::string::npos);
}

}  // namespace
}  // namespace authtest

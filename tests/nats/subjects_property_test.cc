// A property test of the v1 subject contract against the engine itself: random URIs full of
// what breaks raw subjects (spaces, dots, wildcards, `~`, empty segments, control and
// non-ASCII bytes, up to 4,096 bytes), random subscriptions derived from them and random
// tenants. Whatever the engine's SubscriptionIndex matches, the NATS interest must match
// (never a missed delivery); every subject is a valid, bounded NATS subject; tenants never
// share subjects. The over-match rate for unrelated URIs is measured and printed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "mcpfan/index.h"
#include "nats/subjects.h"

namespace mcpfan::detail::nats {
namespace {

constexpr int kCases = 20000;
constexpr std::size_t kMaxUri = 4096;

class Gen {
 public:
  explicit Gen(std::uint64_t seed) : rng_(seed) {}

  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return below(100) < static_cast<std::size_t>(percent); }

  // One segment (no `/`): mostly short, sometimes empty, sometimes long.
  std::string segment() {
    std::size_t len;
    switch (below(10)) {
      case 0: case 1: len = 0; break;
      case 2: len = 40 + below(400); break;
      default: len = 1 + below(8); break;
    }
    std::string s;
    while (s.size() < len) s += piece();
    return s;
  }

  std::string uri() {
    std::string u;
    if (chance(40)) u = pick({"file:///", "https://example.com/", "urn:", "mem://", "/"});
    std::size_t segments = chance(25) ? 10 + below(30) : 1 + below(14);
    if (chance(2)) segments = 200 + below(1000);  // many short segments up to the byte bound
    for (std::size_t i = 0; i < segments; ++i) {
      if (i > 0) u.push_back('/');
      u += chance(20) ? std::string() : segment();
      if (u.size() >= kMaxUri) break;
    }
    if (chance(10)) u.push_back('/');
    if (chance(1)) u = std::string(kMaxUri, '/');
    if (u.size() > kMaxUri) u.resize(kMaxUri);
    return u;
  }

  // A subscription URI related to `v`: a copy, a `/`-prefix of it, or a near miss.
  std::string related(const std::string& v) {
    std::vector<std::size_t> slashes;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i] == '/') slashes.push_back(i);
    }
    switch (below(6)) {
      case 0: return v;
      case 1: case 2: case 3:
        if (!slashes.empty()) return v.substr(0, slashes[below(slashes.size())] + 1);
        return v;
      case 4: {  // a prefix that diverges in one byte before its last `/`
        if (slashes.empty()) return v + "/";
        std::string u = v.substr(0, slashes[below(slashes.size())] + 1);
        std::size_t at = below(u.size());
        u[at] = u[at] == 'x' ? 'y' : 'x';
        return u;
      }
      default: return v.substr(0, below(v.size() + 1));  // any byte prefix (with or without a final `/`)
    }
  }

  std::string tenant() {
    switch (below(8)) {
      case 0: return "default";
      case 1: return pick({"acme.eu", "acme~2Eeu", "a b", "é", "*", ">", "t.>", "~e", "~h"});
      case 2: {  // long: around the 64-byte escaped bound
        std::string t;
        std::size_t len = 15 + below(60);
        while (t.size() < len) t += chance(70) ? std::string(1, 'a' + below(26)) : piece();
        return t;
      }
      default: {
        std::string t;
        std::size_t len = 1 + below(12);
        while (t.size() < len) t += chance(60) ? std::string(1, 'a' + below(26)) : piece();
        return t;
      }
    }
  }

  std::string prefix() {
    if (chance(50)) return std::string(kDefaultPrefix);
    if (chance(20)) return std::string(kMaxPrefixBytes, 'P');
    std::string p;
    std::size_t tokens = 1 + below(3);
    for (std::size_t i = 0; i < tokens; ++i) {
      if (i > 0) p.push_back('.');
      std::size_t len = 1 + below(8);
      for (std::size_t j = 0; j < len; ++j) p.push_back("aZ09_-"[below(6)]);
    }
    return p;
  }

 private:
  std::string pick(std::initializer_list<const char*> options) { return *(options.begin() + below(options.size())); }

  // A few bytes of one kind.
  std::string piece() {
    switch (below(12)) {
      case 0: return " ";
      case 1: return ".";
      case 2: return pick({"*", ">", "..", ".>", "*.", ">."});
      case 3: return "~";
      case 4: return pick({"\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80", "\xff", "\x80"});  // UTF-8 and stray bytes
      case 5: return std::string(1, static_cast<char>(below(32)));  // control bytes, NUL included
      case 6: return "\x7f";
      case 7: return pick({"%20", "?q=1", "#f", ":", "\t", "\r\n"});
      default: return std::string(1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"[below(64)]);
    }
  }

  std::mt19937_64 rng_;
};

// Bytes this contract ever puts in a subject: [A-Za-z0-9_~-] and `.`, and `>` as a whole last
// token of an interest. Stricter than NATS.
bool contract_bytes(std::string_view s, bool interest) {
  std::string_view body = s;
  if (interest && s.ends_with(".>")) body = s.substr(0, s.size() - 2);
  for (unsigned char c : body) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '~' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// The engine's verdict: does a subscription to `u` receive a resources/updated for `v`?
bool engine_matches(SubscriptionIndex& index, std::string_view u, std::string_view v) {
  SubId sub = index.create();
  index.add(sub, kDefaultTenant, Kind::ResourceUpdated, u);
  bool hit = false;
  index.match(kDefaultTenant, Kind::ResourceUpdated, v, [&](SubId) { hit = true; });
  index.remove(sub);
  return hit;
}

std::string tenant_token(std::string_view tenant) {
  std::string out;
  append_tenant_token(out, tenant);
  return out;
}

// Undoes the escaped form (not `~h`/`~e`); proves the escaping is injective.
std::string unescape(std::string_view token) {
  auto hex = [](char c) { return c <= '9' ? c - '0' : c - 'A' + 10; };
  std::string out;
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '~') {
      out.push_back(token[i]);
      continue;
    }
    EXPECT_LE(i + 2, token.size() - 1);
    EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(token[i + 1])) && !std::islower(token[i + 1]));
    EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(token[i + 2])) && !std::islower(token[i + 2]));
    out.push_back(static_cast<char>(hex(token[i + 1]) * 16 + hex(token[i + 2])));
    i += 2;
  }
  return out;
}

TEST(Property, EngineMatchesAreNeverMissedAndSubjectsAreValidAndBounded) {
  Gen gen(0x6d637066616e3131ull);  // "mcpfan11"
  SubscriptionIndex index;
  std::map<std::string, std::string> tenant_of_token;  // tenant token -> tenant
  std::set<std::string> list_subjects;
  int engine_hits = 0, folded_hits = 0, prefix_hits = 0, deep_prefix_hits = 0;
  int related_misses = 0, related_over = 0, deep_prefix_over = 0;
  int unrelated = 0, unrelated_over = 0, cross_tenant_checks = 0;
  std::size_t longest = 0;

  for (int n = 0; n < kCases; ++n) {
    std::string prefix = gen.prefix();
    ASSERT_EQ(prefix_error(prefix), std::nullopt) << prefix;
    std::string tenant = gen.tenant();
    std::string v = gen.uri();
    std::string u = gen.related(v);
    if (gen.chance(30)) {  // and the other way round: V below a (possibly deep) prefix U
      u = gen.related(v);
      if (!u.empty() && u.back() == '/') v = u + (gen.chance(50) ? gen.uri() : std::string());
      if (v.size() > kMaxUri) v.resize(kMaxUri);
    }
    std::string w = gen.uri();  // unrelated to both

    std::string subject = resource_subject(prefix, tenant, v);
    std::string interest = resource_interest(prefix, tenant, u);
    std::string unrelated_interest = resource_interest(prefix, tenant, w);

    // (2) valid, contract bytes only, bounded.
    for (const std::string* s : {&subject, &interest, &unrelated_interest}) {
      bool is_interest = s != &subject;
      ASSERT_TRUE(is_interest ? valid_interest_subject(*s) : valid_publish_subject(*s)) << *s;
      ASSERT_TRUE(contract_bytes(*s, is_interest)) << *s;
      ASSERT_LE(s->size(), 246u) << *s;
      longest = std::max(longest, s->size());
    }
    bool u_is_prefix = !u.empty() && u.back() == '/';
    ASSERT_EQ(interest.ends_with(".>"), u_is_prefix) << interest;
    if (!u_is_prefix) {
      ASSERT_EQ(interest, resource_subject(prefix, tenant, u));
    }

    // (1) never a missed delivery.
    bool engine = engine_matches(index, u, v);
    bool nats = subject_matches(interest, subject);
    std::size_t u_slashes = static_cast<std::size_t>(std::count(u.begin(), u.end(), '/'));
    if (engine) {
      ++engine_hits;
      if (std::count(v.begin(), v.end(), '/') >= 12) ++folded_hits;
      if (u_is_prefix) ++prefix_hits;
      if (u_is_prefix && u_slashes >= 12) ++deep_prefix_hits;
      ASSERT_TRUE(nats) << "missed: U=" << testing::PrintToString(u) << " V=" << testing::PrintToString(v)
                        << "\n interest " << interest << "\n subject  " << subject;
    } else if (nats) {
      if (u_is_prefix && u_slashes >= 12) {
        ++deep_prefix_over;  // allowed: the interest stops at 11 tokens
      } else {
        ++related_over;
        ADD_FAILURE() << "over-match outside the fold: U=" << testing::PrintToString(u)
                      << " V=" << testing::PrintToString(v);
      }
    } else {
      ++related_misses;
    }
    ++unrelated;
    if (!engine_matches(index, w, v) && subject_matches(unrelated_interest, subject)) ++unrelated_over;

    // (3) another tenant never receives it.
    std::string other = gen.tenant();
    if (other != tenant) {
      ++cross_tenant_checks;
      ASSERT_FALSE(subject_matches(resource_interest(prefix, other, u), subject)) << tenant << " / " << other;
      ASSERT_NE(resource_subject(prefix, other, v), subject);
    }
    std::string token = tenant_token(tenant);
    ASSERT_LE(token.size(), kMaxTenantTokenBytes);
    if (!token.starts_with("~h") && !token.starts_with("~e")) {
      ASSERT_EQ(unescape(token), tenant);
    } else {
      ASSERT_EQ(token.size(), token.starts_with("~h") ? 2 + kHashTokenBytes : 2);
    }
    auto [it, fresh] = tenant_of_token.emplace(token, tenant);
    ASSERT_EQ(it->second, tenant) << "two tenants share the token " << token;

    // (4) list subjects: one per (tenant, kind), never a resource subject's match.
    for (Kind k : {Kind::ToolsListChanged, Kind::PromptsListChanged, Kind::ResourcesListChanged}) {
      std::string ls = list_subject("mcpfan", tenant, k);
      ASSERT_TRUE(valid_publish_subject(ls)) << ls;
      ASSERT_TRUE(contract_bytes(ls, false)) << ls;
      ASSERT_LE(ls.size(), 246u);
      list_subjects.insert(ls);
      ASSERT_FALSE(subject_matches(resource_interest("mcpfan", tenant, "/"), ls));
      ASSERT_FALSE(subject_matches(resource_interest("mcpfan", tenant, u), ls));
    }
  }
  EXPECT_EQ(list_subjects.size(), 3 * tenant_of_token.size());

  // The generator must reach the interesting cases, or the test proves little.
  EXPECT_GT(engine_hits, kCases / 4);
  EXPECT_GT(prefix_hits, kCases / 10);
  EXPECT_GT(folded_hits, kCases / 50);
  EXPECT_GT(deep_prefix_hits, kCases / 100);
  EXPECT_GT(related_misses, kCases / 20);
  EXPECT_GT(cross_tenant_checks, kCases / 2);
  EXPECT_GT(tenant_of_token.size(), 1000u);
  EXPECT_EQ(related_over, 0);
  EXPECT_EQ(unrelated_over, 0);  // 64-bit tokens: a collision here is a bug, not bad luck
  std::printf(
      "[ property ] %d cases: %d engine matches (%d prefix, %d past the fold, %d deep prefixes), all delivered; "
      "%d related non-matches, %d over-matched outside the fold, %d over-matched by deep prefixes (allowed); "
      "unrelated over-match %d/%d = %.5f; %zu distinct tenants; longest subject %zu bytes\n",
      kCases, engine_hits, prefix_hits, folded_hits, deep_prefix_hits, related_misses, related_over, deep_prefix_over,
      unrelated_over, unrelated, static_cast<double>(unrelated_over) / unrelated, tenant_of_token.size(), longest);
}

}  // namespace
}  // namespace mcpfan::detail::nats

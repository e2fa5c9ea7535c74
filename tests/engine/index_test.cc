// Tests for engine/src/index.cc: the loop-local (tenant, kind, uri) -> subscriptions index.
#include "mcpfan/index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace mcpfan {
namespace {

constexpr Kind kUpdated = Kind::ResourceUpdated;

// Every reported id, in report order (duplicates kept, so tests can see them).
std::vector<SubId> reported(SubscriptionIndex& idx, TenantId t, Kind k, std::string_view uri) {
  std::vector<SubId> out;
  idx.match(t, k, uri, [&](SubId s) { out.push_back(s); });
  return out;
}

std::vector<SubId> sorted(std::vector<SubId> v) {
  std::sort(v.begin(), v.end());
  return v;
}

using Ids = std::vector<SubId>;

// A tenant id as the tenant table would issue it (slot i, generation 1).
constexpr TenantId T(std::uint32_t i) { return TenantId{i, 1}; }

TEST(SubscriptionIndex, ExactUriMatch) {
  SubscriptionIndex idx;
  SubId a = idx.create();
  idx.add(a, kDefaultTenant, kUpdated, "file:///a.txt");
  SubId b = idx.create();
  idx.add(b, kDefaultTenant, kUpdated, "file:///b.txt");

  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///a.txt"), Ids{a});
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///b.txt"), Ids{b});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///a.tx").empty());
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///a.txt2").empty());
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///A.txt").empty());
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "").empty());
}

TEST(SubscriptionIndex, SlashTerminatedUriMatchesSubResources) {
  SubscriptionIndex idx;
  SubId dir = idx.create();
  idx.add(dir, kDefaultTenant, kUpdated, "file:///dir/");
  SubId plain = idx.create();
  idx.add(plain, kDefaultTenant, kUpdated, "file:///dir");

  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///dir/a/b"), Ids{dir});
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///dir/a"), Ids{dir});  // not `plain`
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///dir/"), Ids{dir});
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///dir"), Ids{plain});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///dirx/a").empty());
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///di").empty());

  SubId root = idx.create();
  idx.add(root, kDefaultTenant, kUpdated, "file:///");
  EXPECT_EQ(sorted(reported(idx, kDefaultTenant, kUpdated, "file:///dir/a/b")), sorted({dir, root}));
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///other"), Ids{root});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "mem://dir/a").empty());
}

TEST(SubscriptionIndex, SubscriptionMatchingThroughSeveralKeysIsReportedOnce) {
  SubscriptionIndex idx;
  SubId s = idx.create();
  idx.add(s, kDefaultTenant, kUpdated, "file:///a/");
  idx.add(s, kDefaultTenant, kUpdated, "file:///a/b/");
  idx.add(s, kDefaultTenant, kUpdated, "file:///a/b/c");
  idx.add(s, kDefaultTenant, kUpdated, "file:///a/b/c");  // twice: a no-op
  SubId t = idx.create();
  idx.add(t, kDefaultTenant, kUpdated, "file:///a/b/c");
  EXPECT_EQ(idx.key_count(), 3u);

  for (int round = 0; round < 3; ++round) {  // and again on every later match
    EXPECT_EQ(sorted(reported(idx, kDefaultTenant, kUpdated, "file:///a/b/c")), sorted({s, t})) << round;
    EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///a/b/d"), Ids{s}) << round;
  }
}

TEST(SubscriptionIndex, TenantsAreIsolated) {
  SubscriptionIndex idx;
  SubId a = idx.create();
  idx.add(a, T(1), kUpdated, "file:///x");
  idx.add(a, T(1), kUpdated, "file:///p/");
  idx.add(a, T(1), Kind::ToolsListChanged, {});
  SubId b = idx.create();
  idx.add(b, T(2), kUpdated, "file:///x");
  idx.add(b, T(2), kUpdated, "file:///p/");
  idx.add(b, T(2), Kind::ToolsListChanged, {});

  EXPECT_EQ(reported(idx, T(1), kUpdated, "file:///x"), Ids{a});
  EXPECT_EQ(reported(idx, T(2), kUpdated, "file:///x"), Ids{b});
  EXPECT_EQ(reported(idx, T(1), kUpdated, "file:///p/q"), Ids{a});
  EXPECT_EQ(reported(idx, T(2), kUpdated, "file:///p/q"), Ids{b});
  EXPECT_EQ(reported(idx, T(1), Kind::ToolsListChanged, {}), Ids{a});
  EXPECT_EQ(reported(idx, T(2), Kind::ToolsListChanged, {}), Ids{b});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///x").empty());
  EXPECT_TRUE(reported(idx, T(3), Kind::ToolsListChanged, {}).empty());
}

TEST(SubscriptionIndex, KindsAreIsolated) {
  SubscriptionIndex idx;
  SubId tools = idx.create();
  idx.add(tools, kDefaultTenant, Kind::ToolsListChanged, "file:///ignored");  // uri ignored
  SubId prompts = idx.create();
  idx.add(prompts, kDefaultTenant, Kind::PromptsListChanged, {});
  SubId resources = idx.create();
  idx.add(resources, kDefaultTenant, Kind::ResourcesListChanged, {});
  SubId updated = idx.create();
  idx.add(updated, kDefaultTenant, kUpdated, "file:///ignored");

  EXPECT_EQ(reported(idx, kDefaultTenant, Kind::ToolsListChanged, {}), Ids{tools});
  EXPECT_EQ(reported(idx, kDefaultTenant, Kind::ToolsListChanged, "file:///other"), Ids{tools});
  EXPECT_EQ(reported(idx, kDefaultTenant, Kind::PromptsListChanged, {}), Ids{prompts});
  EXPECT_EQ(reported(idx, kDefaultTenant, Kind::ResourcesListChanged, {}), Ids{resources});
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///ignored"), Ids{updated});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "").empty());
}

TEST(SubscriptionIndex, RemoveDropsSubscriptionAndFreesItsKeys) {
  SubscriptionIndex idx;
  SubId a = idx.create();
  SubId b = idx.create();
  SubId c = idx.create();
  idx.add(a, kDefaultTenant, kUpdated, "file:///shared");
  idx.add(b, kDefaultTenant, kUpdated, "file:///shared");
  idx.add(a, kDefaultTenant, kUpdated, "file:///a/");
  idx.add(b, kDefaultTenant, Kind::ToolsListChanged, {});
  idx.add(c, T(7), kUpdated, "file:///c");
  EXPECT_EQ(idx.key_count(), 4u);
  EXPECT_EQ(idx.subscription_count(), 3u);

  idx.remove(a);
  EXPECT_EQ(idx.subscription_count(), 2u);
  EXPECT_EQ(idx.key_count(), 3u);  // "file:///a/" had only a
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///shared"), Ids{b});
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///a/x").empty());

  idx.remove(b);
  idx.remove(c);
  EXPECT_EQ(idx.subscription_count(), 0u);
  EXPECT_EQ(idx.key_count(), 0u);
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///shared").empty());
  EXPECT_TRUE(reported(idx, kDefaultTenant, Kind::ToolsListChanged, {}).empty());
}

TEST(SubscriptionIndex, RemoveKeyDropsOneKeyOfALiveSubscription) {
  SubscriptionIndex idx;
  SubId a = idx.create();
  SubId b = idx.create();
  idx.add(a, kDefaultTenant, kUpdated, "file:///one");
  idx.add(a, kDefaultTenant, kUpdated, "file:///shared");
  idx.add(a, kDefaultTenant, kUpdated, "file:///dir/");
  idx.add(a, kDefaultTenant, Kind::ToolsListChanged, {});
  idx.add(b, kDefaultTenant, kUpdated, "file:///shared");
  EXPECT_EQ(idx.key_count(), 4u);

  idx.remove_key(a, kDefaultTenant, kUpdated, "file:///shared");
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///shared"), Ids{b});
  EXPECT_EQ(idx.key_count(), 4u);  // b still holds it
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///one"), Ids{a});

  idx.remove_key(a, kDefaultTenant, kUpdated, "file:///dir/");
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///dir/x").empty());
  EXPECT_EQ(idx.key_count(), 3u);
  idx.remove_key(a, kDefaultTenant, Kind::ToolsListChanged, "file:///uri-ignored");
  EXPECT_TRUE(reported(idx, kDefaultTenant, Kind::ToolsListChanged, {}).empty());
  EXPECT_EQ(idx.key_count(), 2u);

  // Not held by a: no-op, even though b holds it or it exists under another tenant/kind.
  idx.remove_key(a, kDefaultTenant, kUpdated, "file:///shared");
  idx.remove_key(a, T(9), kUpdated, "file:///one");
  idx.remove_key(a, kDefaultTenant, kUpdated, "file:///nowhere");
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///shared"), Ids{b});
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///one"), Ids{a});
  EXPECT_EQ(idx.subscription_count(), 2u);

  // A removed subscription: no-op.
  idx.remove(b);
  idx.remove_key(b, kDefaultTenant, kUpdated, "file:///shared");
  EXPECT_EQ(idx.key_count(), 1u);
  idx.remove_key(a, kDefaultTenant, kUpdated, "file:///one");
  EXPECT_EQ(idx.key_count(), 0u);
  EXPECT_EQ(idx.subscription_count(), 1u);  // a lives on with no keys
}

TEST(SubscriptionIndex, SlotsAreDenseAndReusedWithANewGeneration) {
  SubscriptionIndex idx;
  SubId a = idx.create();
  SubId b = idx.create();
  SubId c = idx.create();
  EXPECT_EQ((std::set<std::uint32_t>{a.index, b.index, c.index}), (std::set<std::uint32_t>{0, 1, 2}));

  idx.add(b, kDefaultTenant, kUpdated, "file:///old");
  idx.remove(b);
  EXPECT_FALSE(idx.contains(b));
  SubId b2 = idx.create();
  EXPECT_EQ(b2.index, b.index);
  EXPECT_NE(b2, b) << "a reused slot must come with a new generation";
  // The reused slot starts with no keys.
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///old").empty());
  EXPECT_EQ(idx.key_count(), 0u);
  // The stale id names nothing: using it leaves the slot's new subscription alone.
  idx.add(b, kDefaultTenant, kUpdated, "file:///stale");
  EXPECT_TRUE(reported(idx, kDefaultTenant, kUpdated, "file:///stale").empty());
  idx.add(b2, kDefaultTenant, kUpdated, "file:///new");
  idx.remove_key(b, kDefaultTenant, kUpdated, "file:///new");
  idx.remove(b);
  EXPECT_TRUE(idx.contains(b2));
  EXPECT_EQ(reported(idx, kDefaultTenant, kUpdated, "file:///new"), Ids{b2});

  idx.remove(a);
  idx.remove(c);
  std::set<std::uint32_t> again{idx.create().index, idx.create().index};
  EXPECT_EQ(again, (std::set<std::uint32_t>{a.index, c.index}));
  EXPECT_EQ(idx.create().index, 3u);
  EXPECT_EQ(idx.subscription_count(), 4u);
}

// ---- property test: random churn against a naive model ----

struct Model {
  using Key = std::tuple<TenantId, Kind, std::string>;
  std::map<SubId, std::set<Key>> live;
  std::set<std::uint32_t> freed;  // slots
  std::map<Key, int> key_refs;
  std::uint32_t next_dense = 0;

  static bool key_matches(const Key& k, TenantId t, Kind kind, std::string_view v) {
    const auto& [kt, kk, ku] = k;
    if (kt != t || kk != kind) return false;
    if (kind != Kind::ResourceUpdated) return true;
    return ku == v || (!ku.empty() && ku.back() == '/' && v.substr(0, ku.size()) == ku);
  }
  std::vector<SubId> match(TenantId t, Kind kind, std::string_view v) const {
    std::vector<SubId> out;
    for (const auto& [id, keys] : live) {
      for (const Key& k : keys) {
        if (key_matches(k, t, kind, v)) {
          out.push_back(id);
          break;
        }
      }
    }
    return out;  // std::map iterates in id order: already sorted
  }
};

TEST(SubscriptionIndex, RandomChurnAgreesWithNaiveModel) {
  std::mt19937 rng(0x6d637066);  // fixed seed: failures reproduce
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };

  std::vector<std::string> sub_uris = {"file:///",    "file:///a",   "file:///a/", "file:///a/b", "file:///a/b/",
                                       "file:///a/b/c", "file:///b/", "file:///b/x", "mem://q/",    "mem://q/1"};
  for (int k = 0; k < 150; ++k) {
    sub_uris.push_back("file:///n/" + std::to_string(k));
    sub_uris.push_back("file:///n/" + std::to_string(k) + "/");
  }
  std::vector<std::string> event_uris = sub_uris;
  for (int k = 0; k < 150; k += 7) event_uris.push_back("file:///n/" + std::to_string(k) + "/leaf/deeper");
  event_uris.push_back("file:///a/b/c/d/e");
  event_uris.push_back("file:///zzz");
  const Kind kinds[] = {Kind::ResourceUpdated, Kind::ResourceUpdated, Kind::ResourceUpdated,
                        Kind::ResourcesListChanged, Kind::ToolsListChanged, Kind::PromptsListChanged};

  SubscriptionIndex idx;
  Model model;
  std::size_t matches_checked = 0, max_keys = 0;
  for (int op = 0; op < 10000; ++op) {
    std::size_t roll = pick(100);
    if (roll < 25 || model.live.empty()) {
      SubId id = idx.create();
      ASSERT_EQ(model.live.count(id), 0u) << "op " << op << ": create returned a live id";
      if (!model.freed.empty()) {
        ASSERT_EQ(model.freed.count(id.index), 1u) << "op " << op << ": a freed slot should be reused";
        model.freed.erase(id.index);
      } else {
        ASSERT_EQ(id.index, model.next_dense) << "op " << op;
        ++model.next_dense;
      }
      model.live[id];
    } else if (roll < 65) {
      auto it = std::next(model.live.begin(), static_cast<std::ptrdiff_t>(pick(model.live.size())));
      auto tenant = T(static_cast<std::uint32_t>(pick(3)));
      Kind kind = kinds[pick(std::size(kinds))];
      std::string uri = kind == Kind::ResourceUpdated ? sub_uris[pick(sub_uris.size())] : std::string();
      idx.add(it->first, tenant, kind, uri);
      if (it->second.insert({tenant, kind, uri}).second) ++model.key_refs[{tenant, kind, uri}];
    } else if (roll < 72) {
      // Drop one key: usually one the subscription holds, sometimes any key at all.
      auto it = std::next(model.live.begin(), static_cast<std::ptrdiff_t>(pick(model.live.size())));
      Model::Key key;
      if (!it->second.empty() && pick(4) != 0) {
        key = *std::next(it->second.begin(), static_cast<std::ptrdiff_t>(pick(it->second.size())));
      } else {
        Kind kind = kinds[pick(std::size(kinds))];
        key = {T(static_cast<std::uint32_t>(pick(3))), kind,
               kind == Kind::ResourceUpdated ? sub_uris[pick(sub_uris.size())] : std::string()};
      }
      idx.remove_key(it->first, std::get<0>(key), std::get<1>(key), std::get<2>(key));
      if (it->second.erase(key) && --model.key_refs[key] == 0) model.key_refs.erase(key);
    } else if (roll < 80) {
      auto it = std::next(model.live.begin(), static_cast<std::ptrdiff_t>(pick(model.live.size())));
      idx.remove(it->first);
      for (const auto& k : it->second) {
        if (--model.key_refs[k] == 0) model.key_refs.erase(k);
      }
      model.freed.insert(it->first.index);
      model.live.erase(it);
    } else {
      auto tenant = T(static_cast<std::uint32_t>(pick(3)));
      Kind kind = kinds[pick(std::size(kinds))];
      const std::string& uri = event_uris[pick(event_uris.size())];
      std::vector<SubId> got = reported(idx, tenant, kind, uri);
      std::size_t raw = got.size();
      got = sorted(std::move(got));
      ASSERT_EQ(std::adjacent_find(got.begin(), got.end()), got.end()) << "op " << op << ": duplicate report";
      ASSERT_EQ(raw, got.size());
      ASSERT_EQ(got, model.match(tenant, kind, uri)) << "op " << op << ": tenant " << tenant << " kind "
                                                     << int(kind) << " uri " << uri;
      ++matches_checked;
    }
    ASSERT_EQ(idx.subscription_count(), model.live.size()) << "op " << op;
    ASSERT_EQ(idx.key_count(), model.key_refs.size()) << "op " << op;
    max_keys = std::max(max_keys, model.key_refs.size());
  }
  EXPECT_GT(matches_checked, 1000u);
  EXPECT_GT(max_keys, 200u);  // enough keys that the map rehashed several times

  // Everything removed: no key survives.
  for (const auto& [id, keys] : model.live) idx.remove(id);
  EXPECT_EQ(idx.subscription_count(), 0u);
  EXPECT_EQ(idx.key_count(), 0u);
}

// The backplane's interest comes from key creation and erasure, not from every subscription.
struct RecordingListener : KeyListener {
  std::vector<std::string> events;
  void key_added(TenantId t, Kind k, std::string_view uri) override {
    events.push_back("+" + std::to_string(t.index) + ":" + std::to_string(int(k)) + ":" + std::string(uri));
  }
  void key_removed(TenantId t, Kind k, std::string_view uri) override {
    events.push_back("-" + std::to_string(t.index) + ":" + std::to_string(int(k)) + ":" + std::string(uri));
  }
};

TEST(SubscriptionIndex, KeyListenerHearsFirstAndLastSubscriptionOfEachKey) {
  SubscriptionIndex idx;
  RecordingListener l;
  idx.set_key_listener(&l);
  const int ru = int(Kind::ResourceUpdated), tl = int(Kind::ToolsListChanged);
  SubId a = idx.create(), b = idx.create();
  idx.add(a, kDefaultTenant, Kind::ResourceUpdated, "file:///p/");
  idx.add(b, kDefaultTenant, Kind::ResourceUpdated, "file:///p/");  // same key: nothing new
  idx.add(a, kDefaultTenant, Kind::ToolsListChanged, "ignored");
  idx.add(a, kDefaultTenant, Kind::ToolsListChanged, "");  // held already
  EXPECT_EQ(l.events,
            (std::vector<std::string>{"+0:" + std::to_string(ru) + ":file:///p/", "+0:" + std::to_string(tl) + ":"}));
  l.events.clear();
  idx.remove(a);  // the prefix key still has b
  EXPECT_EQ(l.events, (std::vector<std::string>{"-0:" + std::to_string(tl) + ":"}));
  l.events.clear();
  idx.remove_key(b, kDefaultTenant, Kind::ResourceUpdated, "file:///p/");
  EXPECT_EQ(l.events, (std::vector<std::string>{"-0:" + std::to_string(ru) + ":file:///p/"}));
}

}  // namespace
}  // namespace mcpfan

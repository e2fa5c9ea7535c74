#pragma once
/**
 * The subscription index of one worker loop: (tenant, kind, key) -> subscriptions, and for
 * each subscription the keys it holds, so removing a subscription costs O(its keys). A key is
 * a keyed kind's key (a resource URI, a task id: KindInfo::key_member); a list_changed kind
 * has one empty key per tenant.
 *
 * Matching (design §4): a task notification reaches the subscriptions to its task id only. A
 * resources/updated for URI V reaches a subscription to U when
 * V == U, or when U ends with '/' and V starts with U. Prefix keys live in the same map
 * flagged as prefixes; a match probes V itself plus each prefix of V that ends in '/', so
 * a publish costs O(segments of V) hash probes, never a scan over subscriptions. Each
 * subscription is reported at most once per match even when several of its keys match.
 *
 * Thread affinity: loop-affine. No locks; call only from the owning loop.
 */
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mcpfan/kind.h"
#include "mcpfan/slot_map.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

struct SubTag;
/** A subscription; generation-checked, so a stale id names nothing. */
using SubId = Handle<SubTag>;

/**
 * Told when a key gains its first subscription in an index, and when it loses its last: what
 * a node-wide interest table (the NATS backplane's) needs, at O(keys changed). `uri` is the
 * key's URI (a prefix key's ends with '/'; empty for list_changed kinds). Called on the
 * index's loop, synchronously; the listener must be thread-safe if indexes of several loops
 * share it, and must not call back into the index.
 */
class KeyListener {
 public:
  virtual void key_added(TenantId tenant, Kind kind, std::string_view uri) = 0;
  virtual void key_removed(TenantId tenant, Kind kind, std::string_view uri) = 0;

 protected:
  ~KeyListener() = default;
};

class SubscriptionIndex {
 public:
  SubscriptionIndex() = default;
  SubscriptionIndex(const SubscriptionIndex&) = delete;
  SubscriptionIndex& operator=(const SubscriptionIndex&) = delete;

  /** A new subscription with no keys. Slots are dense and reused after remove(), with a new generation. */
  [[nodiscard]] SubId create();
  /** True while `sub` names a live subscription. */
  [[nodiscard]] bool contains(SubId sub) const noexcept { return records_.contains(sub); }
  /**
   * Adds a key (`uri` is the key of a keyed kind; ignored for list_changed kinds). Adding a
   * key twice, or to a stale id, is a no-op.
   */
  void add(SubId sub, TenantId tenant, Kind kind, std::string_view uri);
  /** Drops one key of a subscription (no-op if it does not hold it, or the id is stale). */
  void remove_key(SubId sub, TenantId tenant, Kind kind, std::string_view uri);
  /** Drops the subscription and all its keys; empty keys are erased. No-op for a stale id. */
  void remove(SubId sub);

  /** Calls f(SubId) once for each subscription matching the event. f must not modify the index. */
  template <class F>
  void match(TenantId tenant, Kind kind, std::string_view uri, F&& f);

  /** Reports key creation and erasure from now on (null: nobody). The listener outlives the index's use of it. */
  void set_key_listener(KeyListener* l) noexcept { listener_ = l; }

  [[nodiscard]] std::size_t subscription_count() const noexcept { return records_.size(); }
  [[nodiscard]] std::size_t key_count() const noexcept { return map_.size(); }

 private:
  struct Key {
    TenantId tenant;
    Kind kind;
    bool prefix;
    std::string uri;
  };
  struct KeyView {
    TenantId tenant;
    Kind kind;
    bool prefix;
    std::string_view uri;
  };
  // Not noexcept on purpose: libstdc++ then caches each element's hash, so a probe does
  // not re-hash the URIs of a bucket's neighbours (measured: a miss 676 -> 417 ns).
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& k) const {
      std::size_t h = std::hash<std::string_view>{}(k.uri);
      std::size_t tenant = (std::size_t{k.tenant.gen} << 32) ^ k.tenant.index;
      return h ^ ((tenant << 9) ^ (std::size_t(k.kind) << 1) ^ std::size_t(k.prefix)) * 0x9E3779B97F4A7C15ull;
    }
    std::size_t operator()(const Key& k) const { return (*this)(KeyView{k.tenant, k.kind, k.prefix, k.uri}); }
  };
  struct KeyEq {
    using is_transparent = void;
    static KeyView v(const Key& k) noexcept { return {k.tenant, k.kind, k.prefix, k.uri}; }
    static KeyView v(const KeyView& k) noexcept { return k; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const noexcept {
      KeyView x = v(a), y = v(b);
      return x.tenant == y.tenant && x.kind == y.kind && x.prefix == y.prefix && x.uri == y.uri;
    }
  };
  struct Member {
    std::uint32_t sub;   // slot of a live subscription: the index owns it, so no generation is needed
    std::uint32_t slot;  // index into that subscription's keys_
  };
  using Map = std::unordered_map<Key, std::vector<Member>, KeyHash, KeyEq>;
  using Entry = Map::value_type;
  struct KeyRef {
    // A pointer to the element, not an iterator: a rehash invalidates iterators but never
    // moves elements.
    Entry* entry;
    std::uint32_t pos;  // index of this subscription in entry->second
  };
  struct Record {
    std::uint64_t stamp = 0;  // last match() that reported this subscription
    std::vector<KeyRef> keys;
  };

  template <class F>
  void visit(const KeyView& key, F& f);
  void drop(std::uint32_t sub, std::uint32_t slot);

  Map map_;
  SlotMap<Record, SubTag> records_;
  std::size_t prefix_keys_ = 0;
  std::uint64_t stamp_ = 0;
  KeyListener* listener_ = nullptr;
};

template <class F>
void SubscriptionIndex::visit(const KeyView& key, F& f) {
  auto it = map_.find(key);
  if (it == map_.end()) return;
  for (const Member& m : it->second) {
    Record& r = records_.at(m.sub);
    if (r.stamp == stamp_) continue;
    r.stamp = stamp_;
    f(records_.id_at(m.sub));
  }
}

template <class F>
void SubscriptionIndex::match(TenantId tenant, Kind kind, std::string_view uri, F&& f) {
  ++stamp_;
  const KindInfo& info = kind_info(kind);
  if (!info.keyed()) {
    visit(KeyView{tenant, kind, false, {}}, f);
    return;
  }
  visit(KeyView{tenant, kind, false, uri}, f);
  if (prefix_keys_ == 0 || !info.prefix_keys) return;
  for (std::size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '/') visit(KeyView{tenant, kind, true, uri.substr(0, i + 1)}, f);
  }
}

}  // namespace mcpfan

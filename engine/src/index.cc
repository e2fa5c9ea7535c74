#include "mcpfan/index.h"

namespace mcpfan {

SubId SubscriptionIndex::create() { return records_.emplace(); }

void SubscriptionIndex::add(SubId sub, TenantId tenant, Kind kind, std::string_view uri) {
  Record* r = records_.get(sub);
  if (!r) return;
  bool prefix = is_prefix_key(kind, uri);
  if (!kind_info(kind).keyed()) uri = {};
  auto found = map_.find(KeyView{tenant, kind, prefix, uri});
  Entry* e;
  if (found == map_.end()) {
    e = &*map_.emplace(Key{tenant, kind, prefix, std::string(uri)}, std::vector<Member>{}).first;
    if (prefix) ++prefix_keys_;
    if (listener_) listener_->key_added(tenant, kind, uri);
  } else {
    e = &*found;
    for (const KeyRef& k : r->keys) {
      if (k.entry == e) return;
    }
  }
  auto slot = static_cast<std::uint32_t>(r->keys.size());
  auto pos = static_cast<std::uint32_t>(e->second.size());
  e->second.push_back(Member{sub.index, slot});
  r->keys.push_back(KeyRef{e, pos});
}

void SubscriptionIndex::drop(std::uint32_t sub, std::uint32_t slot) {
  Record& r = records_.at(sub);
  KeyRef k = r.keys[slot];
  auto& members = k.entry->second;
  // Swap-remove from the key's member list, then repoint the moved member's back-reference.
  Member moved = members.back();
  members[k.pos] = moved;
  members.pop_back();
  if (k.pos < members.size()) records_.at(moved.sub).keys[moved.slot].pos = k.pos;
  if (members.empty()) {
    const Key& key = k.entry->first;
    if (key.prefix) --prefix_keys_;
    if (listener_) listener_->key_removed(key.tenant, key.kind, key.uri);
    map_.erase(map_.find(KeyView{key.tenant, key.kind, key.prefix, key.uri}));
  }
  // Same for the subscription's key list.
  KeyRef last = r.keys.back();
  r.keys[slot] = last;
  r.keys.pop_back();
  if (slot < r.keys.size()) last.entry->second[last.pos].slot = slot;
}

void SubscriptionIndex::remove_key(SubId sub, TenantId tenant, Kind kind, std::string_view uri) {
  Record* r = records_.get(sub);
  if (!r) return;
  bool prefix = is_prefix_key(kind, uri);
  if (!kind_info(kind).keyed()) uri = {};
  auto it = map_.find(KeyView{tenant, kind, prefix, uri});
  if (it == map_.end()) return;
  for (std::uint32_t i = 0; i < r->keys.size(); ++i) {
    if (r->keys[i].entry == &*it) {
      drop(sub.index, i);
      return;
    }
  }
}

void SubscriptionIndex::remove(SubId sub) {
  Record* r = records_.get(sub);
  if (!r) return;
  while (!r->keys.empty()) drop(sub.index, static_cast<std::uint32_t>(r->keys.size() - 1));
  records_.erase(sub);
}

}  // namespace mcpfan

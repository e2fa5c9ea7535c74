#include "mcpfan/local_interest.h"

#include <mutex>

namespace mcpfan {

void LocalInterest::append_key(std::string& out, TenantId tenant, Kind kind, std::string_view uri) {
  // Fixed-width binary head, then the URI: unambiguous without escaping.
  for (std::uint32_t v : {tenant.index, tenant.gen}) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  out.push_back(static_cast<char>(kind));
  if (kind_info(kind).keyed()) out.append(uri);
}

void LocalInterest::add(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) {
  std::string k;
  append_key(k, tenant, kind, uri);
  std::unique_lock lock(mu_);
  auto [it, fresh] = map_.try_emplace(std::move(k));
  Entry& e = it->second;
  if (fresh) {
    e.counts.assign(shards_, 0);
    e.shards = ShardSet(shards_);
    if (is_prefix_key(kind, uri)) ++prefix_keys_;
  }
  if (e.counts[shard]++ == 0) e.shards.set(shard);
}

void LocalInterest::remove(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) {
  std::string k;
  append_key(k, tenant, kind, uri);
  std::unique_lock lock(mu_);
  auto it = map_.find(std::string_view(k));
  if (it == map_.end() || it->second.counts[shard] == 0) return;
  Entry& e = it->second;
  if (--e.counts[shard] > 0) return;
  e.shards.reset(shard);
  if (e.shards.empty()) {  // no shard holds it any more
    if (is_prefix_key(kind, uri)) --prefix_keys_;
    map_.erase(it);
  }
}

void LocalInterest::probe(std::string_view k, ShardSet& out) const {
  auto it = map_.find(k);
  if (it != map_.end()) out.merge(it->second.shards);
}

void LocalInterest::shards_for(TenantId tenant, Kind kind, std::string_view uri, ShardSet& out) const {
  thread_local std::string k;
  k.clear();
  append_key(k, tenant, kind, uri);
  const std::string_view key = k;
  std::shared_lock lock(mu_);
  probe(key, out);
  if (!kind_info(kind).prefix_keys || prefix_keys_ == 0) return;
  // Each '/'-prefix of the URI is a prefix key that may hold it (the index's own rule); one
  // ending the URI is the exact key, probed already.
  const std::size_t head = key.size() - uri.size();
  for (std::size_t i = 0; i + 1 < uri.size(); ++i) {
    if (uri[i] == '/') probe(key.substr(0, head + i + 1), out);
  }
}

std::size_t LocalInterest::keys() const {
  std::shared_lock lock(mu_);
  return map_.size();
}

std::vector<LocalInterest::Key> LocalInterest::snapshot() const {
  std::vector<Key> out;
  std::shared_lock lock(mu_);
  out.reserve(map_.size());
  for (const auto& entry : map_) {
    const std::string& k = entry.first;
    if (entry.second.shards.empty()) continue;
    // append_key()'s layout: tenant index and generation (4 bytes each, little-endian), the kind, the URI.
    auto u32 = [&k](std::size_t at) {
      std::uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i) {
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(k[at + i])) << (8 * i);
      }
      return v;
    };
    out.push_back(Key{TenantId{u32(0), u32(4)}, static_cast<Kind>(k[8]), k.substr(9)});
  }
  return out;
}

}  // namespace mcpfan

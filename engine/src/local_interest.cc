#include "mcpfan/local_interest.h"

#include <mutex>

namespace mcpfan {

namespace {
bool is_prefix(Kind kind, std::string_view uri) { return kind == Kind::ResourceUpdated && !uri.empty() && uri.back() == '/'; }
}  // namespace

std::string LocalInterest::key(TenantId tenant, Kind kind, std::string_view uri) {
  // Fixed-width binary head, then the URI: unambiguous without escaping.
  std::string k(sizeof(std::uint32_t) * 2 + 1, '\0');
  auto put = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) k[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put(0, tenant.index);
  put(4, tenant.gen);
  k[8] = static_cast<char>(kind);
  if (kind == Kind::ResourceUpdated) k.append(uri);
  return k;
}

void LocalInterest::add(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) {
  std::string k = key(tenant, kind, uri);
  std::unique_lock lock(mu_);
  auto [it, fresh] = map_.try_emplace(std::move(k));
  Entry& e = it->second;
  if (fresh) {
    e.counts.assign(shards_, 0);
    e.shards = ShardSet(shards_);
    if (is_prefix(kind, uri)) ++prefix_keys_;
  }
  if (e.counts[shard]++ == 0) e.shards.set(shard);
}

void LocalInterest::remove(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) {
  std::string k = key(tenant, kind, uri);
  std::unique_lock lock(mu_);
  auto it = map_.find(k);
  if (it == map_.end() || it->second.counts[shard] == 0) return;
  Entry& e = it->second;
  if (--e.counts[shard] > 0) return;
  // Rebuild the set without this shard; erase the key once no shard holds it.
  e.shards.clear();
  bool any = false;
  for (std::size_t s = 0; s < shards_; ++s) {
    if (e.counts[s] > 0) {
      e.shards.set(s);
      any = true;
    }
  }
  if (!any) {
    if (is_prefix(kind, uri)) --prefix_keys_;
    map_.erase(it);
  }
}

void LocalInterest::probe(const std::string& k, ShardSet& out) const {
  auto it = map_.find(k);
  if (it != map_.end()) out.merge(it->second.shards);
}

void LocalInterest::shards_for(TenantId tenant, Kind kind, std::string_view uri, ShardSet& out) const {
  std::string k = key(tenant, kind, uri);
  std::shared_lock lock(mu_);
  probe(k, out);
  if (kind != Kind::ResourceUpdated || prefix_keys_ == 0) return;
  // Each '/'-prefix of the URI is a prefix key that may hold it (the index's own rule).
  const std::size_t head = k.size() - uri.size();
  for (std::size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] != '/') continue;
    std::string p = k.substr(0, head + i + 1);
    if (i + 1 == uri.size()) continue;  // the URI itself ends in '/': probed as the exact key
    probe(p, out);
  }
}

std::size_t LocalInterest::keys() const {
  std::shared_lock lock(mu_);
  return map_.size();
}

}  // namespace mcpfan

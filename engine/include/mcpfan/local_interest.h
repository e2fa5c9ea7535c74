#pragma once
/**
 * Which worker loops (shards) hold a subscription that a notification may match, so that a
 * publish is posted to, and wakes, only those: a targeted publish then costs the same with 1
 * or 8 workers instead of waking every loop (issue 11, item 3).
 *
 * Keys are the index's: (tenant, kind, uri), a prefix key's uri ending in '/'. Each shard's
 * index reports its keys' first and last subscription (KeyListener, through the Hub); a
 * notification for URI V may match in shard s when s holds the key V, or a prefix key that
 * V starts with (probed '/'-prefix by '/'-prefix, as the index matches). A shard named by
 * interest but holding no match only costs a wasted wake, never a missed delivery; a shard
 * holding a match is always named, because its key is added before the subscription can be
 * acknowledged and removed only after it is gone.
 *
 * reserve()/unreserve() name a shard ahead of a key it is about to get: a 2025 session's
 * resources/subscribe is answered before the owner loop adds the URI (the change travels in
 * that shard's inbox, ahead of any later publish), so the interest must exist first.
 *
 * Thread-safety: all methods are thread-safe (a reader-writer lock: publishes share it, key
 * changes take it alone; both are O(1) per key probed).
 */
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mcpfan/kind.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

/** A set of shard indexes. */
class ShardSet {
 public:
  explicit ShardSet(std::size_t shards = 0) : words_((shards + 63) / 64, 0) {}
  void set(std::size_t i) noexcept { words_[i / 64] |= std::uint64_t{1} << (i % 64); }
  [[nodiscard]] bool test(std::size_t i) const noexcept { return (words_[i / 64] >> (i % 64)) & 1; }
  [[nodiscard]] bool empty() const noexcept {
    for (auto w : words_) {
      if (w) return false;
    }
    return true;
  }
  void clear() noexcept {
    for (auto& w : words_) w = 0;
  }
  void merge(const ShardSet& o) noexcept {
    for (std::size_t i = 0; i < words_.size(); ++i) words_[i] |= o.words_[i];
  }

 private:
  std::vector<std::uint64_t> words_;
};

class LocalInterest {
 public:
  explicit LocalInterest(std::size_t shards) : shards_(shards) {}

  void add(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri);
  void remove(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri);
  void reserve(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) { add(shard, tenant, kind, uri); }
  void unreserve(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) { remove(shard, tenant, kind, uri); }

  /** Adds to `out` every shard that may hold a match for (tenant, kind, uri). */
  void shards_for(TenantId tenant, Kind kind, std::string_view uri, ShardSet& out) const;
  [[nodiscard]] std::size_t keys() const;

 private:
  struct Entry {
    std::vector<std::uint32_t> counts;  // per shard: keys + reservations
    ShardSet shards;                    // where counts > 0
  };
  static std::string key(TenantId tenant, Kind kind, std::string_view uri);
  void probe(const std::string& k, ShardSet& out) const;

  const std::size_t shards_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry> map_;
  std::size_t prefix_keys_ = 0;  // none: a resource update probes its exact key only
};

}  // namespace mcpfan

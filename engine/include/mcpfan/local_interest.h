#pragma once
/**
 * Which worker loops (shards) hold a subscription that a notification may match, so that a
 * publish is posted to, and wakes, only those: a targeted publish then costs the same with 1
 * or 8 workers instead of waking every loop (docs/performance.md "Interest-aware dispatch").
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

/**
 * A set of shard indexes. Up to 64 shards it lives in one word, with no allocation: a
 * publish builds one.
 */
class ShardSet {
 public:
  explicit ShardSet(std::size_t shards = 0) : more_(shards > 64 ? (shards - 1) / 64 : 0, 0) {}
  void set(std::size_t i) noexcept { word(i) |= bit(i); }
  void reset(std::size_t i) noexcept { word(i) &= ~bit(i); }
  [[nodiscard]] bool test(std::size_t i) const noexcept { return (const_cast<ShardSet*>(this)->word(i) & bit(i)) != 0; }
  [[nodiscard]] bool empty() const noexcept {
    if (first_) return false;
    for (auto w : more_) {
      if (w) return false;
    }
    return true;
  }
  void merge(const ShardSet& o) noexcept {
    first_ |= o.first_;
    for (std::size_t i = 0; i < more_.size(); ++i) more_[i] |= o.more_[i];
  }

 private:
  static std::uint64_t bit(std::size_t i) noexcept { return std::uint64_t{1} << (i % 64); }
  std::uint64_t& word(std::size_t i) noexcept { return i < 64 ? first_ : more_[i / 64 - 1]; }
  std::uint64_t first_ = 0;
  std::vector<std::uint64_t> more_;  // shards 64 and up
};

class LocalInterest {
 public:
  explicit LocalInterest(std::size_t shards) : shards_(shards) {}

  void add(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri);
  void remove(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri);
  void reserve(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) { add(shard, tenant, kind, uri); }
  void unreserve(std::size_t shard, TenantId tenant, Kind kind, std::string_view uri) {
    remove(shard, tenant, kind, uri);
  }

  /** Adds to `out` every shard that may hold a match for (tenant, kind, uri). */
  void shards_for(TenantId tenant, Kind kind, std::string_view uri, ShardSet& out) const;
  [[nodiscard]] std::size_t keys() const;

  /** One key held by some shard. */
  struct Key {
    TenantId tenant;
    Kind kind;
    std::string uri;  // empty for a flagged kind
  };
  /** Every key held now (a copy: the lock is not held while the caller uses it). */
  [[nodiscard]] std::vector<Key> snapshot() const;

 private:
  struct Entry {
    std::vector<std::uint32_t> counts;  // per shard: keys + reservations
    ShardSet shards;                    // where counts > 0: what a publish reads
  };
  // Lookups by string_view: a publish builds its key once in a reused buffer and probes its
  // '/'-prefixes as views of it, with no allocation.
  struct ViewHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  static void append_key(std::string& out, TenantId tenant, Kind kind, std::string_view uri);
  void probe(std::string_view k, ShardSet& out) const;

  const std::size_t shards_;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, Entry, ViewHash, std::equal_to<>> map_;
  std::size_t prefix_keys_ = 0;  // none: a resource update probes its exact key only
};

}  // namespace mcpfan

#pragma once
/**
 * The engine's entry point: a set of shards (one per worker loop) and the thread-safe
 * publish operation that hands each shard one reference to an encoded payload.
 *
 * Embedding: create a Hub, give each shard to a loop (set_waker so a post wakes it; the
 * loop calls drain() and flush()), attach streams with Shard::open_stream/subscribe on
 * their own loop, and call publish() from any thread.
 *
 * Thread affinity: publish(), tenants() and published() are thread-safe; shard(i) returns
 * a shard whose loop-affine methods belong to the loop that owns it.
 */
#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

#include "mcpfan/debouncer.h"
#include "mcpfan/payload.h"
#include "mcpfan/shard.h"
#include "mcpfan/tenants.h"

namespace mcpfan {

class Hub {
 public:
  explicit Hub(std::size_t shards, ShardOptions options = {});
  Hub(const Hub&) = delete;
  Hub& operator=(const Hub&) = delete;

  [[nodiscard]] std::size_t shard_count() const noexcept { return shards_.size(); }
  [[nodiscard]] Shard& shard(std::size_t i) noexcept { return *shards_[i]; }
  [[nodiscard]] TenantRegistry& tenants() noexcept { return tenants_; }

  /**
   * Sets a minimum interval between fan-outs of one (tenant, method, uri) (0 = off, the
   * default). Call before publishing starts.
   */
  void set_debounce(std::chrono::milliseconds interval);
  /** The debouncer, if set_debounce() turned one on (for its counters). */
  [[nodiscard]] const Debouncer* debouncer() const noexcept { return debouncer_.get(); }

  /** Fans one payload out to every shard: one queue push and one wake-up per shard. */
  void publish(const PayloadRef& payload);
  /** Same for several payloads, in order, with one wake-up per shard. */
  void publish(const std::vector<PayloadRef>& payloads);
  [[nodiscard]] std::uint64_t published() const noexcept { return published_.load(std::memory_order_relaxed); }

 private:
  void fan_out(const std::vector<PayloadRef>& payloads);

  TenantRegistry tenants_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<std::uint64_t> published_{0};
  std::unique_ptr<Debouncer> debouncer_;  // declared last: its thread stops first
};

}  // namespace mcpfan

#pragma once
/**
 * The newest state of each task this node has seen (the Tasks extension, SEP-2663), so that a
 * listen naming a task gets its current state right after the acknowledgement: a client gets
 * `CreateTaskResult`, then opens its listen, and the task may have moved or finished between
 * the two (docs/protocol.md "Task status").
 *
 * Keyed by (tenant name, task id): a tenant with no client here yet still has its tasks kept,
 * since the late listener is exactly the client that is not connected yet. Each state is the
 * encoded notification itself (a PayloadRef), replayed with Shard::replay().
 *
 * Bounds, each counted: states expire `ttlMs` after they were kept (the task's own, at most
 * `max_ttl_ms`; `ttlMs: null` keeps it `max_ttl_ms`); a tenant keeps at most `max_per_tenant`
 * tasks (a new task past that is not kept: counted `refused_tenant_full`); all tenants together
 * keep at most `max_tasks` tasks and `max_bytes` of encoded states (the state that expires
 * first is dropped for a new one: counted `evicted`). A newer state of a kept task replaces the
 * older one whatever the bounds.
 *
 * Thread-safety: every method is thread-safe (one mutex; a put or a find is a hash lookup,
 * plus the expiries due). Lifetime: owned by the Hub; payloads it returns stay valid while
 * referenced.
 */
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mcpfan/payload.h"

namespace mcpfan {

struct TaskStateLimits {
  std::size_t max_tasks = 100000;
  std::size_t max_per_tenant = 10000;
  std::size_t max_bytes = 256u << 20;
  std::uint64_t max_ttl_ms = 3600000;  // one hour; also the life of a state whose ttlMs is null
};

/** One task state to keep: what PublishDecoder gives for each notifications/tasks it accepts. */
struct TaskState {
  std::string tenant;    // the tenant's name
  PayloadRef payload;    // the notification; payload->uri() is the task id
  std::optional<std::uint64_t> ttl_ms;  // the task's ttlMs; nullopt: null (unlimited)
  bool terminal = false;  // completed, cancelled or failed
};

class TaskStates {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TaskStates(TaskStateLimits limits = {}) : limits_(limits) {}
  TaskStates(const TaskStates&) = delete;
  TaskStates& operator=(const TaskStates&) = delete;

  /** Keeps `state` as its task's newest, subject to the bounds above. */
  void put(TaskState state, Clock::time_point now = Clock::now());
  /** Drops the task's state if it is still `payload` (a publish refused after put()). */
  void forget(std::string_view tenant, const Payload* payload);
  /** The newest state of the task, or null: none kept, or it expired. */
  [[nodiscard]] PayloadRef find(std::string_view tenant, std::string_view task_id,
                                Clock::time_point now = Clock::now());
  /** New bounds (a reload); what is kept already stays until it expires or is replaced. */
  void set_limits(const TaskStateLimits& limits);

  struct Stats {
    std::size_t tasks = 0;   // kept now
    std::size_t bytes = 0;   // their encoded size
    std::uint64_t stored = 0, replaced = 0, expired = 0, evicted = 0, refused_tenant_full = 0, refused_too_big = 0;
  };
  [[nodiscard]] Stats stats();

 private:
  struct Entry {
    PayloadRef payload;
    Clock::time_point expires;
    std::uint64_t version = 0;  // which heap item is this entry's current expiry
    std::size_t bytes = 0;
    std::size_t tenant_len = 0;
  };
  struct Due {
    Clock::time_point at;
    std::uint64_t version;
    std::string key;
    bool operator>(const Due& o) const noexcept { return at > o.at; }
  };
  static std::string key_of(std::string_view tenant, std::string_view task_id);
  void expire(Clock::time_point now);  // under mu_
  void erase(std::unordered_map<std::string, Entry>::iterator it);  // under mu_
  bool evict_one();  // under mu_: the entry that expires first; false when none is left

  std::mutex mu_;
  TaskStateLimits limits_;
  std::unordered_map<std::string, Entry> map_;             // tenant '\0' task id -> its newest state
  std::unordered_map<std::string, std::size_t> per_tenant_;  // tenant -> tasks kept
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;  // stale items are skipped
  std::uint64_t next_version_ = 0;
  std::size_t bytes_ = 0;
  Stats counts_;
};

}  // namespace mcpfan

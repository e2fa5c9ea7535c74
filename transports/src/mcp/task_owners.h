#pragma once
// Who created each task mcpfan polls on the upstream's behalf (poll-to-push, docs/protocol.md
// "Poll-to-push"): a task belongs to its creator's authorization context (SEP-2663, "Auth
// binding"), so a listen may watch it only from the same tenant and the same principal (the
// token's `sub`; empty for a token without one, or without client auth). The listen admission
// (ClientCore::admit_listen) leaves the task ids of other principals out of what it agrees to:
// the acknowledgement lists only the ids agreed, and the listen's filter never holds the others.
//
// Keyed by (tenant name, task id). An owner is kept until the task's TTL (at most `max_ttl_ms`),
// past the end of polling, because the task's last state stays in TaskStates for late
// listeners as long. Bounded: at most `max_tasks` owners; a new task past it is not claimed
// (and so not polled), counted in `refused_full`. Expired owners are dropped as time passes.
//
// Thread-safety: every method is thread-safe (one mutex; a claim or a check is a hash lookup
// plus the expiries due). Lifetime: owned by the server's state; outlives every worker.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mcpfan::detail {

class TaskOwners {
 public:
  using Clock = std::chrono::steady_clock;

  explicit TaskOwners(std::size_t max_tasks = 10000) : max_(max_tasks) {}
  TaskOwners(const TaskOwners&) = delete;
  TaskOwners& operator=(const TaskOwners&) = delete;

  enum class Claim : std::uint8_t {
    Claimed,  // recorded (new, or the same principal's again: its expiry renewed)
    Taken,    // another principal owns this task id in this tenant: not recorded
    Full,     // `max_tasks` owners are kept: not recorded
  };
  /** Records `principal` as the owner of the task for `ttl` from `now`. */
  [[nodiscard]] Claim claim(std::string_view tenant, std::string_view task_id, std::string_view principal,
                            std::chrono::milliseconds ttl, Clock::time_point now = Clock::now());
  /** Whether `principal` may watch the task: no owner is recorded, or it is the owner. A refusal is counted. */
  [[nodiscard]] bool may_watch(std::string_view tenant, std::string_view task_id, std::string_view principal,
                               Clock::time_point now = Clock::now());
  /** New bound (a restart's; not reloadable). */
  void set_max(std::size_t max_tasks);

  struct Stats {
    std::size_t owners = 0;          // kept now
    std::uint64_t refused_full = 0;  // claims refused: the table was full
    std::uint64_t withheld = 0;      // task ids left out of a listen: another principal's task
  };
  [[nodiscard]] Stats stats();

 private:
  struct Entry {
    std::string principal;
    Clock::time_point expires;
    std::uint64_t version = 0;
  };
  struct Due {
    Clock::time_point at;
    std::uint64_t version;
    std::string key;
    bool operator>(const Due& o) const noexcept { return at > o.at; }
  };
  static std::string key_of(std::string_view tenant, std::string_view task_id);
  void expire(Clock::time_point now);  // under mu_

  std::mutex mu_;
  std::size_t max_;
  std::unordered_map<std::string, Entry> map_;                      // tenant '\0' task id -> owner
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;  // stale items (older versions) are skipped
  std::uint64_t next_version_ = 0;
  Stats counts_;
};

}  // namespace mcpfan::detail

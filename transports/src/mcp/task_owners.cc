#include "mcp/task_owners.h"

namespace mcpfan::detail {

std::string TaskOwners::key_of(std::string_view tenant, std::string_view task_id) {
  std::string k;
  k.reserve(tenant.size() + 1 + task_id.size());
  k += tenant;
  k += '\0';
  k += task_id;
  return k;
}

void TaskOwners::expire(Clock::time_point now) {
  while (!due_.empty() && due_.top().at <= now) {
    auto it = map_.find(due_.top().key);
    if (it != map_.end() && it->second.version == due_.top().version) map_.erase(it);
    due_.pop();
  }
  // Stale heap items (renewed owners) are bounded by the renewals since: drop them when they
  // outnumber the owners, so the heap stays within a small multiple of the table.
  if (due_.size() > 2 * map_.size() + 64) {
    std::priority_queue<Due, std::vector<Due>, std::greater<>> fresh;
    for (auto& [k, e] : map_) fresh.push(Due{e.expires, e.version, k});
    due_.swap(fresh);
  }
}

TaskOwners::Claim TaskOwners::claim(std::string_view tenant, std::string_view task_id, std::string_view principal,
                                    std::chrono::milliseconds ttl, Clock::time_point now) {
  std::lock_guard lock(mu_);
  expire(now);
  std::string key = key_of(tenant, task_id);
  auto it = map_.find(key);
  if (it != map_.end() && it->second.principal != principal) return Claim::Taken;
  if (it == map_.end()) {
    if (map_.size() >= max_) {
      ++counts_.refused_full;
      return Claim::Full;
    }
    it = map_.emplace(key, Entry{std::string(principal), {}, 0}).first;
  }
  it->second.expires = now + ttl;
  it->second.version = ++next_version_;
  due_.push(Due{it->second.expires, it->second.version, std::move(key)});
  return Claim::Claimed;
}

bool TaskOwners::may_watch(std::string_view tenant, std::string_view task_id, std::string_view principal,
                           Clock::time_point now) {
  std::lock_guard lock(mu_);
  expire(now);
  if (map_.empty()) return true;
  auto it = map_.find(key_of(tenant, task_id));
  if (it == map_.end() || it->second.principal == principal) return true;
  ++counts_.withheld;
  return false;
}

void TaskOwners::set_max(std::size_t max_tasks) {
  std::lock_guard lock(mu_);
  max_ = max_tasks;
}

TaskOwners::Stats TaskOwners::stats() {
  std::lock_guard lock(mu_);
  expire(Clock::now());
  Stats s = counts_;
  s.owners = map_.size();
  return s;
}

}  // namespace mcpfan::detail

#include "mcpfan/task_states.h"

#include <algorithm>

namespace mcpfan {

std::string TaskStates::key_of(std::string_view tenant, std::string_view task_id) {
  // Tenant names have no NUL (1..256 bytes of a JSON string, tenants.h); the task id may.
  std::string k;
  k.reserve(tenant.size() + 1 + task_id.size());
  k.append(tenant);
  k.push_back('\0');
  k.append(task_id);
  return k;
}

void TaskStates::erase(std::unordered_map<std::string, Entry>::iterator it) {
  bytes_ -= it->second.bytes;
  auto t = per_tenant_.find(it->first.substr(0, it->second.tenant_len));
  if (t != per_tenant_.end() && --t->second == 0) per_tenant_.erase(t);
  map_.erase(it);
}

void TaskStates::expire(Clock::time_point now) {
  while (!due_.empty() && due_.top().at <= now) {
    auto it = map_.find(due_.top().key);
    if (it != map_.end() && it->second.version == due_.top().version) {
      erase(it);
      ++counts_.expired;
    }
    due_.pop();
  }
  // Replaced states leave their old expiry behind: rebuilt when those outnumber the live ones.
  if (due_.size() > 2 * map_.size() + 64) {
    std::vector<Due> live;
    live.reserve(map_.size());
    for (const auto& [key, e] : map_) live.push_back(Due{e.expires, e.version, key});
    due_ = decltype(due_)(std::greater<>(), std::move(live));
  }
}

bool TaskStates::evict_one() {
  while (!due_.empty()) {
    auto it = map_.find(due_.top().key);
    const bool live = it != map_.end() && it->second.version == due_.top().version;
    due_.pop();
    if (live) {
      erase(it);
      ++counts_.evicted;
      return true;
    }
  }
  return false;
}

void TaskStates::put(TaskState state, Clock::time_point now) {
  if (!state.payload) return;
  const std::string_view task_id = state.payload->uri();
  // Both encodings the payload holds (the frame and plain()), so the bound is on what is held.
  const std::size_t bytes = state.payload->frame_size(Framing::Sse) + state.payload->plain(Framing::Sse).size() +
                            task_id.size() + state.tenant.size();
  std::lock_guard lock(mu_);
  expire(now);
  if (limits_.max_tasks == 0) return;  // --task-states-max 0: keeping states is off
  if (bytes > limits_.max_bytes) {
    ++counts_.refused_too_big;
    return;
  }
  const std::uint64_t ttl = std::min(state.ttl_ms.value_or(limits_.max_ttl_ms), limits_.max_ttl_ms);
  const Clock::time_point expires = now + std::chrono::milliseconds(ttl);
  std::string key = key_of(state.tenant, task_id);
  auto it = map_.find(key);
  if (it != map_.end()) {
    bytes_ -= it->second.bytes;
    ++counts_.replaced;
  } else {
    std::size_t& of_tenant = per_tenant_[state.tenant];
    if (of_tenant >= limits_.max_per_tenant) {
      if (of_tenant == 0) per_tenant_.erase(state.tenant);
      ++counts_.refused_tenant_full;
      return;
    }
    while (map_.size() >= limits_.max_tasks && evict_one()) {
    }
    ++per_tenant_[state.tenant];  // the reference above may be gone with an evicted tenant
    it = map_.emplace(key, Entry{}).first;
    it->second.tenant_len = state.tenant.size();
    ++counts_.stored;
  }
  while (bytes_ + bytes > limits_.max_bytes) {
    // Never the entry being written: it is taken out of the expiry order first.
    it->second.version = ++next_version_;
    if (!evict_one()) break;
  }
  Entry& e = it->second;
  e.payload = std::move(state.payload);
  e.expires = expires;
  e.version = ++next_version_;
  e.bytes = bytes;
  bytes_ += bytes;
  due_.push(Due{expires, e.version, std::move(key)});
}

PayloadRef TaskStates::find(std::string_view tenant, std::string_view task_id, Clock::time_point now) {
  std::lock_guard lock(mu_);
  expire(now);
  auto it = map_.find(key_of(tenant, task_id));
  return it == map_.end() ? PayloadRef() : it->second.payload;
}

void TaskStates::forget(std::string_view tenant, const Payload* payload) {
  if (!payload) return;
  std::lock_guard lock(mu_);
  auto it = map_.find(key_of(tenant, payload->uri()));
  if (it != map_.end() && it->second.payload.get() == payload) erase(it);
}

void TaskStates::set_limits(const TaskStateLimits& limits) {
  std::lock_guard lock(mu_);
  limits_ = limits;
}

TaskStates::Stats TaskStates::stats() {
  std::lock_guard lock(mu_);
  Stats s = counts_;
  s.tasks = map_.size();
  s.bytes = bytes_;
  return s;
}

}  // namespace mcpfan

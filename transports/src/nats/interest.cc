#include "nats/interest.h"

namespace mcpfan::detail::nats {

bool InterestTable::add(std::string_view subject) {
  std::lock_guard lock(mu_);
  auto it = map_.find(std::string(subject));
  if (it == map_.end()) {
    if (map_.size() >= max_subjects_) {
      ++refused_;
      return false;
    }
    it = map_.emplace(std::string(subject), Entry{}).first;
  }
  Entry& e = it->second;
  if (e.refs++ > 0) return true;
  if (e.subscribed) {  // lingering: keep the subscription, forget the UNSUB (its queue entry goes stale)
    e.unsub_at = 0;
    --lingering_;
  } else if (!e.sub_queued) {
    e.sub_queued = true;
    subs_.push_back(it->first);
  }
  return true;
}

void InterestTable::remove(std::string_view subject, std::uint64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = map_.find(std::string(subject));
  if (it == map_.end() || it->second.refs == 0) return;
  Entry& e = it->second;
  if (--e.refs > 0) return;
  if (e.subscribed) {
    e.unsub_at = now_ms + linger_ms_;
    ++lingering_;
    if (!e.unsub_queued) {
      e.unsub_queued = true;
      unsubs_.emplace_back(e.unsub_at, it->first);
    }
  } else {
    maybe_erase(it);  // its SUB was never sent: nothing to undo (the queued one goes stale)
  }
}

void InterestTable::maybe_erase(std::unordered_map<std::string, Entry>::iterator it) {
  const Entry& e = it->second;
  if (e.refs == 0 && !e.subscribed && !e.sub_queued && !e.unsub_queued) map_.erase(it);
}

std::vector<InterestTable::Op> InterestTable::take(std::uint64_t now_ms, std::size_t max_ops) {
  std::lock_guard lock(mu_);
  std::vector<Op> ops;
  while (!subs_.empty() && ops.size() < max_ops) {
    std::string subject = std::move(subs_.front());
    subs_.pop_front();
    auto it = map_.find(subject);
    if (it == map_.end() || !it->second.sub_queued) continue;
    Entry& e = it->second;
    e.sub_queued = false;
    if (e.refs == 0) {  // added and removed before this batch: nothing to send
      maybe_erase(it);
      continue;
    }
    e.subscribed = true;
    ++sub_ops_;
    ops.push_back(Op{true, std::move(subject)});
  }
  while (!unsubs_.empty() && unsubs_.front().first <= now_ms && ops.size() < max_ops) {
    std::string subject = std::move(unsubs_.front().second);
    unsubs_.pop_front();
    auto it = map_.find(subject);
    if (it == map_.end()) continue;
    Entry& e = it->second;
    e.unsub_queued = false;
    if (e.refs > 0 || !e.subscribed) {  // it came back within the linger: keep the subscription
      maybe_erase(it);
      continue;
    }
    if (e.unsub_at > now_ms) {  // it came back and went again since: wait for the later deadline
      e.unsub_queued = true;
      unsubs_.emplace_back(e.unsub_at, std::move(subject));
      continue;
    }
    e.subscribed = false;
    --lingering_;
    ++unsub_ops_;
    maybe_erase(it);
    ops.push_back(Op{false, std::move(subject)});
  }
  return ops;
}

std::vector<std::string> InterestTable::referenced() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [subject, e] : map_) {
    if (e.refs > 0) out.push_back(subject);
  }
  return out;
}

InterestTable::Stats InterestTable::stats() const {
  std::lock_guard lock(mu_);
  return Stats{map_.size(), lingering_, sub_ops_, unsub_ops_, refused_};
}

}  // namespace mcpfan::detail::nats

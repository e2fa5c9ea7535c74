#include "nats/interest.h"

#include <algorithm>

namespace mcpfan::detail::nats {

namespace {
std::string wildcard_of(std::string_view scope) {
  std::string w(scope);
  w += ".>";
  return w;
}
}  // namespace

bool InterestTable::add(std::string_view subject, std::string_view scope) {
  std::lock_guard lock(mu_);
  auto compacted = [&] {
    if (scope.empty()) return false;
    auto t = tenants_.find(std::string(scope));
    return t != tenants_.end() && t->second.compacted;
  };
  if (compacted()) return add_locked(wildcard_of(scope), scope, 1);
  if (add_locked(subject, scope, 1)) return true;
  // Full: fold the tenant with the most subjects into one, then try again (it may have been
  // this subject's own tenant).
  if (compact_largest()) {
    if (compacted()) return add_locked(wildcard_of(scope), scope, 1);
    if (add_locked(subject, scope, 1)) return true;
  }
  ++refused_;
  return false;
}

bool InterestTable::add_locked(std::string_view subject, std::string_view scope, std::uint32_t refs) {
  auto it = map_.find(std::string(subject));
  if (it == map_.end()) {
    if (map_.size() - folding_ >= max_subjects_) return false;
    it = map_.emplace(std::string(subject), Entry{}).first;
    if (!scope.empty()) {
      auto [ti, fresh] = tenants_.try_emplace(std::string(scope));
      if (fresh) ti->second.scope = ti->first;
      ++ti->second.subjects;
      it->second.tenant = &ti->second;
    }
  }
  Entry& e = it->second;
  const bool was_referenced = e.refs > 0;
  e.refs += refs;
  if (was_referenced || refs == 0) return true;
  if (e.subscribed) {  // lingering: keep the subscription, forget the UNSUB (its queue entry goes stale)
    e.unsub_at = 0;
    --lingering_;
  } else if (!e.sub_queued) {
    e.sub_queued = true;
    subs_.push_back(it->first);
  }
  return true;
}

bool InterestTable::compact_largest() {
  std::string scope;
  Tenant* biggest = nullptr;
  for (auto& [name, t] : tenants_) {
    if (!t.compacted && t.subjects >= 2 && (!biggest || t.subjects > biggest->subjects)) {
      biggest = &t;
      scope = name;
    }
  }
  if (!biggest) return false;
  // O(subjects): rare (only at the bound), and it frees all but one of the tenant's subjects.
  std::uint32_t refs = 0;
  for (auto it = map_.begin(); it != map_.end();) {
    Entry& e = it->second;
    if (e.tenant != biggest) {
      ++it;
      continue;
    }
    refs += e.refs;
    --biggest->subjects;
    e.tenant = nullptr;
    if (!e.subscribed) {  // its SUB was never sent: nothing to undo (the queued one goes stale)
      it = map_.erase(it);
      continue;
    }
    // Subscribed at the server: UNSUB at the next batch, after the wildcard's SUB (take()
    // sends every queued SUB before any UNSUB), so nothing falls between the two.
    if (e.refs == 0) --lingering_;
    e.refs = 0;
    e.folded = true;
    e.unsub_at = 0;
    ++folding_;
    e.unsub_queued = true;
    unsubs_.emplace_front(0, it->first);
    ++it;
  }
  ++compactions_;
  if (refs == 0) {  // nothing referenced: its subjects were only lingering, and are gone
    if (biggest->subjects == 0) tenants_.erase(scope);
    return true;
  }
  biggest->compacted = true;
  ++compacted_;
  // The wildcard may pass the bound by itself for a moment: it replaces at least two subjects.
  const std::string wildcard = wildcard_of(scope);
  auto [it, fresh] = map_.try_emplace(wildcard);
  (void)fresh;
  Entry& w = it->second;
  w.tenant = biggest;
  w.wildcard = true;
  ++biggest->subjects;
  w.refs = refs;
  w.sub_queued = true;
  subs_.push_back(wildcard);
  return true;
}

void InterestTable::remove(std::string_view subject, std::uint64_t now_ms, std::string_view scope) {
  std::lock_guard lock(mu_);
  if (!scope.empty()) {
    auto t = tenants_.find(std::string(scope));
    if (t != tenants_.end() && t->second.compacted) {
      remove_locked(wildcard_of(scope), now_ms);
      return;
    }
  }
  remove_locked(subject, now_ms);
}

void InterestTable::remove_locked(std::string_view subject, std::uint64_t now_ms) {
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

void InterestTable::maybe_erase(Map::iterator it) {
  const Entry& e = it->second;
  if (e.refs != 0 || e.subscribed || e.sub_queued || e.unsub_queued) return;
  if (Tenant* t = e.tenant) {
    --t->subjects;
    if (e.wildcard && t->compacted) {  // the compacted tenant's last reference has gone: itself again
      t->compacted = false;
      --compacted_;
    }
    if (t->subjects == 0 && !t->compacted) tenants_.erase(std::string(t->scope));
  }
  map_.erase(it);
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
  // UNSUBs only once every queued SUB is out: a compacted tenant's wildcard goes first.
  while (subs_.empty() && !unsubs_.empty() && unsubs_.front().first <= now_ms && ops.size() < max_ops) {
    std::string subject = std::move(unsubs_.front().second);
    unsubs_.pop_front();
    auto it = map_.find(subject);
    if (it == map_.end()) continue;
    Entry& e = it->second;
    e.unsub_queued = false;
    if (e.folded) {
      --folding_;
      ++unsub_ops_;
      map_.erase(it);  // it left its tenant when it was folded
      ops.push_back(Op{false, std::move(subject)});
      continue;
    }
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
  return Stats{map_.size() - folding_, lingering_, sub_ops_, unsub_ops_, refused_, compacted_, compactions_};
}

}  // namespace mcpfan::detail::nats

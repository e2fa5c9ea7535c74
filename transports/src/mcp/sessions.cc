#include "mcp/sessions.h"

#include <sys/random.h>

#include <cstdio>

namespace mcpfan::detail {

namespace {
void random_bytes(unsigned char* bytes, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::getrandom(bytes + got, n - got, 0);
    if (r > 0) got += static_cast<std::size_t>(r);
  }
}

std::string random_id() {
  unsigned char bytes[16];
  random_bytes(bytes, sizeof bytes);
  char hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return std::string(hex, 32);
}
std::uint32_t random_tag() {
  unsigned char b[4];
  random_bytes(b, sizeof b);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
}
}  // namespace

std::string SessionTap::id_line(std::uint32_t tag, std::uint64_t seq, std::string_view upstream_id) {
  std::string line;
  line.reserve(36 + upstream_id.size());  // "id: " + at most 29 + "\n": one allocation
  line += "id: ";
  line += format_cursor(Cursor{tag, seq});
  if (!upstream_id.empty()) {
    line += '~';
    line += upstream_id;
  }
  line += '\n';
  return line;
}

std::optional<std::string> SessionTap::record(const PayloadRef& payload) {
  std::size_t evicted = 0;
  std::optional<std::string> line;
  bool live;
  {
    std::lock_guard lock(s_->mu);
    live = epoch_ != 0 && s_->live_epoch == epoch_;
    std::optional<std::uint64_t> seq = s_->journal.record(payload, live, evicted);
    if (seq) line = id_line(s_->journal.tag(), *seq, s_->upstream_event_id);
  }
  if (evicted) s_->counters.evictions.fetch_add(evicted, std::memory_order_relaxed);
  if (!live) s_->counters.journaled.fetch_add(1, std::memory_order_relaxed);
  return line;
}

SessionRegistry::~SessionRegistry() {
  std::lock_guard lock(mu_);
  for (auto& [id, s] : sessions_) {
    s->ended.store(true);
    forget_idle(*s);
  }
}

std::shared_ptr<Session> SessionRegistry::create(TenantId tenant, std::string version, std::uint64_t now_ms,
                                                 TenantRef ref, StreamUsage usage, std::optional<Limit>& refused,
                                                 std::string id) {
  auto s =
      std::make_shared<Session>(id.empty() ? random_id() : std::move(id), tenant, std::move(version), limits_,
                                max_uris_, std::move(ref), std::move(usage), counters_, random_tag(), replay_bytes_);
  std::lock_guard lock(mu_);
  if (idle_ >= max_idle_) {
    limits_.hit(Limit::IdleSessions, tenant);
    refused = Limit::IdleSessions;
    return nullptr;
  }
  if (!limits_.acquire(tenant, Resource::IdleSessions)) {
    refused = limits_.refusal(tenant, Resource::IdleSessions);
    return nullptr;
  }
  bool inserted;
  try {
    inserted = sessions_.emplace(s->id, s).second;
  } catch (...) {
    limits_.release(tenant, Resource::IdleSessions);
    throw;
  }
  if (!inserted) {
    limits_.release(tenant, Resource::IdleSessions);
    return nullptr;
  }
  s->idle = true;
  ++idle_;
  link_last(*s, now_ms);
  return s;
}

void SessionRegistry::link_last(Session& s, std::uint64_t now_ms) noexcept {
  s.idle_since_ms = now_ms;
  s.idle_prev = idle_tail_;
  s.idle_next = nullptr;
  (idle_tail_ ? idle_tail_->idle_next : idle_head_) = &s;
  idle_tail_ = &s;
}

void SessionRegistry::unlink(Session& s) noexcept {
  (s.idle_prev ? s.idle_prev->idle_next : idle_head_) = s.idle_next;
  (s.idle_next ? s.idle_next->idle_prev : idle_tail_) = s.idle_prev;
  s.idle_prev = s.idle_next = nullptr;
}

void SessionRegistry::make_idle(Session& s, std::uint64_t now_ms) noexcept {
  if (s.idle) return;
  s.idle = true;
  ++idle_;
  limits_.add(s.tenant, Resource::IdleSessions);  // admitted once; no ceiling now
  link_last(s, now_ms);
}

void SessionRegistry::forget_idle(Session& s) noexcept {
  if (!s.idle) return;
  s.idle = false;
  --idle_;
  limits_.release(s.tenant, Resource::IdleSessions);
  unlink(s);
}

SessionRegistry::Claim SessionRegistry::claim_stream(Session& s, bool take_over) noexcept {
  std::lock_guard lock(mu_);
  if (s.ended.load()) return Claim::Ended;
  if (s.streaming && !take_over) return Claim::Busy;
  s.streaming = true;
  forget_idle(s);
  return Claim::Ok;
}

void SessionRegistry::stream_closed(Session& s, std::uint64_t now_ms) noexcept {
  std::lock_guard lock(mu_);
  s.streaming = false;
  if (!s.ended.load()) make_idle(s, now_ms);
}

std::shared_ptr<Session> SessionRegistry::find(const std::string& id, std::uint64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  Session& s = *it->second;
  if (s.idle) {  // used now: to the back of the idle list
    unlink(s);
    link_last(s, now_ms);
  }
  return it->second;
}

std::shared_ptr<Session> SessionRegistry::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto s = std::move(it->second);
  sessions_.erase(it);
  s->ended.store(true);
  forget_idle(*s);
  return s;
}

std::size_t SessionRegistry::expire(std::uint64_t now_ms, std::uint64_t idle_ms) {
  std::vector<std::shared_ptr<Session>> expired;
  std::size_t n = 0;
  {
    std::lock_guard lock(mu_);
    // The idle list is in last-use order: stop at the first session still in use. Each worker
    // stamps with its own loop's clock, which may run ahead of the expiring worker's: a stamp
    // from "the future" is in use, not 2^64 ms old.
    while (idle_head_ && idle_head_->idle_since_ms <= now_ms && now_ms - idle_head_->idle_since_ms >= idle_ms) {
      Session& s = *idle_head_;
      s.ended.store(true);
      forget_idle(s);
      auto it = sessions_.find(s.id);
      if (on_expired_) expired.push_back(std::move(it->second));
      sessions_.erase(it);  // may free s: touch it no more
      ++n;
    }
  }
  for (const auto& s : expired) on_expired_(s);  // outside the lock: it takes the session's
  return n;
}

std::size_t SessionRegistry::size() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::size_t SessionRegistry::idle() {
  std::lock_guard lock(mu_);
  return idle_;
}

}  // namespace mcpfan::detail

#include "mcp/sessions.h"

#include <sys/random.h>

#include <cstdio>

#include "mcp/limits.h"

namespace mcpfan::detail {

namespace {
std::string random_id() {
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  char hex[33];
  for (int i = 0; i < 16; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return std::string(hex, 32);
}
}  // namespace

Session::~Session() {
  if (!limits) return;
  limits->release(tenant, Resource::Streams);
  limits->release(tenant, Resource::Subscriptions, static_cast<std::int64_t>(uris.size()));
}

std::shared_ptr<Session> SessionRegistry::create(TenantId tenant, std::string version, std::uint64_t now_ms,
                                                 std::optional<Limit>& refused) {
  auto s = std::make_shared<Session>();
  s->id = random_id();
  s->tenant = tenant;
  s->version = std::move(version);
  s->idle_since_ms = now_ms;
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
  s->idle = true;
  ++idle_;
  try {
    sessions_.emplace(s->id, s);
  } catch (...) {
    forget_idle(*s);
    throw;
  }
  return s;
}

void SessionRegistry::forget_idle(Session& s) noexcept {
  if (!s.idle) return;
  s.idle = false;
  --idle_;
  limits_.release(s.tenant, Resource::IdleSessions);
}

void SessionRegistry::stream_opened(Session& s) noexcept { forget_idle(s); }

void SessionRegistry::stream_closed(Session& s) noexcept {
  if (s.idle || s.ended) return;
  s.idle = true;
  ++idle_;
  limits_.add(s.tenant, Resource::IdleSessions);  // it was admitted once; no ceiling now
}

std::shared_ptr<Session> SessionRegistry::find(const std::string& id, std::uint64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second->idle_since_ms = now_ms;
  return it->second;
}

std::shared_ptr<Session> SessionRegistry::erase(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  auto s = std::move(it->second);
  sessions_.erase(it);
  s->ended = true;
  forget_idle(*s);
  return s;
}

std::size_t SessionRegistry::expire(std::uint64_t now_ms, std::uint64_t idle_ms) {
  std::lock_guard lock(mu_);
  std::size_t n = 0;
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = *it->second;
    if (s.owner < 0 && now_ms - s.idle_since_ms >= idle_ms) {
      s.ended = true;
      forget_idle(s);
      it = sessions_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

std::size_t SessionRegistry::size() {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

}  // namespace mcpfan::detail

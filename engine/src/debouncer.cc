#include "mcpfan/debouncer.h"

namespace mcpfan {

Debouncer::Debouncer(std::chrono::milliseconds interval, Sink sink)
    : interval_(interval), sink_(std::move(sink)), thread_([this] { run(); }) {}

Debouncer::~Debouncer() { close(); }

void Debouncer::close() {
  std::lock_guard closing(close_mu_);
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Debouncer::emit(std::unique_lock<std::mutex>& lock, std::vector<Notification>& out) {
  std::uint64_t ticket = next_ticket_++;
  lock.unlock();
  {
    std::unique_lock s(sink_mu_);
    sink_cv_.wait(s, [&] { return serving_ == ticket; });
  }
  // Only the ticket holder gets here, so calls do not overlap and keep decision order:
  // an immediate and a trailing fan-out of one key cannot swap places.
  try {
    sink_(out);
  } catch (...) {
    std::lock_guard s(sink_mu_);
    ++serving_;
    sink_cv_.notify_all();
    lock.lock();
    throw;
  }
  {
    std::lock_guard s(sink_mu_);
    ++serving_;
  }
  sink_cv_.notify_all();
  lock.lock();
}

std::string Debouncer::key_of(const Notification& n) {
  // One node uses one form for all its notifications (forwarded with a backplane, local
  // without), so the two never meet; the first byte keeps them apart regardless.
  std::string k;
  if (n.forwarded()) {
    k.reserve(3 + n.tenant.size() + n.uri.size());
    k.push_back('n');
    k.append(n.tenant);
    k.push_back('\0');  // a tenant name is never empty and the kind byte follows: no ambiguity
    k.push_back(static_cast<char>(n.kind));
    k.append(n.uri);
    return k;
  }
  const Payload& p = *n.local;
  k.reserve(9 + p.uri().size());
  k.push_back('i');
  TenantId tenant = p.tenant();
  k.append(reinterpret_cast<const char*>(&tenant), sizeof tenant);
  k.push_back(static_cast<char>(p.kind()));
  k.append(p.uri());
  return k;
}

void Debouncer::publish(const std::vector<PayloadRef>& payloads) {
  std::vector<Notification> notes(payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) notes[i].local = payloads[i];
  publish(std::move(notes));
}

void Debouncer::publish(std::vector<Notification> notes) {
  std::vector<Notification> now;
  now.reserve(notes.size());
  std::unique_lock lock(mu_);
  auto t = Clock::now();
  for (Notification& n : notes) {
    if (!n.forwarded() && !n.local) continue;  // nothing to deliver anywhere
    std::string key = key_of(n);
    auto [it, fresh] = keys_.try_emplace(key);
    State& s = it->second;
    if (!s.held && (fresh || t - s.last_fire >= interval_)) {
      s.last_fire = t;
      now.push_back(std::move(n));
      // Every tracked key has a due entry: it fans out what is held by then, or forgets
      // the key once a whole interval has passed with nothing held.
      due_.push(Due{t + interval_, std::move(key)});
    } else {
      if (s.held) suppressed_.fetch_add(1, std::memory_order_relaxed);
      s.held = std::move(n);
    }
  }
  cv_.notify_one();
  if (!now.empty()) emit(lock, now);
}

void Debouncer::run() {
  std::unique_lock lock(mu_);
  std::vector<Notification> out;
  while (true) {
    if (stop_) {
      // Shutting down: held updates go out now rather than being lost.
      for (auto& [key, s] : keys_) {
        if (s.held) out.push_back(std::move(*s.held));
      }
      keys_.clear();
      if (!out.empty()) emit(lock, out);
      return;
    }
    if (due_.empty()) {
      cv_.wait(lock);
      continue;
    }
    auto next = due_.top().at;
    if (Clock::now() < next) {
      cv_.wait_until(lock, next);
      continue;
    }
    auto t = Clock::now();
    while (!due_.empty() && due_.top().at <= t) {
      auto it = keys_.find(due_.top().key);
      due_.pop();
      if (it == keys_.end()) continue;
      State& s = it->second;
      if (s.held) {
        if (t - s.last_fire < interval_) {  // fired again since this was scheduled
          due_.push(Due{s.last_fire + interval_, it->first});
          continue;
        }
        out.push_back(std::move(*s.held));
        s.held.reset();
        s.last_fire = t;
        trailing_.fetch_add(1, std::memory_order_relaxed);
        due_.push(Due{t + interval_, it->first});
      } else if (t - s.last_fire >= interval_) {
        keys_.erase(it);  // quiet for a whole interval: nothing to remember
      }
    }
    if (!out.empty()) {
      emit(lock, out);
      out.clear();
    }
  }
}

std::size_t Debouncer::tracked_keys() {
  std::lock_guard lock(mu_);
  return keys_.size();
}

}  // namespace mcpfan

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

void Debouncer::emit(std::unique_lock<std::mutex>& lock, const std::vector<PayloadRef>& out) {
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

std::string Debouncer::key_of(const Payload& p) {
  std::string k;
  k.reserve(8 + p.uri().size());
  TenantId tenant = p.tenant();
  k.append(reinterpret_cast<const char*>(&tenant), sizeof tenant);
  k.push_back(static_cast<char>(p.kind()));
  k.append(p.uri());
  return k;
}

void Debouncer::publish(const std::vector<PayloadRef>& payloads) {
  std::vector<PayloadRef> now;
  now.reserve(payloads.size());
  std::unique_lock lock(mu_);
  auto t = Clock::now();
  for (const PayloadRef& p : payloads) {
    std::string key = key_of(*p);
    auto [it, fresh] = keys_.try_emplace(key);
    State& s = it->second;
    if (!s.held && (fresh || t - s.last_fire >= interval_)) {
      s.last_fire = t;
      now.push_back(p);
      // Every tracked key has a due entry: it fans out what is held by then, or forgets
      // the key once a whole interval has passed with nothing held.
      due_.push(Due{t + interval_, std::move(key)});
    } else {
      if (s.held) suppressed_.fetch_add(1, std::memory_order_relaxed);
      s.held = p;
    }
  }
  cv_.notify_one();
  if (!now.empty()) emit(lock, now);
}

void Debouncer::run() {
  std::unique_lock lock(mu_);
  std::vector<PayloadRef> out;
  while (true) {
    if (stop_) {
      // Shutting down: held updates go out now rather than being lost.
      for (auto& [key, s] : keys_) {
        if (s.held) out.push_back(std::move(s.held));
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
        out.push_back(std::move(s.held));
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

#pragma once
// A bounded map whose entries expire: the OAuth agent's introspection verdicts (until the token's
// expiry, in unix seconds) and --authorize-url answers (for their ttlMs, in steady-clock ms). The
// caller picks the clock; `until` and `now` must be of the same one.
//
// Bounded: at most `max` entries; a put into a full cache evicts the oldest put first. A max of
// 0 keeps nothing.
//
// Thread-safety: every method may run concurrently from any thread (one mutex, held for a
// look-up or an insertion, never while calling out).
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace mcpfan::detail::oauth {

template <class V>
class ExpiringCache {
 public:
  explicit ExpiringCache(std::size_t max = 0) : max_(max) {}
  /** Before any use (not thread-safe against the others): the bound. */
  void set_max(std::size_t max) noexcept { max_ = max; }

  /** The value kept for `key`, if its `until` is still after `now`. */
  [[nodiscard]] std::optional<V> get(const std::string& key, std::int64_t now) const {
    std::lock_guard lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end() || it->second.until <= now) return std::nullopt;
    return it->second.value;
  }

  /** Keeps `value` for `key` until `until` (replacing what was kept for it). */
  void put(const std::string& key, V value, std::int64_t until) {
    if (max_ == 0) return;
    std::lock_guard lock(mu_);
    if (auto it = map_.find(key); it != map_.end()) {
      order_.erase(it->second.age);
      map_.erase(it);
    }
    while (map_.size() >= max_ && !order_.empty()) {
      map_.erase(order_.front());
      order_.pop_front();
    }
    order_.push_back(key);
    map_.emplace(key, Entry{std::move(value), until, std::prev(order_.end())});
  }

  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mu_);
    return map_.size();
  }

 private:
  struct Entry {
    V value;
    std::int64_t until;
    std::list<std::string>::iterator age;  // its place in order_
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> map_;
  std::list<std::string> order_;  // keys, oldest put first
  std::size_t max_;
};

}  // namespace mcpfan::detail::oauth

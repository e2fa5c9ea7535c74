#pragma once
// A value that SIGHUP may replace while workers read it (docs/operations.md,
// "Reload (SIGHUP)"): readers take a reference to the current immutable snapshot and keep it as long as
// they use it; a reload builds a whole new value and swaps it in. A reader never sees a
// half-loaded value, and one that took the old snapshot finishes its request with it.
//
// Thread-safety: load() and store() may run concurrently from any threads. The lock is held
// only to copy a shared_ptr (a refcount increment): reads happen per publish and per client
// authentication, never per delivery.
#include <memory>
#include <mutex>
#include <utility>

namespace mcpfan::detail {

template <class T>
class Swappable {
 public:
  Swappable() : current_(std::make_shared<const T>()) {}
  Swappable(const Swappable&) = delete;
  Swappable& operator=(const Swappable&) = delete;

  /** The current snapshot; never null. Valid for as long as the caller holds it. */
  [[nodiscard]] std::shared_ptr<const T> load() const {
    std::lock_guard lock(mu_);
    return current_;
  }
  /** Replaces the snapshot; readers holding the old one keep it until they let go. */
  void store(std::shared_ptr<const T> next) {
    {
      std::lock_guard lock(mu_);
      current_.swap(next);
    }
    // `next` now holds the old snapshot: released here, after the lock, out of the readers' way.
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const T> current_;
};

}  // namespace mcpfan::detail

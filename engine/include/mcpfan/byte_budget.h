#pragma once
/**
 * A byte bound that several threads draw from: bytes are reserved when something is
 * admitted and released when it is gone (sent, delivered, suppressed or dropped), so the
 * bound holds at every moment, not only when someone checks it. One atomic, no lock.
 *
 * Used for what waits for other nodes (the backplane's outage bound: a Notification carries
 * its reservation from admission until it is sent or suppressed) and for what a node has
 * received from them and not yet delivered (the receive budget).
 *
 * Thread affinity: ByteBudget is thread-safe. A ByteReservation is a move-only value owned
 * by one thread at a time; releasing it (destruction or reset()) is thread-safe.
 * Lifetime: a budget must outlive every reservation taken from it.
 */
#include <atomic>
#include <cstdint>
#include <utility>

namespace mcpfan {

class ByteBudget;

/** Bytes held from a ByteBudget; given back when destroyed or reset(). Empty: holds nothing. */
class [[nodiscard]] ByteReservation {
 public:
  ByteReservation() = default;
  ByteReservation(ByteReservation&& o) noexcept
      : budget_(std::exchange(o.budget_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  ByteReservation& operator=(ByteReservation&& o) noexcept {
    if (this != &o) {
      reset();
      budget_ = std::exchange(o.budget_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  ByteReservation(const ByteReservation&) = delete;
  ByteReservation& operator=(const ByteReservation&) = delete;
  ~ByteReservation() { reset(); }

  /** Moves up to `bytes` of these into a reservation of their own (one admission, several owners). */
  [[nodiscard]] ByteReservation split(std::int64_t bytes) noexcept {
    if (!budget_ || bytes <= 0) return {};
    if (bytes > bytes_) bytes = bytes_;
    bytes_ -= bytes;
    return ByteReservation(budget_, bytes);
  }
  /** Gives the bytes back now. Idempotent. */
  inline void reset() noexcept;
  [[nodiscard]] bool held() const noexcept { return budget_ != nullptr; }
  [[nodiscard]] std::int64_t bytes() const noexcept { return bytes_; }

 private:
  friend class ByteBudget;
  ByteReservation(ByteBudget* budget, std::int64_t bytes) noexcept : budget_(budget), bytes_(bytes) {}
  ByteBudget* budget_ = nullptr;
  std::int64_t bytes_ = 0;
};

class ByteBudget {
 public:
  explicit ByteBudget(std::int64_t limit) noexcept : limit_(limit) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  /**
   * Takes `bytes` if they fit: used() + bytes <= limit(). Otherwise takes nothing and returns
   * an empty reservation (so a request larger than the whole budget never fits).
   */
  [[nodiscard]] ByteReservation try_reserve(std::int64_t bytes) noexcept {
    if (bytes < 0) return {};
    std::int64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ - used) return {};
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_acq_rel, std::memory_order_relaxed));
    return ByteReservation(this, bytes);
  }
  [[nodiscard]] std::int64_t used() const noexcept { return used_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::int64_t limit() const noexcept { return limit_; }

 private:
  friend class ByteReservation;
  void release(std::int64_t bytes) noexcept { used_.fetch_sub(bytes, std::memory_order_acq_rel); }

  const std::int64_t limit_;
  std::atomic<std::int64_t> used_{0};
};

inline void ByteReservation::reset() noexcept {
  if (budget_) budget_->release(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

}  // namespace mcpfan

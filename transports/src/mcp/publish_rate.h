#pragma once
// Publish rate limits: one token bucket per publisher key (or one shared by all publishers
// when no keys are configured), refilled at `rate` notifications per second up to `burst`.
// configure() before sharing; take() is const and locks the bucket it takes from.
// A publish takes one token per notification, all or nothing. Thread-safe: a mutex per
// bucket, as publishes are parsed on any worker and are far rarer than deliveries.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

namespace mcpfan::detail {

class PublishRate {
 public:
  /** rate <= 0 disables the limit; burst <= 0 means one second's worth of rate. */
  void configure(double rate, double burst, std::size_t buckets);
  [[nodiscard]] bool enabled() const noexcept { return rate_ > 0; }
  [[nodiscard]] double burst() const noexcept { return burst_; }

  /**
   * Takes `n` tokens from bucket `i` (clamped to the last bucket). Returns nullopt when
   * taken, else the seconds until they would be (infinity when n exceeds the burst).
   */
  [[nodiscard]] std::optional<double> take(std::size_t i, double n, std::uint64_t now_ns) const;

 private:
  struct Bucket {
    std::mutex mu;
    double tokens = 0;
    std::uint64_t last_ns = 0;
  };
  double rate_ = 0;
  double burst_ = 0;
  std::size_t count_ = 0;
  std::unique_ptr<Bucket[]> buckets_;
};

}  // namespace mcpfan::detail

#pragma once
/**
 * Optional minimum interval between fan-outs of the same (tenant, method, uri), as the MCP
 * guidance on fast-changing resources recommends. A trailing-edge throttle: the first
 * update of a quiet key goes out at once; updates arriving within the interval after a
 * fan-out are held, each replacing the one before (counted as suppressed), and the newest
 * goes out when the interval has passed. The newest update is never lost.
 *
 * Thread-safety: publish() and the counters are thread-safe. The sink is called from the
 * publishing thread (immediate fan-outs) or from the debouncer's timer thread (trailing
 * ones), never concurrently for the same key.
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "mcpfan/payload.h"

namespace mcpfan {

class Debouncer {
 public:
  using Sink = std::function<void(const std::vector<PayloadRef>&)>;
  using Clock = std::chrono::steady_clock;

  Debouncer(std::chrono::milliseconds interval, Sink sink);
  /** Stops the timer thread; held updates are fanned out at once, not dropped. */
  ~Debouncer();
  Debouncer(const Debouncer&) = delete;
  Debouncer& operator=(const Debouncer&) = delete;

  /** Fans out what may go now (in order) and holds the rest. */
  void publish(const std::vector<PayloadRef>& payloads);

  [[nodiscard]] std::uint64_t suppressed() const noexcept { return suppressed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t trailing() const noexcept { return trailing_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::size_t tracked_keys();

 private:
  struct State {
    Clock::time_point last_fire{};
    PayloadRef held;  // the newest update waiting for the interval to pass
  };
  struct Due {
    Clock::time_point at;
    std::string key;
    bool operator>(const Due& o) const noexcept { return at > o.at; }
  };

  static std::string key_of(const Payload& p);
  void run();

  const Clock::duration interval_;
  const Sink sink_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, State> keys_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  bool stop_ = false;
  std::atomic<std::uint64_t> suppressed_{0};
  std::atomic<std::uint64_t> trailing_{0};
  std::thread thread_;
};

}  // namespace mcpfan

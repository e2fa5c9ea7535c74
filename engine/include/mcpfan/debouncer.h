#pragma once
/**
 * Optional minimum interval between fan-outs of the same (tenant, method, uri), as the MCP
 * guidance on fast-changing resources recommends. It runs where a publish is accepted: with a
 * backplane it holds whole Notifications (local payload and the copy for other nodes), so a
 * suppressed update never crosses the backplane, and a receiving node does not debounce again. A trailing-edge
 * throttle: the first update of a quiet key goes out at once; updates arriving within the interval after a fan-out are
 * held, each replacing the one before (counted as suppressed), and the newest goes out when the interval has passed.
 * The newest update is never lost.
 *
 * Thread-safety: publish(), close() and the counters are thread-safe. The sink is called
 * from the publishing thread (immediate fan-outs) or from the debouncer's timer thread
 * (trailing ones), one call at a time, in the order the debouncer decided them, and with no
 * lock of the debouncer held (so a slow sink never holds up publish() deciding, nor the
 * counters). The sink must not call back into the debouncer.
 *
 * Lifetime: close() (or the destructor) stops the timer thread after fanning out every held
 * update; publish() must not be called after close().
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "mcpfan/notification.h"
#include "mcpfan/payload.h"

namespace mcpfan {

class Debouncer {
 public:
  /** Gets what goes out now, in decision order; it may move from the notifications. */
  using Sink = std::function<void(std::vector<Notification>&)>;
  using Clock = std::chrono::steady_clock;

  Debouncer(std::chrono::milliseconds interval, Sink sink);
  /** close(), if not done yet. */
  ~Debouncer();
  /** Stops the timer thread; held updates are fanned out at once, not dropped. Idempotent. */
  void close();
  Debouncer(const Debouncer&) = delete;
  Debouncer& operator=(const Debouncer&) = delete;

  /**
   * Fans out what may go now (in order) and holds the rest. A notification is keyed by its
   * tenant's name when it is forwarded (a tenant with no clients here has no id), else by
   * the local payload's tenant id.
   */
  void publish(std::vector<Notification> notes);
  /** The same for notifications that stay on this node. */
  void publish(const std::vector<PayloadRef>& payloads);

  [[nodiscard]] std::uint64_t suppressed() const noexcept { return suppressed_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t trailing() const noexcept { return trailing_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::size_t tracked_keys();

 private:
  struct State {
    Clock::time_point last_fire{};
    std::optional<Notification> held;  // the newest update waiting for the interval to pass
  };
  struct Due {
    Clock::time_point at;
    std::string key;
    bool operator>(const Due& o) const noexcept { return at > o.at; }
  };

  static std::string key_of(const Notification& n);
  void run();
  /** Hands `out` to the sink in decision order; called and returns with `lock` (mu_) held. */
  void emit(std::unique_lock<std::mutex>& lock, std::vector<Notification>& out);

  const Clock::duration interval_;
  const Sink sink_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, State> keys_;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;
  bool stop_ = false;
  // Sink calls are ordered by ticket, taken under mu_ when the fan-out is decided.
  std::mutex sink_mu_;
  std::condition_variable sink_cv_;
  std::uint64_t next_ticket_ = 0;  // guarded by mu_
  std::uint64_t serving_ = 0;      // guarded by sink_mu_
  std::mutex close_mu_;            // serialises close() callers around the join
  std::atomic<std::uint64_t> suppressed_{0};
  std::atomic<std::uint64_t> trailing_{0};
  std::thread thread_;
};

}  // namespace mcpfan

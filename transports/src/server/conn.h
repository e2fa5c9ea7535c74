#pragma once
// What a worker needs of each connection it owns, whatever the transport. Loop-affine.

#include <cstdint>

namespace mcpfan::detail {

class Conn {
 public:
  virtual ~Conn() = default;
  /** Shutdown: end each listen with its final result, then close once that is written. */
  virtual void begin_shutdown() = 0;
  /** Close now (the grace period is over). Idempotent. */
  virtual void force_close() = 0;
  /** Called by the worker's periodic sweep: close if a deadline (timeouts) has passed. */
  virtual void sweep(std::uint64_t now_ms) = 0;
  /** Server::detach_stdio(): end as at the end of the client's input (stdio clients; others ignore it). */
  virtual void detach() {}

  Conn* prev_ = nullptr;  // the worker's intrusive list
  Conn* next_ = nullptr;
};

}  // namespace mcpfan::detail

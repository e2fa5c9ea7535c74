#pragma once
// What a worker needs of each connection it owns, whatever the transport. Loop-affine.

namespace mcpfan::detail {

class Conn {
 public:
  virtual ~Conn() = default;
  /** Shutdown: end each listen with its final result, then close once that is written. */
  virtual void begin_shutdown() = 0;
  /** Close now (the grace period is over). Idempotent. */
  virtual void force_close() = 0;

  Conn* prev_ = nullptr;  // the worker's intrusive list
  Conn* next_ = nullptr;
};

}  // namespace mcpfan::detail

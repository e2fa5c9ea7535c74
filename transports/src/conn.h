#pragma once
// What a worker needs of each connection it owns, whatever the transport. Loop-affine.
#include <string>

#include "mcpfan/tenants.h"

namespace mcpfan::detail {

class Conn {
 public:
  virtual ~Conn() = default;
  /** Shutdown: end each listen with its final result, then close once that is written. */
  virtual void begin_shutdown() = 0;
  /** Close now (the grace period is over). Idempotent. */
  virtual void force_close() = 0;
  /** Ends this connection's listen with that id, if the canceller may end it. */
  virtual void cancel(TenantId tenant, const std::string& auth, const std::string& id) {}

  Conn* prev_ = nullptr;  // the worker's intrusive list
  Conn* next_ = nullptr;
};

}  // namespace mcpfan::detail

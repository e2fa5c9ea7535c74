#include "nats/libuv_adapter.h"

// The adapter is C written for C compilers: our warnings (conversions, unused statics) are
// not its concern.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wcast-function-type"
#include <nats/adapters/libuv.h>
#pragma GCC diagnostic pop

namespace mcpfan::detail::nats::libuv {

natsStatus use_loop(natsOptions* opts, uv_loop_t* loop) {
  natsLibuv_Init();
  return natsOptions_SetEventLoop(opts, loop, natsLibuv_Attach, natsLibuv_Read, natsLibuv_Write, natsLibuv_Detach);
}

void set_thread_loop(uv_loop_t* loop) {
  natsLibuv_Init();
  natsLibuv_SetThreadLocalLoop(loop);
}

}  // namespace mcpfan::detail::nats::libuv

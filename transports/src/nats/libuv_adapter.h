#pragma once
// nats.c's libuv adapter (Debian's <nats/adapters/libuv.h>, a header of C functions), behind
// one translation unit: the backplane's connection does its socket IO on the backplane's
// own uv loop instead of nats.c's reader and flusher threads.
//
// Thread affinity: use_loop() before connecting; set_thread_loop() on the thread that runs
// the loop, before it connects (nats.c requires the first attach to run there).
#include <nats/nats.h>
#include <uv.h>

namespace mcpfan::detail::nats::libuv {

/** Points the options' socket IO at `loop` (natsOptions_SetEventLoop with the adapter's callbacks). */
[[nodiscard]] natsStatus use_loop(natsOptions* opts, uv_loop_t* loop);
/** Tells the adapter that this thread runs `loop` (calls from other threads are posted to it). */
void set_thread_loop(uv_loop_t* loop);

}  // namespace mcpfan::detail::nats::libuv

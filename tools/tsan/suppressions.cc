// Linked into every executable of a ThreadSanitizer build (and only there): TSan asks for this
// hook at start-up and reads the text as a suppressions file.
//
// One report is suppressed, a descriptor race inside nats.c's libuv adapter
// (<nats/adapters/libuv.h>), not in mcpfan:
//   On a reconnect, nats.c's own thread closes the old socket and opens the new one, then
//   schedules an attach on the backplane loop. uvAsyncCb handles it there: it uv_close()s the
//   old poll handle, and libuv calls epoll_ctl(EPOLL_CTL_DEL) with the old descriptor number.
//   By then a worker thread may have accepted a client that got that number. TSan sees the
//   backplane thread touch "the client's" descriptor and the worker close it, and reports a race.
// It is harmless: the DEL goes to the backplane loop's own epoll set, where the client's socket
// was never added, so the kernel answers ENOENT and nothing else changes. The fix belongs
// upstream (the adapter could poll a dup() of the socket). Only frames of that callback match, so
// a race in mcpfan's own code still fails the TSan pass.
extern "C" const char* __tsan_default_suppressions() {
  return "race:uvAsyncCb\n";
}

// Linked into every executable of a ThreadSanitizer build (and only there).
//
// Debian's libuv is not instrumented, and it closes descriptors with a raw
// syscall(SYS_close, fd) (uv__close_nocancel), which TSan never sees. When the kernel hands
// that number out again on another thread, TSan takes the new descriptor's creation for a
// race with the old one's. This definition of syscall() interposes libc's for libuv (an
// executable's definitions come first in symbol lookup) and turns SYS_close into close(),
// which TSan intercepts; every other call goes to libc's syscall() unchanged.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>

extern "C" long syscall(long number, ...) {
  va_list ap;
  va_start(ap, number);
  long a[6];
  for (long& x : a) x = va_arg(ap, long);
  va_end(ap);
  if (number == SYS_close) return ::close(static_cast<int>(a[0]));
  using Fn = long (*)(long, ...);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "syscall"));
  return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

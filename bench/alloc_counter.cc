// Global operator new/delete replacement for the bench binary: malloc/free plus counters.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "bench_support.h"

namespace {

std::atomic<std::uint64_t> g_allocs{0};
std::atomic<std::uint64_t> g_bytes{0};
std::atomic<std::int64_t> g_live{0};

// Relaxed load+store: no lock prefix. Exact when one thread allocates at a time.
template <class T>
inline void bump(std::atomic<T>& c, T d) noexcept {
  c.store(c.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
}

inline void* note(void* p) noexcept {
  if (p) {
    auto n = malloc_usable_size(p);
    bump<std::uint64_t>(g_allocs, 1);
    bump<std::uint64_t>(g_bytes, n);
    bump<std::int64_t>(g_live, static_cast<std::int64_t>(n));
  }
  return p;
}

inline void* plain(std::size_t n) noexcept { return note(std::malloc(n ? n : 1)); }

inline void* aligned(std::size_t n, std::align_val_t a) noexcept {
  auto al = static_cast<std::size_t>(a);
  if (al < sizeof(void*)) al = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, al, n ? n : 1) != 0) return nullptr;
  return note(p);
}

inline void release(void* p) noexcept {
  if (!p) return;
  bump<std::int64_t>(g_live, -static_cast<std::int64_t>(malloc_usable_size(p)));
  std::free(p);
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = plain(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = plain(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return plain(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return plain(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned(n, a); }
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept { return aligned(n, a); }

void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, std::size_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace mcpfan_bench {

AllocStats alloc_stats() noexcept {
  return AllocStats{g_allocs.load(std::memory_order_relaxed), g_bytes.load(std::memory_order_relaxed),
                    g_live.load(std::memory_order_relaxed)};
}

std::int64_t rss_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = 0;
  int got = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  if (got != 2) return -1;
  return static_cast<std::int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

}  // namespace mcpfan_bench

#include "alloc_probe.h"

#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<const void*> g_watched{nullptr};
std::atomic<bool> g_freed{false};
std::atomic<std::int64_t> g_live{0};

void* allocate(std::size_t n) noexcept {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p) g_live.fetch_add(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  return p;
}

void deallocate(void* p) noexcept {
  if (!p) return;
  if (p == g_watched.load(std::memory_order_acquire)) g_freed.store(true, std::memory_order_release);
  g_live.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)), std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

namespace alloc_probe {
void watch(const void* p) noexcept {
  g_freed.store(false, std::memory_order_release);
  g_watched.store(p, std::memory_order_release);
}
bool watched_freed() noexcept { return g_freed.load(std::memory_order_acquire); }
std::int64_t live_bytes() noexcept { return g_live.load(std::memory_order_relaxed); }
}  // namespace alloc_probe

// Every non-aligned form is replaced so that each new pairs with a delete from this file
// (the aligned forms stay the runtime's, which pair among themselves).
void* operator new(std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = allocate(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void operator delete(void* p) noexcept { deallocate(p); }
void operator delete[](void* p) noexcept { deallocate(p); }
void operator delete(void* p, std::size_t) noexcept { deallocate(p); }
void operator delete[](void* p, std::size_t) noexcept { deallocate(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { deallocate(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { deallocate(p); }

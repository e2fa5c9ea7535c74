#pragma once
/**
 * Observes the test binary's heap through replacements of the global (non-aligned)
 * operator new/delete defined in alloc_probe.cc.
 *
 * It never reads freed memory: it compares the addresses handed to operator delete with a
 * watched address, and sums malloc_usable_size() of live blocks. That keeps it compatible
 * with ASan (whose malloc/free interceptors still see every block).
 *
 * Thread-safe (atomics). The counters cover every thread of the process, so measure only
 * while no other test thread allocates.
 */
#include <cstdint>

namespace alloc_probe {

/** Starts watching `p`: watched_freed() turns true once operator delete receives `p`. */
void watch(const void* p) noexcept;
/** True once the watched address was passed to operator delete since watch(). */
[[nodiscard]] bool watched_freed() noexcept;
/** Bytes currently held by blocks from the replaced operator new. */
[[nodiscard]] std::int64_t live_bytes() noexcept;

}  // namespace alloc_probe

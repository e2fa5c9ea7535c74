#pragma once
/**
 * Shared helpers of the mcpfan micro-benchmarks.
 *
 * The bench binary replaces the global operator new/delete (alloc_counter.cc) with
 * malloc/free plus counters, so a benchmark can report heap allocations per operation
 * and the live heap bytes a structure holds. Counters are exact for single-threaded
 * benchmarks (all of ours); they are relaxed load+store, not atomic increments, so they
 * add no locked instruction to each allocation.
 */
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

namespace mcpfan_bench {

struct AllocStats {
  std::uint64_t allocs = 0;      // operator new calls so far
  std::uint64_t bytes = 0;       // bytes handed out so far (malloc_usable_size)
  std::int64_t live_bytes = 0;   // bytes currently allocated (malloc_usable_size)
};

[[nodiscard]] AllocStats alloc_stats() noexcept;

/** Resident set size of this process, from /proc/self/statm (bytes). */
[[nodiscard]] std::int64_t rss_bytes();

/**
 * Time per unit: `units_total` done in the benchmark's measured (CPU, or real with
 * UseRealTime) time, inverted. Printed with an SI prefix ("142ns"); seconds in JSON.
 */
inline benchmark::Counter time_per(double units_total) {
  return benchmark::Counter(units_total, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/** A plain average: total / n (0 when n is 0). */
inline double per(double total, double n) { return n > 0 ? total / n : 0.0; }

}  // namespace mcpfan_bench

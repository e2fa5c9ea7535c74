#pragma once
// The process's own numbers for GET /metrics, named as Prometheus client libraries name them
// (process_cpu_seconds_total, process_start_time_seconds, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds), read from /proc/self.
//
// Thread affinity: read_process_stats() may run on any thread; it reads a few small /proc
// files and lists /proc/self/fd (one entry per open descriptor, so a scrape of a node with
// 100,000 connections lists 100,000 entries: a scrape costs that much on the loop serving it).
// The result is a plain value, owned by the caller.
#include <cstdint>
#include <optional>
#include <string_view>

namespace mcpfan::detail {

struct ProcessStats {
  double cpu_seconds = 0;          // user + system time
  double start_time_seconds = 0;   // since the Unix epoch
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  std::uint64_t open_fds = 0;
  std::uint64_t max_fds = 0;       // the soft RLIMIT_NOFILE (what open() runs into)
};

/** Now; nullopt where /proc/self/stat cannot be read (not Linux, or no /proc mounted). */
[[nodiscard]] std::optional<ProcessStats> read_process_stats();

/**
 * Parses the text of /proc/self/stat and the boot time (the "btime" line of /proc/stat):
 * the CPU time, start time and memory fields. `ticks_per_second` and `page_size` as sysconf
 * gives them. nullopt if the text is not a stat line. Split out so it can be tested.
 */
[[nodiscard]] std::optional<ProcessStats> parse_proc_stat(std::string_view stat, double boot_time_seconds,
                                                          long ticks_per_second, long page_size);

}  // namespace mcpfan::detail

// Server resource samples from /proc, summed over a process and its descendants (so
// nginx's master + workers count as one server; mcpfan and node are one process).
#pragma once

#include <cstdint>
#include <string>

namespace mcpload {

struct ProcSample {
  bool ok = false;
  int processes = 0;
  uint64_t rss_kib = 0;   // sum of VmRSS
  uint64_t pss_kib = 0;   // sum of Pss (smaps_rollup), 0 when unreadable
  uint64_t cpu_ticks = 0; // sum of utime + stime, in clock ticks
  // Sum over every thread of voluntary + involuntary context switches: a loop that sleeps
  // and is woken again counts one voluntary switch each time.
  uint64_t ctx_switches = 0;
};

ProcSample SampleProcessTree(int pid);
double TicksToMicros(uint64_t ticks);

}  // namespace mcpload

#include "proc_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace mcpload {

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Fields after the ")" that ends the command name: [0] = state (field 3), [1] = ppid
// (field 4), [11] = utime (field 14), [12] = stime (field 15).
bool ParseStat(const std::string& stat, int* ppid, uint64_t* ticks) {
  size_t rp = stat.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream in(stat.substr(rp + 1));
  std::vector<std::string> f;
  std::string tok;
  while (f.size() < 13 && in >> tok) f.push_back(tok);
  if (f.size() < 13) return false;
  *ppid = std::atoi(f[1].c_str());
  *ticks = std::strtoull(f[11].c_str(), nullptr, 10) + std::strtoull(f[12].c_str(), nullptr, 10);
  return true;
}

// The number after `name` in a /proc text (KiB for the Vm and Pss fields, a count for the others), 0 when absent.
uint64_t NumberAfter(const std::string& text, const char* name) {
  size_t at = text.find(name);
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + std::strlen(name), nullptr, 10);
}

}  // namespace

ProcSample SampleProcessTree(int pid) {
  ProcSample s;
  // Descendants: one scan of /proc for parent links (no /proc/PID/task/*/children here).
  std::vector<std::pair<int, int>> links;  // (pid, ppid)
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int p = std::atoi(e->d_name);
      int ppid = 0;
      uint64_t ticks = 0;
      if (ParseStat(ReadFile("/proc/" + std::string(e->d_name) + "/stat"), &ppid, &ticks)) links.emplace_back(p, ppid);
    }
    closedir(d);
  }
  std::vector<int> tree{pid};
  for (size_t i = 0; i < tree.size() && i < 4096; ++i) {
    for (auto [p, pp] : links) {
      if (pp == tree[i]) tree.push_back(p);
    }
  }
  for (int p : tree) {
    std::string base = "/proc/" + std::to_string(p);
    int ppid = 0;
    uint64_t ticks = 0;
    if (!ParseStat(ReadFile(base + "/stat"), &ppid, &ticks)) {
      if (p == pid) return s;  // the server itself is gone
      continue;
    }
    ++s.processes;
    s.cpu_ticks += ticks;
    if (DIR* d = opendir((base + "/task").c_str())) {
      while (dirent* e = readdir(d)) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        std::string st = ReadFile(base + "/task/" + e->d_name + "/status");
        s.ctx_switches +=
            NumberAfter(st, "\nvoluntary_ctxt_switches:") + NumberAfter(st, "\nnonvoluntary_ctxt_switches:");
      }
      closedir(d);
    }
    s.rss_kib += NumberAfter(ReadFile(base + "/status"), "VmRSS:");
    s.pss_kib += NumberAfter(ReadFile(base + "/smaps_rollup"), "\nPss:");
  }
  s.ok = true;
  return s;
}

double TicksToMicros(uint64_t ticks) {
  static const long hz = sysconf(_SC_CLK_TCK);
  return double(ticks) * 1e6 / double(hz > 0 ? hz : 100);
}

}  // namespace mcpload

#include "server/process_stats.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <string>

namespace mcpfan::detail {

namespace {

// A small /proc file whole (they report a size of 0, so read until the end).
bool read_file(const char* path, std::string& out) {
  std::FILE* f = std::fopen(path, "re");
  if (!f) return false;
  char buf[4096];
  std::size_t n = 0;
  out.clear();
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && out.size() < (1u << 20)) out.append(buf, n);
  std::fclose(f);
  return !out.empty();
}

double boot_time_seconds() {
  std::string stat;
  if (!read_file("/proc/stat", stat)) return 0;
  std::size_t at = stat.find("\nbtime ");
  if (at == std::string::npos) return 0;
  at += 7;
  std::uint64_t v = 0;
  std::from_chars(stat.data() + at, stat.data() + stat.size(), v);
  return static_cast<double>(v);
}

std::uint64_t count_open_fds() {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return 0;
  const int own = ::dirfd(d);
  std::uint64_t n = 0;
  // Bounded by the descriptor limit: the directory lists each open descriptor once.
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    int fd = -1;
    std::from_chars(e->d_name, e->d_name + std::char_traits<char>::length(e->d_name), fd);
    if (fd != own) ++n;  // the directory being listed is not one of the process's own
  }
  ::closedir(d);
  return n;
}

}  // namespace

std::optional<ProcessStats> parse_proc_stat(std::string_view stat, double boot_time, long ticks_per_second,
                                            long page_size) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // from the last ')'. After it, field 3 (state) is the first; proc(5) numbers them from 1.
  std::size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  std::uint64_t field[53] = {};
  int index = 2;  // the field before the first one read
  std::size_t pos = 0;
  while (pos < rest.size() && index < 52) {
    while (pos < rest.size() && rest[pos] == ' ') ++pos;
    std::size_t end = rest.find(' ', pos);
    if (end == std::string_view::npos) end = rest.size();
    ++index;
    std::from_chars(rest.data() + pos, rest.data() + end, field[index]);  // state (a letter) stays 0
    pos = end;
  }
  if (index < 24) return std::nullopt;
  ProcessStats s;
  const double ticks = static_cast<double>(ticks_per_second);
  s.cpu_seconds = static_cast<double>(field[14] + field[15]) / ticks;  // utime + stime
  s.start_time_seconds = boot_time + static_cast<double>(field[22]) / ticks;
  s.virtual_bytes = field[23];
  s.resident_bytes = field[24] * static_cast<std::uint64_t>(page_size);
  return s;
}

std::optional<ProcessStats> read_process_stats() {
  std::string stat;
  if (!read_file("/proc/self/stat", stat)) return std::nullopt;
  auto s = parse_proc_stat(stat, boot_time_seconds(), ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE));
  if (!s) return std::nullopt;
  s->open_fds = count_open_fds();
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0) s->max_fds = lim.rlim_cur == RLIM_INFINITY ? 0 : lim.rlim_cur;
  return s;
}

}  // namespace mcpfan::detail

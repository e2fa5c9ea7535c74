// server/process_stats: the /proc/self/stat parse (a command name with spaces and
// parentheses, the fields proc(5) numbers 14, 15, 22, 23 and 24) and a live read that makes sense.
#include "server/process_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace mcpfan::detail {
namespace {

// Fields 1..24 of a stat line; comm "(a) b)" as the kernel writes a name holding ") ".
std::string StatLine(std::string_view comm) {
  return "4242 (" + std::string(comm) + ") S 1 4242 4242 0 -1 4194560 900 0 0 0 "
         "250 150 0 0 20 0 5 0 12345 104857600 2048 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
}

TEST(ProcessStats, ParsesTheFieldsAfterTheLastParenthesis) {
  for (std::string_view comm : {"mcpfan", "a) b", "x (y) z"}) {
    auto s = parse_proc_stat(StatLine(comm), 1000.0, 100, 4096);
    ASSERT_TRUE(s) << comm;
    EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0) << comm;            // (250 + 150) ticks / 100
    EXPECT_DOUBLE_EQ(s->start_time_seconds, 1123.45) << comm;  // boot + 12345 / 100
    EXPECT_EQ(s->virtual_bytes, 104857600u) << comm;
    EXPECT_EQ(s->resident_bytes, 2048u * 4096u) << comm;
  }
}

TEST(ProcessStats, RefusesWhatIsNotAStatLine) {
  EXPECT_FALSE(parse_proc_stat("", 0, 100, 4096));
  EXPECT_FALSE(parse_proc_stat("no parenthesis here", 0, 100, 4096));
  EXPECT_FALSE(parse_proc_stat("1 (short) S 1 2 3", 0, 100, 4096));
  EXPECT_FALSE(parse_proc_stat(StatLine("x"), 0, 0, 4096)) << "no clock ticks per second";
}

TEST(ProcessStats, TheLiveProcessReadsSanely) {
  auto s = read_process_stats();
  ASSERT_TRUE(s) << "/proc/self/stat unreadable";
  EXPECT_GT(s->resident_bytes, 0u);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
  EXPECT_GT(s->start_time_seconds, 1.6e9);  // after 2020: the boot time was read
  EXPECT_GE(s->open_fds, 3u);               // at least stdin, stdout, stderr
  EXPECT_GE(s->max_fds, s->open_fds);
  const int fd = ::dup(1);
  ASSERT_GE(fd, 0);
  auto more = read_process_stats();
  ::close(fd);
  ASSERT_TRUE(more);
  EXPECT_EQ(more->open_fds, s->open_fds + 1) << "a descriptor more, counted once (not the directory being listed)";
}

}  // namespace
}  // namespace mcpfan::detail

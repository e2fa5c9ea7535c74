#pragma once
// The server's stderr log, which never blocks a worker loop (tests/integration/log_test.cc).
//
// stderr may be a pipe nobody drains (a supervisor, a test harness, a full terminal): a
// worker that fprintf()s there stops serving every client on its loop. Lines go instead to
// a bounded queue that one thread writes out; a full queue drops the line (counted). Each
// kind of line is rate-limited (at most kBurst at once, then kPerSecond per second); what is
// suppressed is counted and reported on the next line of that kind that goes out.
//
// Thread-safe; callable from any thread. The writer thread starts on first use and is
// never joined: at exit, lines still queued are lost rather than hold the process up.
#include <cstdint>
#include <string>
#include <string_view>

namespace mcpfan::detail::log {

/** Logs "mcpfan: <text>" under `kind` (a static string naming the kind of event). */
void line(std::string_view kind, std::string text) noexcept;
/** Lines dropped (queue full) or suppressed (rate limit) since start. */
[[nodiscard]] std::uint64_t dropped() noexcept;
[[nodiscard]] std::uint64_t suppressed() noexcept;

}  // namespace mcpfan::detail::log

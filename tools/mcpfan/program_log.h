#pragma once
// The mcpfan program's own log lines (start-up, reload, drain, stop), written like the
// Server's records and into the same stderr queue (mcpfan/transport/log.h), so that
// --log-format json makes every line JSON and the two keep their order.
//
// Controlling thread only (main's loop). The lines a reader waits for, "listening on
// HOST:PORT ...", "publish listener on HOST:PORT" and "stopped (...)", are written whatever
// --log-level: scripts and supervisors read the port from them (tests/integration/harness.h).
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/transport/server.h"

namespace mcpfan::tool {

/** One line at `level` (dropped below cfg.log.level unless `always`). */
void program_log(const ServerConfig& cfg, LogLevel level, std::string_view kind, std::string message,
                 std::vector<LogField> fields = {}, bool always = false);

/** Before start(): the version, and how clients and publishers authenticate, the backplane and the upstream. */
void log_startup_summary(const ServerConfig& cfg);

/** Waits (bounded) until what was logged is written: call before exiting. */
void flush_program_log();

}  // namespace mcpfan::tool

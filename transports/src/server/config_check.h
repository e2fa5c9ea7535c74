#pragma once
// What Server::start() checks of a ServerConfig before it starts anything: every numeric
// field within the range it is safe to serve with (a zero keepalive interval, a zero-byte
// body bound or a million worker threads are mistakes, not settings), and the fields that
// take one of a few words. The mcpfan program's flags map onto these fields, so its users
// get the same check; the error names the field and the flag. One table (config_check.cc).
#include "mcpfan/result.h"
#include "mcpfan/transport/server.h"

namespace mcpfan::detail {

/** The largest worker count, tenant table and drain batch start() accepts (the construction clamps to them). */
inline constexpr unsigned kMaxWorkers = 1024;
inline constexpr std::size_t kMaxTenants = 10'000'000;
inline constexpr std::size_t kMaxDrainBatch = 1 << 20;

/** The first field out of range, as -32602 "ServerConfig::<field> = <value> is outside <min>..<max> (--<flag>)". */
[[nodiscard]] Status check_config(const ServerConfig& config);

}  // namespace mcpfan::detail

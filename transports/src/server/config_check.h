#pragma once
// What Server::start() checks of a ServerConfig before it starts anything: every numeric
// setting within the range it is safe to serve with (a zero keepalive interval, a zero-byte
// body bound or a million worker threads are mistakes, not settings), and the settings that
// take one of a few words. The ranges and words are the declarations of
// mcpfan/transport/settings.h, which the mcpfan program's flags are made from too, so its
// users get the same check; the error names the setting's path and its flag.
#include "mcpfan/result.h"
#include "mcpfan/transport/server.h"
#include "mcpfan/transport/settings.h"

namespace mcpfan::detail {

using settings::kMaxDrainBatch;
using settings::kMaxTenants;
using settings::kMaxWorkers;

/** The first setting out of range, as -32602 "ServerConfig::<path> = <value> is outside <min>..<max> (<flag>)". */
[[nodiscard]] Status check_config(const ServerConfig& config);

}  // namespace mcpfan::detail

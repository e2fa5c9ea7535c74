#pragma once
// The NATS backplane's settings, read from a ServerConfig: judged before anything starts (the
// URL list, the subject prefix and the files nats.c would read at its first connect), and
// turned into the BackplaneConfig that Backplane::start() takes.
//
// Thread affinity: pure functions of their arguments (settings_error() reads the files).
#include <optional>
#include <string>

#include "mcpfan/transport/server.h"
#include "nats/backplane.h"

namespace mcpfan::detail::nats {

/** Why the --nats settings of `c` (which names servers) cannot work, the flag first; or nullopt. */
[[nodiscard]] std::optional<std::string> settings_error(const ServerConfig& c);

/** The backplane's settings from the server's; it logs to `logger`, which outlives it. */
[[nodiscard]] BackplaneConfig backplane_config(const ServerConfig& c, log::Logger& logger);

}  // namespace mcpfan::detail::nats

#pragma once
// The NATS backplane's settings (ServerConfig::nats), judged before anything starts: the URL
// list, the subject prefix and the files nats.c would read at its first connect. The
// backplane takes the settings whole (BackplaneConfig::nats).
//
// Thread affinity: a pure function of its argument and the files it reads.
#include <optional>
#include <string>

#include "mcpfan/transport/server_config.h"

namespace mcpfan::detail::nats {

/** Why the settings `c` (which name servers) cannot work, the flag first; or nullopt. */
[[nodiscard]] std::optional<std::string> settings_error(const NatsConfig& c);

}  // namespace mcpfan::detail::nats

// The one place that names a backplane implementation: a new backplane is another branch here
// (and a folder beside nats/, with its CMake option). MCPFAN_WITH_NATS is set for this file
// alone (transports/CMakeLists.txt), so no other file compiles differently without NATS.
#include "backplane/backplane.h"

#if MCPFAN_WITH_NATS
#include "nats/backplane.h"
#include "nats/settings.h"
#endif

namespace mcpfan::detail {

std::optional<std::string> backplane_config_error(const ServerConfig& c) {
  if (c.nats.urls.empty()) return std::nullopt;
#if MCPFAN_WITH_NATS
  return nats::settings_error(c.nats);
#else
  return std::string("--nats: this mcpfan was built without NATS support (MCPFAN_WITH_NATS=OFF)");
#endif
}

Result<std::unique_ptr<Backplane>> start_backplane(const ServerConfig& c, Hub& hub, log::Logger& logger) {
  if (c.nats.urls.empty()) return std::unique_ptr<Backplane>();
#if MCPFAN_WITH_NATS
  auto started = nats::Backplane::start({c.nats, c.publish_limits(), &logger}, hub);
  if (!started) return started.error();
  return std::unique_ptr<Backplane>(std::move(started.value()));
#else
  (void)hub;
  (void)logger;
  return Error{rpc_code::kInvalidParams, *backplane_config_error(c)};
#endif
}

}  // namespace mcpfan::detail

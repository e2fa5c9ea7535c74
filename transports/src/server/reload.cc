// What Server::reload() (SIGHUP in the mcpfan program) may change without dropping a stream:
// the client token keys, the publisher keys with their rate, and the per-tenant ceilings.
// start() installs the first generation through the same code.
#include <cstdio>
#include <memory>
#include <string>

#include "server/server_impl.h"

namespace mcpfan {

namespace {

std::string ceilings_text(const detail::TenantCeilings& c) {
  return "connections " + std::to_string(c.connections) + ", streams " + std::to_string(c.streams) + ", subscriptions " +
         std::to_string(c.subscriptions) + ", idle sessions " + std::to_string(c.idle_sessions);
}

std::string rate_text(double rate, double burst) {
  if (rate <= 0) return "unlimited";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g/s per key, burst %g", rate, burst);
  return buf;
}

}  // namespace

Result<std::string> Server::Impl::install_reloadable(const ServerConfig& next, bool starting) {
  // The host's authenticator replaces client tokens: with both, which one decides would be a
  // guess. It is fixed at start (config, not `next`): a reload can neither add nor drop it.
  bool jwt_files = !next.jwt_secret_file.empty() || !next.jwt_public_key_file.empty();
  if (config.authenticate_client && jwt_files) {
    return Error{rpc_code::kInvalidParams,
                 std::string(starting ? "" : "reload: ") +
                     "authenticate_client (the host's authenticator) and client tokens (jwt_secret_file, "
                     "jwt_public_key_file) cannot both be configured: the host's authenticator replaces tokens"};
  }
  // Everything is loaded before anything is installed: a file that does not load leaves the
  // running configuration whole.
  auto auth = detail::ClientAuth::load(next.jwt_secret_file, next.jwt_public_key_file);
  if (!auth) return auth.error();
  auto policy = std::make_shared<detail::PublisherPolicy>();
  if (!next.publish_keys_file.empty()) {
    auto keys = detail::PublisherKeys::load(next.publish_keys_file);
    if (!keys) return keys.error();
    policy->keys = std::move(keys.value());
  }
  if (!starting) {
    // Turning authentication on or off changes who may connect at all (and the listener checks
    // made at start): that takes a restart.
    if (auth.value().enabled() != state.client_auth.load()->enabled()) {
      return Error{rpc_code::kInvalidParams,
                   "client tokens (--jwt-secret-file, --jwt-public-key-file) cannot be turned on or off by a reload; restart"};
    }
    if (policy->keys.enabled() != state.publishers.policy.load()->keys.enabled()) {
      return Error{rpc_code::kInvalidParams, "publisher keys (--publish-keys-file) cannot be turned on or off by a reload; restart"};
    }
  }
  policy->rate.configure(next.publish_rate, next.publish_burst, policy->keys.size());
  detail::TenantCeilings ceilings = detail::tenant_ceilings(next);
  std::string client_auth = config.authenticate_client ? "client authentication: the host's authenticator"
                                                        : "client token algorithms: " + auth.value().accepted_algorithms();
  std::string summary = client_auth +
                        "; publisher keys: " + std::to_string(policy->keys.size()) +
                        "; publish rate: " + rate_text(next.publish_rate, policy->rate.burst()) +
                        "; tenant ceilings (0 = unlimited): " + ceilings_text(ceilings);
  state.client_auth.store(std::make_shared<const detail::ClientAuth>(std::move(auth.value())));
  state.publishers.policy.store(std::move(policy));
  state.limits.set_ceilings(ceilings);
  return summary;
}

Result<std::string> Server::reload(const ServerConfig& next) {
  Impl& m = *impl_;
  if (!m.started.load(std::memory_order_acquire) || m.stopped) {
    return Error{rpc_code::kInternalError, "reload() needs a running server"};
  }
  return m.install_reloadable(next, /*starting=*/false);
}

}  // namespace mcpfan

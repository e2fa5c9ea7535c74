// What Server::reload() (SIGHUP in the mcpfan program) may change without dropping a stream:
// the client token keys, the publisher keys with their rate, the per-tenant ceilings, and the
// listeners' TLS certificates and keys.
// start() installs the first generation through the same code.
#include <cstdio>
#include <memory>
#include <string>

#include "server/preflight.h"
#include "server/server_impl.h"

namespace mcpfan {

namespace {

std::string ceilings_text(const detail::TenantCeilings& c) {
  return "connections " + std::to_string(c.connections) + ", streams " + std::to_string(c.streams) +
         ", subscriptions " + std::to_string(c.subscriptions) + ", idle sessions " + std::to_string(c.idle_sessions);
}

std::string rate_text(double rate, double burst) {
  if (rate <= 0) return "unlimited";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%g/s per key, burst %g", rate, burst);
  return buf;
}

}  // namespace

namespace detail {

Result<Reloadable> load_reloadable(const ServerConfig& next, bool host_authenticator) {
  // The host's authenticator replaces client tokens: with both, which one decides would be a
  // guess. It is fixed at start (the running config, not `next`): a reload can neither add nor drop it.
  bool jwt_files = !next.auth.jwt_secret_file.empty() || !next.auth.jwt_public_key_file.empty();
  if (host_authenticator && jwt_files) {
    return Error{rpc_code::kInvalidParams,
                 "authenticate_client (the host's authenticator) and client tokens (jwt_secret_file, "
                 "jwt_public_key_file) cannot both be configured: the host's authenticator replaces tokens"};
  }
  auto auth = ClientAuth::load(next.auth.jwt_secret_file, next.auth.jwt_public_key_file);
  if (!auth) {
    // Which flag: the operator (and --check-config, which points at the config file's line) needs it.
    bool secret_bad = !next.auth.jwt_secret_file.empty() && !ClientAuth::load(next.auth.jwt_secret_file, "");
    return Error{auth.error().code, std::string(secret_bad ? "--jwt-secret-file: " : "--jwt-public-key-file: ") +
                                        auth.error().message};
  }
  auto policy = std::make_shared<PublisherPolicy>();
  if (!next.auth.publish_keys_file.empty()) {
    auto keys = PublisherKeys::load(next.auth.publish_keys_file);
    if (!keys) return Error{keys.error().code, "--publish-keys-file: " + keys.error().message};
    policy->keys = std::move(keys.value());
  }
  policy->rate.configure(next.auth.publish_rate, next.auth.publish_burst, policy->keys.size());
  TenantCeilings ceilings = tenant_ceilings(next);
  std::string client_auth = host_authenticator ? "client authentication: the host's authenticator"
                                               : "client token algorithms: " + auth.value().accepted_algorithms();
  std::string summary = client_auth + "; publisher keys: " + std::to_string(policy->keys.size()) +
                        "; publish rate: " + rate_text(next.auth.publish_rate, policy->rate.burst()) +
                        "; tenant ceilings (0 = unlimited): " + ceilings_text(ceilings);
  return Reloadable{std::move(auth.value()), std::move(policy), ceilings, std::move(summary)};
}

void install_reloadable(ServerState& state, Reloadable&& r) {
  state.client_auth.store(std::make_shared<const ClientAuth>(std::move(r.auth)));
  state.publishers.policy.store(std::move(r.policy));
  state.limits.set_ceilings(r.ceilings);
}

}  // namespace detail

Result<std::string> Server::Impl::install_reloadable(const ServerConfig& next, bool starting) {
  // Everything is loaded before anything is installed: a file that does not load leaves the
  // running configuration whole.
  auto loaded = detail::load_reloadable(next, static_cast<bool>(config.auth.authenticate_client));
  if (!loaded) return loaded.error();
  detail::Reloadable& r = loaded.value();
  if (!starting) {
    // Turning authentication on or off changes who may connect at all (and the listener checks
    // made at start): that takes a restart.
    if (r.auth.enabled() != state.client_auth.load()->enabled()) {
      return Error{
          rpc_code::kInvalidParams,
          "client tokens (--jwt-secret-file, --jwt-public-key-file) cannot be turned on or off by a reload; restart"};
    }
    if (r.policy->keys.enabled() != state.publishers.policy.load()->keys.enabled()) {
      return Error{rpc_code::kInvalidParams,
                   "publisher keys (--publish-keys-file) cannot be turned on or off by a reload; restart"};
    }
  }
  std::string summary = std::move(r.summary);
  if (!starting) {
    // The certificates last: each is read and checked whole before it is swapped in, and open
    // connections keep the one they began with.
    auto tls = reload_tls(next);
    if (!tls) return tls.error();
    summary += tls.value();
  }
  detail::install_reloadable(state, std::move(r));
  return summary;
}

Result<std::string> Server::Impl::reload_tls(const ServerConfig& next) {
  struct One {
    std::shared_ptr<detail::tls::ServerContext>& ctx;
    const std::string& cert;
    const std::string& key;
    const char* flag;
  };
  std::string summary;
  for (One one :
       {One{state.tls, next.tls.cert_file, next.tls.key_file, "--tls-cert"},
        One{state.publish_tls, next.tls.publish_cert_file, next.tls.publish_key_file, "--publish-tls-cert"}}) {
    if (static_cast<bool>(one.ctx) != (!one.cert.empty() || !one.key.empty())) {
      return Error{rpc_code::kInvalidParams,
                   std::string("TLS (") + one.flag + ") cannot be turned on or off by a reload; restart"};
    }
    if (!one.ctx) continue;
    std::string err;
    if (!one.ctx->reload(one.cert, one.key, err)) {
      return Error{rpc_code::kInvalidParams, std::string(one.flag) + ": " + err + " (the running certificate stays)"};
    }
    summary += std::string("; ") + one.flag + " " + one.cert + " reloaded";
  }
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

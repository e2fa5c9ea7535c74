#include <chrono>
#include <cmath>

#include "http/exchange.h"
#include "http/request_checks.h"
#include "http/routes.h"
#include "mcp/messages.h"
#include "mcp/publishers.h"
#include "backplane/backplane.h"
#include "server/loop_context.h"

// POST /v1/publish: a publisher's notifications, checked (key, tenant, rate) and fanned out.
namespace mcpfan::detail {

void handle_publish(Exchange& c, HttpRequest& req) {
  LoopContext& w = c.context();
  if (!is_json_content_type(req.content_type)) {
    c.respond(415, "application/json", json_error_body("Content-Type must be application/json"));
    return;
  }
  Publishers& pub = w.publishers();
  // This publish's keys and buckets, kept whole if a reload (SIGHUP) swaps in new ones meanwhile.
  std::shared_ptr<const PublisherPolicy> policy = pub.policy.load();
  std::optional<std::string> forced;  // the tenant a bound key publishes to
  std::size_t bucket = 0;
  if (policy->keys.enabled()) {
    // A verified client certificate named in the keys file, else the bearer key.
    std::optional<PublisherGrant> grant;
    if (std::string cn = c.client_certificate(); !cn.empty()) grant = policy->keys.lookup_certificate(cn);
    if (!grant) grant = policy->keys.lookup_bearer(req.authorization);
    if (!grant) {
      bool sent = !req.authorization.empty();
      (sent ? pub.counters.publisher_unknown_key : pub.counters.publisher_missing)
          .fetch_add(1, std::memory_order_relaxed);
      log_auth_failure("publisher", sent ? "unknown_key" : "missing",
                       sent ? "unknown publisher key" : "no publisher key");
      std::string challenge = "Bearer realm=\"mcpfan-publish\"";
      if (sent) challenge += ", error=\"invalid_token\"";
      c.respond(
          401, "application/json",
          json_error_body(sent ? "unknown publisher key" : "publishing needs Authorization: Bearer <publisher key>"),
          {{"WWW-Authenticate", std::move(challenge)}});
      return;
    }
    bucket = grant->key_index;
    if (!grant->any_tenant) forced = grant->tenant;
  }
  Backplane* backplane = w.backplane();
  auto decoded = w.publish_decoder().decode(req.body, w.hub().tenants(),
                                            forced ? std::optional<std::string_view>(*forced) : std::nullopt,
                                            /*for_backplane=*/backplane != nullptr);
  if (!decoded) {
    if (auto limit = limit_of(w.publish_decoder().limit_hit())) w.limits().hit(*limit);
    bool forbidden = decoded.error().code == rpc_code::kForbidden;
    if (forbidden) {
      pub.counters.publisher_forbidden_tenant.fetch_add(1, std::memory_order_relaxed);
      log_auth_failure("publisher", "forbidden_tenant", decoded.error().message);
    }
    c.respond(forbidden ? 403 : 400, "application/json", json_error_body(decoded.error().message));
    return;
  }
  const std::size_t accepted = decoded.value().accepted;
  if (policy->rate.enabled() && accepted > 0) {
    auto now_ns = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
    if (auto wait = policy->rate.take(bucket, static_cast<double>(accepted), now_ns)) {
      std::optional<TenantId> tenant = forced ? w.hub().tenants().find(*forced) : std::nullopt;
      w.limits().hit(Limit::PublishRate, tenant.value_or(Limits::kNoTenant));
      std::string msg = std::isinf(*wait)
                            ? "a publish of " + std::to_string(accepted) + " notifications exceeds the burst of " +
                                  std::to_string(static_cast<long long>(policy->rate.burst()))
                            : "publish rate limit exceeded; retry in " + std::to_string(*wait) + " s";
      long long retry = std::isinf(*wait) ? 1 : std::max(1LL, static_cast<long long>(std::ceil(*wait)));
      c.respond(429, "application/json", json_error_body(msg), {{"Retry-After", std::to_string(retry)}});
      return;
    }
  }
  if (backplane) {
    // All or nothing: what the backplane would refuse is refused before anything is delivered.
    if (auto refused = backplane->admit(decoded.value().notifications)) {
      if (refused->why == BackplaneRefusal::Why::TooLarge) {
        c.respond(413, "application/json", json_error_body(refused->message));
      } else {
        c.respond(503, "application/json", json_error_body(refused->message), {{"Retry-After", "1"}});
      }
      return;
    }
  }
  // The hub debounces whole notifications, delivers them here and, with a backplane, forwards
  // them (Hub::set_forwarder): a suppressed update never crosses the backplane. It counts
  // those with no audience anywhere, and keeps each task's state for later listens.
  if (!w.hub().publish(std::move(decoded.value().notifications), decoded.value().tasks)) {
    if (w.hub().closed()) {
      c.respond(503, "application/json", json_error_body("the server is shutting down; nothing was published"));
    } else {  // a worker loop's inbox is at --shard-inbox-max (mcpfan/hub.h): refused whole, try again soon
      c.respond(503, "application/json",
                json_error_body("a worker loop's inbox is full (--shard-inbox-max); nothing was published"),
                {{"Retry-After", "1"}});
    }
    return;
  }
  c.respond(202, "application/json", R"({"accepted":)" + std::to_string(accepted) + "}");
}

}  // namespace mcpfan::detail

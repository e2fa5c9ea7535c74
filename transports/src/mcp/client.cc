#include "mcp/client.h"

#include <strings.h>

#include <algorithm>
#include <ctime>
#include <exception>

#include "server/log.h"

namespace mcpfan::detail {

std::variant<ClientCore::Verified, Refusal, AuthPending> ClientCore::verify(std::string_view credential,
                                                                          bool bare_token_ok,
                                                                          ClientTransport transport,
                                                                          const AuthWait* waited) {
  ClientIdentity id;
  if (host_) {
    auto answer = ask_host(credential, transport);
    if (auto* refused = std::get_if<Refusal>(&answer)) return std::move(*refused);
    id = std::move(std::get<ClientIdentity>(answer));
  } else {
    auto now = static_cast<std::int64_t>(std::time(nullptr));
    bool bearer = credential.size() > 7 && strncasecmp(credential.data(), "bearer ", 7) == 0;
    std::shared_ptr<const ClientAuth> auth = auth_.load();  // this request's keys, whatever a reload does meanwhile
    std::optional<oauth::TokenPeek> peek;
    std::string_view token = credential;
    oauth::Agent* tokens = oauth_ && oauth_->tokens() ? oauth_ : nullptr;
    if (tokens) {
      if (bearer || !bare_token_ok) {
        auto parsed = parse_bearer(credential);
        if (auto* e = std::get_if<AuthError>(&parsed)) return auth_refusal(e->kind, e->message);
        token = std::get<std::string_view>(parsed);
      }
      peek = oauth::peek_token(token);
    }
    bool ours = tokens && peek && peek->iss == tokens->issuer();
    // Which method takes the token (client.h): the OAuth verifier for its issuer's JWTs, the
    // static keys for other JWTs, introspection for the rest.
    if (tokens && (ours || ((!peek || !auth->enabled()) && tokens->introspection()))) {
      auto r = verify_oauth(token, ours, waited);
      if (auto* refused = std::get_if<Refusal>(&r)) return std::move(*refused);
      if (auto* pending = std::get_if<AuthPending>(&r)) return std::move(*pending);
      id = std::move(std::get<ClientIdentity>(r));
    } else if (tokens && !auth->enabled()) {
      if (!peek) return auth_refusal(AuthFailure::Malformed, "the access token is not a JWT");
      return auth_refusal(AuthFailure::WrongIssuer,
                          "the access token's issuer is not " + tokens->issuer() + " (iss \"" + peek->iss + "\")");
    } else {
      AuthResult res =
          bearer || !bare_token_ok ? auth->verify_bearer(credential, now) : auth->verify_token(credential, now);
      if (auto* e = std::get_if<AuthError>(&res)) return auth_refusal(e->kind, e->message);
      id = std::move(std::get<ClientIdentity>(res));
    }
  }
  std::optional<TenantId> t = tenants_.acquire(id.tenant);
  if (!t) {
    limits_.hit(Limit::Tenants);
    return refusal(Limit::Tenants, Limits::kNoTenant);
  }
  return Verified{std::move(id), *t, TenantRef(tenants_, *t)};
}

Refusal ClientCore::auth_refusal(AuthFailure kind, std::string message) {
  counters_.client[static_cast<std::size_t>(kind)].fetch_add(1, std::memory_order_relaxed);
  log_auth_failure("client", auth_failure_name(kind), message);
  if (kind == AuthFailure::Unavailable) {
    // Not the client's fault: its token may be fine. No challenge; worth a retry.
    Refusal r{rpc_code::kInternalError, std::move(message), 503, std::nullopt, true};
    return r;
  }
  return Refusal{rpc_code::kUnauthorized, std::move(message), 401, kind, false};
}

namespace {

AuthFailure failure_of(oauth::TokenFailure f) {
  using F = oauth::TokenFailure;
  switch (f) {
    case F::Malformed: return AuthFailure::Malformed;
    case F::UnknownKey: return AuthFailure::UnknownKey;
    case F::WrongAlgorithm: return AuthFailure::WrongAlgorithm;
    case F::BadSignature: return AuthFailure::BadSignature;
    case F::WrongIssuer: return AuthFailure::WrongIssuer;
    case F::WrongAudience: return AuthFailure::WrongAudience;
    case F::Expired: return AuthFailure::Expired;
    case F::NotYetValid:
    case F::IssuedInFuture: return AuthFailure::NotYetValid;
    case F::MissingTenant: return AuthFailure::MissingTenant;
    case F::BadTenant:
    case F::BadClaims: return AuthFailure::BadClaims;
    case F::Inactive: return AuthFailure::Rejected;
  }
  return AuthFailure::BadClaims;
}

ClientIdentity identity_of(oauth::AccessClaims&& c) {
  ClientIdentity id;
  id.tenant = std::move(c.tenant);
  id.uri_prefixes = std::move(c.uri_prefixes);
  id.uris_restricted = c.uris_restricted;
  id.exp = c.exp;
  id.subject = std::move(c.subject);
  id.scopes = std::move(c.scopes);
  id.scoped = true;
  id.client_id = std::move(c.client_id);
  return id;
}

}  // namespace

std::variant<ClientIdentity, Refusal, AuthPending> ClientCore::verify_oauth(std::string_view token, bool ours,
                                                                            const AuthWait* waited) {
  oauth::Agent* agent = oauth_;
  auto now = static_cast<std::int64_t>(std::time(nullptr));
  oauth::TokenVerdict verdict{oauth::TokenError{oauth::TokenFailure::Malformed, ""}};
  if (ours) {
    // The same token again (a client reconnecting): its verdict is kept, its signature not checked twice.
    if (auto kept = agent->verified_token(token, now)) return identity_of(std::move(*kept));
    std::shared_ptr<const oauth::KeySet> keys = agent->keys();
    bool refetched = waited && waited->keys_refetched;
    if (keys) verdict = oauth::verify_access_token(token, *keys, agent->policy(), now);
    auto* e = std::get_if<oauth::TokenError>(&verdict);
    bool unknown = !keys || (e && e->kind == oauth::TokenFailure::UnknownKey);
    if (unknown && !refetched) {
      // A key the set lacks may be a new one (rotation): fetch the JWKS again, rate-limited, and decide then.
      return AuthPending{[agent](std::function<void(AuthWait)> done) {
        return agent->refetch_keys([done = std::move(done)] { done(AuthWait{true, std::nullopt}); });
      }};
    }
    if (!keys) {
      std::string why = agent->last_error();
      return auth_refusal(AuthFailure::Unavailable, "the authorization server's keys are not available" +
                                                        (why.empty() ? std::string() : ": " + why));
    }
  } else if (waited && waited->introspected) {
    if (!waited->introspected->ok) {
      return auth_refusal(AuthFailure::Unavailable, "the token could not be introspected: " +
                                                        waited->introspected->error);
    }
    verdict = waited->introspected->verdict;
  } else if (auto kept = agent->cached_introspection(std::string(token), now)) {
    verdict = std::move(*kept);
  } else {
    return AuthPending{[agent, t = std::string(token)](std::function<void(AuthWait)> done) mutable {
      return agent->introspect(std::move(t), [done = std::move(done)](oauth::Introspected i) {
        done(AuthWait{false, std::move(i)});
      });
    }};
  }
  if (auto* e = std::get_if<oauth::TokenError>(&verdict)) return auth_refusal(failure_of(e->kind), e->message);
  auto& claims = std::get<oauth::AccessClaims>(verdict);
  if (ours) agent->keep_verified_token(token, claims, now);
  return identity_of(std::move(claims));
}

std::variant<std::monostate, Refusal, AuthPending> ClientCore::authorize(const Caller& caller, std::string_view method,
                                                                         ListenSpec& spec, const AuthWait* waited) {
  oauth::Agent* agent = oauth_;
  if (!agent || !agent->authorizes()) return std::monostate{};
  if (auto r = check_listen_scope(caller)) return std::move(*r);  // before the application is asked
  std::string tenant = caller.identity ? caller.identity->tenant : std::string(kDefaultTenantName);
  std::string question = oauth::authorize_question(tenant, caller.identity ? caller.identity->subject : "",
                                                   caller.identity ? caller.identity->client_id : "", method, spec);
  std::optional<oauth::AuthorizeAnswer> answer;
  if (waited && waited->authorized) {
    if (!waited->authorized->ok) {
      std::string message = "the application's authorization (--authorize-url) did not answer: " +
                            waited->authorized->error;
      return Refusal{rpc_code::kInternalError, std::move(message), 503, std::nullopt, true};
    }
    answer = waited->authorized->answer;
  } else {
    answer = agent->cached_authorization(question);
  }
  if (!answer) {
    return AuthPending{[agent, q = std::move(question)](std::function<void(AuthWait)> done) mutable {
      return agent->authorize(std::move(q), [done = std::move(done)](oauth::Authorized a) {
        AuthWait w;
        w.authorized = std::move(a);
        done(std::move(w));
      });
    }};
  }
  if (oauth::narrow_to(spec, answer->allowed)) return std::monostate{};
  counters_.client_forbidden_uri.fetch_add(1, std::memory_order_relaxed);
  return Refusal{rpc_code::kForbidden, "the application allows " + tenant + " none of what " + std::string(method) +
                                           " asked to watch (--authorize-url)",
                 403, std::nullopt, false};
}

std::optional<Refusal> ClientCore::check_listen_scope(const Caller& caller) {
  if (!oauth_ || !oauth_->tokens() || oauth_->listen_scope().empty() || !caller.identity ||
      !caller.identity->scoped) {
    return std::nullopt;
  }
  const auto& scopes = caller.identity->scopes;
  if (std::find(scopes.begin(), scopes.end(), oauth_->listen_scope()) != scopes.end()) return std::nullopt;
  counters_.client[static_cast<std::size_t>(AuthFailure::InsufficientScope)].fetch_add(1, std::memory_order_relaxed);
  std::string message = "the access token lacks the scope " + oauth_->listen_scope() + " that listens need";
  log_auth_failure("client", auth_failure_name(AuthFailure::InsufficientScope), message);
  return Refusal{rpc_code::kForbidden, std::move(message), 403, AuthFailure::InsufficientScope, false};
}

std::variant<ClientIdentity, Refusal> ClientCore::ask_host(std::string_view credential, ClientTransport transport) {
  std::variant<ClientGrant, ClientDenial> answer;
  // The callable is the host's code on a worker loop: whatever it throws stops here, as at
  // every libuv callback boundary, and is the host's bug (500), not the client's (401). What
  // it says goes to the operator's log, not to the client: it may quote the credential.
  try {
    answer = host_(ClientCredentials{credential, transport});
  } catch (const std::exception& e) {
    counters_.host_exceptions.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Error, "host_auth_exception", std::string("the host's authenticator threw: ") + e.what());
    return host_error("the host's authenticator failed (an exception)");
  } catch (...) {
    counters_.host_exceptions.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Error, "host_auth_exception", "the host's authenticator threw a non-standard exception");
    return host_error("the host's authenticator failed (an exception)");
  }
  if (auto* denied = std::get_if<ClientDenial>(&answer)) {
    counters_.client[static_cast<std::size_t>(AuthFailure::Rejected)].fetch_add(1, std::memory_order_relaxed);
    std::string message = denied->message.empty() ? "authentication refused" : std::move(denied->message);
    log_auth_failure("client", auth_failure_name(AuthFailure::Rejected),
                     "the host's authenticator refused: " + message);
    // Counted as rejected either way; the challenge carries no error code when nothing was sent (RFC 6750 §3).
    AuthFailure challenge = credential.empty() ? AuthFailure::Missing : AuthFailure::Rejected;
    return Refusal{rpc_code::kUnauthorized, std::move(message), 401, challenge, false};
  }
  auto& grant = std::get<ClientGrant>(answer);
  // The name becomes a metrics label and a log field: the token claim's rule holds for hosts too.
  if (!valid_tenant_name(grant.tenant)) {
    return host_error("the host's authenticator returned an invalid tenant name (1-64 characters of [A-Za-z0-9._-])");
  }
  ClientIdentity id;
  id.tenant = std::move(grant.tenant);
  id.uris_restricted = grant.uri_prefixes.has_value();
  if (grant.uri_prefixes) id.uri_prefixes = std::move(*grant.uri_prefixes);
  id.subject = std::move(grant.subject);
  return id;
}

Refusal ClientCore::host_error(std::string message) {
  counters_.client[static_cast<std::size_t>(AuthFailure::HostError)].fetch_add(1, std::memory_order_relaxed);
  log_auth_failure("client", auth_failure_name(AuthFailure::HostError), message);
  return Refusal{rpc_code::kInternalError, std::move(message), 500, {}, false};
}

Refusal ClientCore::credentials_required() {
  counters_.client[static_cast<std::size_t>(AuthFailure::Missing)].fetch_add(1, std::memory_order_relaxed);
  log_auth_failure("client", auth_failure_name(AuthFailure::Missing), "no credentials");
  return Refusal{rpc_code::kUnauthorized,
                 "authentication required: send \"Bearer <token>\" in params._meta[\"" +
                     std::string(kAuthorizationMetaKey) + "\"]",
                 401, AuthFailure::Missing, false};
}

Refusal ClientCore::wrong_tenant(TenantId bound) {
  counters_.client_wrong_tenant.fetch_add(1, std::memory_order_relaxed);
  log_auth_failure("client", "wrong_tenant", "a request for a connection bound to another tenant");
  return Refusal{
      rpc_code::kForbidden, "this connection is bound to tenant \"" + tenants_.name(bound) + "\"", 403, {}, false};
}

Refusal ClientCore::refusal(Limit limit, TenantId tenant) const {
  switch (limit) {
    case Limit::UrisPerListen:  // the session's own bound: a well-formed request with bad params
      return Refusal{rpc_code::kInvalidParams, per_client_refusal(limit, max_uris_), 200, {}, false};
    case Limit::ListensPerConnection:
      return Refusal{rpc_code::kLimitExceeded, per_client_refusal(limit, max_listens_), 429, {}, true};
    default: {
      // A ceiling in all (the server's, not the tenant's) is 503, like a full tenant table.
      int status = limit == Limit::Tenants || limit == Limit::IdleSessions ? 503 : 429;
      return Refusal{rpc_code::kLimitExceeded, limits_.refusal_message(limit, tenants_.name(tenant)), status, {}, true};
    }
  }
}

std::optional<Refusal> ClientCore::check_uri(const Caller& caller, const std::string& uri) {
  if (caller.may_subscribe(uri)) return std::nullopt;
  counters_.client_forbidden_uri.fetch_add(1, std::memory_order_relaxed);
  log_auth_failure("client", "forbidden_uri", "a resource URI the token does not cover");
  return Refusal{rpc_code::kInvalidParams, "resource URI not allowed for this token: " + uri, 403, {}, false};
}

std::optional<Refusal> ClientCore::check_uris(const Caller& caller, const std::vector<std::string>& uris) {
  for (const std::string& uri : uris) {
    if (auto r = check_uri(caller, uri)) return r;
  }
  return std::nullopt;
}

std::variant<ListenGrant, Refusal> ClientCore::admit_listen(const Caller& caller, ListenSpec& spec,
                                                            std::string_view id, bool declares_tasks) {
  if (auto r = check_listen_scope(caller)) return std::move(*r);
  if (auto missing = mcp::check_listen_capabilities(spec, declares_tasks)) {
    return Refusal{missing->error.code, std::move(missing->error.message), 400, {}, false, std::move(missing->data)};
  }
  if (auto r = check_uris(caller, spec.resource_uris)) return std::move(*r);
  if (task_owners_ && !spec.task_ids.empty()) {
    // A task belongs to its creator's authorization context (SEP-2663): the ids of another
    // principal's tasks are not agreed to, so the acknowledgement does not list them.
    const std::string tenant = tenants_.name(caller.tenant);
    std::string_view principal = caller.identity ? std::string_view(caller.identity->subject) : std::string_view();
    std::erase_if(spec.task_ids,
                  [&](const std::string& id) { return !task_owners_->may_watch(tenant, id, principal); });
  }
  ListenGrant grant;
  auto subs = static_cast<std::int64_t>(spec.resource_uris.size() + spec.task_ids.size());
  if (auto refused = StreamUsage::acquire(limits_, caller.tenant, subs, grant.usage))
    return refusal(*refused, caller.tenant);
  grant.plan = plan_listen(std::move(spec), caller.tenant, id);
  return grant;
}

void ClientCore::replay_task_states(Shard& shard, SubId sub, const Filter& filter) {
  if (filter.task_ids.empty() || !task_states_) return;
  const std::string tenant = tenants_.name(filter.tenant);
  for (const std::string& id : filter.task_ids) {
    if (PayloadRef state = task_states_->find(tenant, id)) shard.replay(sub, state);
  }
}

Filter ClientCore::session_filter(TenantId tenant, const SessionUris& uris) {
  Filter f;
  f.tenant = tenant;
  // A 2025 session hears every list change, and the resources it subscribed to.
  for (const KindInfo& k : kKinds) {
    if (!k.keyed() && k.in_2025_sessions) f.kinds |= kind_bit(k.kind);
  }
  f.uris.assign(uris.set().begin(), uris.set().end());
  return f;
}

}  // namespace mcpfan::detail

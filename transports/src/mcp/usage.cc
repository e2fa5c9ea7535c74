#include "mcp/usage.h"

namespace mcpfan::detail {

std::optional<Limit> TenantBinding::bind(TenantId tenant, TenantRef ref) {
  if (tenant == tenant_) return std::nullopt;  // `ref` goes: the binding holds one already
  if (!limits_->acquire(tenant, Resource::Connections)) return limits_->refusal(tenant, Resource::Connections);
  if (bound()) limits_->release(tenant_, Resource::Connections);
  tenant_ = tenant;
  ref_ = std::move(ref);  // the old tenant's reference goes after its usage
  return std::nullopt;
}

void TenantBinding::release() noexcept {
  if (bound()) limits_->release(tenant_, Resource::Connections);
  tenant_ = Limits::kNoTenant;
  ref_.reset();  // last: a tenant entry is reclaimed only once its usage is back to zero
}

StreamUsage& StreamUsage::operator=(StreamUsage&& o) noexcept {
  if (this != &o) {
    release();
    limits_ = std::exchange(o.limits_, nullptr);
    tenant_ = o.tenant_;
    subscriptions_ = o.subscriptions_;
  }
  return *this;
}

std::optional<Limit> StreamUsage::acquire(Limits& limits, TenantId tenant, std::int64_t subscriptions,
                                          StreamUsage& out) {
  if (!limits.acquire(tenant, Resource::Streams)) return limits.refusal(tenant, Resource::Streams);
  if (subscriptions > 0 && !limits.acquire(tenant, Resource::Subscriptions, subscriptions)) {
    limits.release(tenant, Resource::Streams);
    return limits.refusal(tenant, Resource::Subscriptions);
  }
  out.release();
  out.limits_ = &limits;
  out.tenant_ = tenant;
  out.subscriptions_ = subscriptions;
  return std::nullopt;
}

void StreamUsage::release() noexcept {
  if (!limits_) return;
  limits_->release(tenant_, Resource::Streams);
  if (subscriptions_ > 0) limits_->release(tenant_, Resource::Subscriptions, subscriptions_);
  limits_ = nullptr;
}

std::optional<Limit> SessionUris::add(const std::string& uri) {
  if (uris_.count(uri)) return std::nullopt;
  if (uris_.size() >= max_) {
    limits_.hit(Limit::UrisPerListen, tenant_);
    return Limit::UrisPerListen;
  }
  if (!limits_.acquire(tenant_, Resource::Subscriptions)) return limits_.refusal(tenant_, Resource::Subscriptions);
  try {
    uris_.insert(uri);
  } catch (...) {
    limits_.release(tenant_, Resource::Subscriptions);
    throw;
  }
  return std::nullopt;
}

bool SessionUris::remove(const std::string& uri) {
  if (uris_.erase(uri) == 0) return false;
  limits_.release(tenant_, Resource::Subscriptions);
  return true;
}

void SessionUris::clear() noexcept {
  if (!uris_.empty()) limits_.release(tenant_, Resource::Subscriptions, static_cast<std::int64_t>(uris_.size()));
  uris_.clear();
}

}  // namespace mcpfan::detail

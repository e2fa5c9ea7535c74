#include "mcpfan/tenants.h"

#include <algorithm>

namespace mcpfan {

TenantTable::TenantTable(std::size_t max_tenants) : max_tenants_(std::max<std::size_t>(max_tenants, 1)) {
  TenantId id = slots_.emplace(std::string(kDefaultTenantName));
  ids_.emplace(std::string(kDefaultTenantName), id);
}

std::optional<TenantId> TenantTable::acquire(std::string_view name) {
  std::lock_guard lock(mu_);
  if (auto it = ids_.find(name); it != ids_.end()) {
    ++slots_.get(it->second)->refs;
    return it->second;
  }
  if (slots_.size() >= max_tenants_) return std::nullopt;
  TenantId id = slots_.emplace(std::string(name));
  if (id.index >= max_tenants_) {  // only after 2^32 reuses retired every lower slot
    slots_.erase(id);
    return std::nullopt;
  }
  slots_.get(id)->refs = 1;
  try {
    ids_.emplace(std::string(name), id);
  } catch (...) {
    slots_.erase(id);
    throw;
  }
  if (on_new_slot_) on_new_slot_(id.index);
  return id;
}

bool TenantTable::retain(TenantId id) {
  std::lock_guard lock(mu_);
  Entry* e = slots_.get(id);
  if (!e) return false;
  ++e->refs;
  return true;
}

void TenantTable::release(TenantId id) noexcept {
  std::lock_guard lock(mu_);
  Entry* e = slots_.get(id);
  if (!e || e->refs == 0) return;
  if (--e->refs > 0 || id == kDefaultTenant) return;
  ids_.erase(ids_.find(std::string_view(e->name)));
  slots_.erase(id);
}

std::optional<TenantId> TenantTable::find(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

std::string TenantTable::name(TenantId id) const {
  std::lock_guard lock(mu_);
  const Entry* e = slots_.get(id);
  return e ? e->name : std::string();
}

std::size_t TenantTable::size() const {
  std::lock_guard lock(mu_);
  return slots_.size();
}

}  // namespace mcpfan

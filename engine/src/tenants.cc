#include "mcpfan/tenants.h"

namespace mcpfan {

TenantRegistry::TenantRegistry() { (void)intern("default"); }

TenantId TenantRegistry::intern(std::string_view name) {
  std::lock_guard lock(mu_);
  if (auto it = ids_.find(name); it != ids_.end()) return it->second;
  auto id = static_cast<TenantId>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

std::string TenantRegistry::name(TenantId id) const {
  std::lock_guard lock(mu_);
  return id < names_.size() ? names_[id] : std::string();
}

std::size_t TenantRegistry::size() const {
  std::lock_guard lock(mu_);
  return names_.size();
}

}  // namespace mcpfan

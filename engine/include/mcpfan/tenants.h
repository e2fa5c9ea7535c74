#pragma once
/**
 * Tenant names interned to small integer ids, so the hot path compares integers.
 * Thread-safe: interning takes a lock, which only the control path (new tenants) pays.
 */
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mcpfan {

using TenantId = std::uint32_t;
inline constexpr TenantId kDefaultTenant = 0;  // named "default"

class TenantRegistry {
 public:
  TenantRegistry();
  TenantRegistry(const TenantRegistry&) = delete;
  TenantRegistry& operator=(const TenantRegistry&) = delete;

  /** The id of `name`, creating it on first use. */
  [[nodiscard]] TenantId intern(std::string_view name);
  /** The name of an id (a copy: the table may grow concurrently). */
  [[nodiscard]] std::string name(TenantId id) const;
  [[nodiscard]] std::size_t size() const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  mutable std::mutex mu_;
  std::unordered_map<std::string, TenantId, Hash, std::equal_to<>> ids_;
  std::vector<std::string> names_;
};

}  // namespace mcpfan

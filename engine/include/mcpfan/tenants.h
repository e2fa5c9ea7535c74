#pragma once
/**
 * The tenants that have clients, by name, with generation-checked ids so the hot path
 * compares integers and a reclaimed id never names a newer tenant.
 *
 * Who creates a tenant: only an authenticated client (a connection, a 2025 session, a
 * --unix client) takes a reference with acquire(); the entry lives while references do and
 * is reclaimed when the last one is released. Publishing only looks tenants up with find():
 * a tenant nobody listens to has nothing to deliver, so a publish naming it interns nothing.
 * The table is bounded (`max_tenants`, the default tenant included); acquire() past it fails.
 *
 * Thread-safe: every method takes the table's lock (the control path: connects, sessions,
 * publishes' name lookups). Ids are plain values, safe to pass between threads; an id kept
 * after its tenant was reclaimed simply names nothing (name() is empty, find() differs).
 */
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "mcpfan/slot_map.h"

namespace mcpfan {

struct TenantTag;
using TenantId = Handle<TenantTag>;
/** Named "default": every client when no authentication is configured. Never reclaimed. */
inline constexpr TenantId kDefaultTenant{0, 0};
inline constexpr std::string_view kDefaultTenantName = "default";

class TenantTable {
 public:
  explicit TenantTable(std::size_t max_tenants = 10000);
  TenantTable(const TenantTable&) = delete;
  TenantTable& operator=(const TenantTable&) = delete;

  /**
   * Takes a reference on the tenant `name`, creating its entry on first use. nullopt when
   * the table already holds max_tenants() tenants (nothing is taken).
   */
  [[nodiscard]] std::optional<TenantId> acquire(std::string_view name);
  /** Takes one more reference on a live tenant; false (nothing taken) when `id` is stale. */
  [[nodiscard]] bool retain(TenantId id);
  /** Gives one reference back; the last one reclaims the entry (the default tenant stays). */
  void release(TenantId id) noexcept;
  /** The live tenant named `name`, without creating it. */
  [[nodiscard]] std::optional<TenantId> find(std::string_view name) const;
  /** The tenant's name (a copy: the table changes concurrently); empty when `id` is stale. */
  [[nodiscard]] std::string name(TenantId id) const;
  /** Live tenants, the default one included. */
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::size_t max_tenants() const noexcept { return max_tenants_; }

  /**
   * Called under the table's lock when a slot gets a new tenant, with the slot index, so a
   * side table (per-tenant usage counters) can reset what the slot's last tenant left. Set
   * it before the table is shared.
   */
  void set_on_new_slot(std::function<void(std::uint32_t slot)> fn) { on_new_slot_ = std::move(fn); }

  /** Calls f(TenantId, const std::string& name) for each live tenant in slot order, under the lock. */
  template <class F>
  void for_each(F&& f) const {
    std::lock_guard lock(mu_);
    const_cast<Slots&>(slots_).for_each([&](TenantId id, Entry& e) { f(id, std::as_const(e.name)); });
  }

 private:
  struct Entry {
    explicit Entry(std::string n) : name(std::move(n)) {}
    std::string name;
    std::uint64_t refs = 0;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  using Slots = SlotMap<Entry, TenantTag>;

  const std::size_t max_tenants_;
  mutable std::mutex mu_;
  Slots slots_;
  std::unordered_map<std::string, TenantId, Hash, std::equal_to<>> ids_;
  std::function<void(std::uint32_t)> on_new_slot_;
};

/**
 * One reference on a tenant, given back when destroyed. Move-only. Thread-compatible: the
 * table it points into must outlive it.
 */
class TenantRef {
 public:
  TenantRef() = default;
  TenantRef(TenantTable& table, TenantId id) noexcept : table_(&table), id_(id) {}
  TenantRef(TenantRef&& o) noexcept : table_(std::exchange(o.table_, nullptr)), id_(o.id_) {}
  TenantRef& operator=(TenantRef&& o) noexcept {
    if (this != &o) {
      reset();
      table_ = std::exchange(o.table_, nullptr);
      id_ = o.id_;
    }
    return *this;
  }
  TenantRef(const TenantRef&) = delete;
  TenantRef& operator=(const TenantRef&) = delete;
  ~TenantRef() { reset(); }

  void reset() noexcept {
    if (table_) table_->release(id_);
    table_ = nullptr;
  }
  [[nodiscard]] bool held() const noexcept { return table_ != nullptr; }
  [[nodiscard]] TenantId id() const noexcept { return id_; }

 private:
  TenantTable* table_ = nullptr;
  TenantId id_{};
};

}  // namespace mcpfan

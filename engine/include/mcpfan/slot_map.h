#pragma once
/**
 * Generation-checked handles and the one container that issues them.
 *
 * Streams, subscriptions and tenants are named by small integers that are reused once
 * freed, so that tables stay dense. A bare integer kept past its owner's end would then
 * name whoever got the slot next: `close_stream(old)` closing someone else's stream. A
 * Handle carries the slot's generation, bumped on every erase, so a stale handle is simply
 * not found: lookups return nullptr and erase returns false.
 *
 * Thread affinity: a SlotMap is not synchronised; its owner decides (shards use theirs on
 * their loop, the tenant table under its mutex). Handles are plain values, safe to copy
 * across threads; what they name is checked on use.
 */
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace mcpfan {

/** A typed, generation-checked slot number. `Tag` keeps stream, subscription and tenant handles apart. */
template <class Tag>
struct Handle {
  static constexpr std::uint32_t kNoIndex = ~std::uint32_t{0};
  std::uint32_t index = kNoIndex;
  std::uint32_t gen = 0;

  /** False for a default-constructed handle: it names nothing. */
  [[nodiscard]] constexpr bool valid() const noexcept { return index != kNoIndex; }
  friend constexpr bool operator==(Handle, Handle) noexcept = default;
  friend constexpr auto operator<=>(Handle, Handle) noexcept = default;  // index, then generation
};

/** Prints "index#gen" on any stream (for test failure messages and logs), without <ostream>. */
template <class Os, class Tag>
auto operator<<(Os& os, const Handle<Tag>& h) -> decltype(os << h.index) {
  return os << h.index << '#' << h.gen;
}

template <class T, class Tag>
class SlotMap {
 public:
  using Id = Handle<Tag>;

  SlotMap() = default;
  SlotMap(const SlotMap&) = delete;
  SlotMap& operator=(const SlotMap&) = delete;

  /** Constructs a value in a free slot (or a new one) and returns its handle. */
  template <class... Args>
  [[nodiscard]] Id emplace(Args&&... args) {
    std::uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    }
    Slot& s = slots_[i];
    s.value.emplace(std::forward<Args>(args)...);
    ++live_;
    return Id{i, s.gen};
  }

  /** The value `id` names, or nullptr when it was erased (or never issued). */
  [[nodiscard]] T* get(Id id) noexcept {
    if (id.index >= slots_.size()) return nullptr;
    Slot& s = slots_[id.index];
    return s.gen == id.gen && s.value ? &*s.value : nullptr;
  }
  [[nodiscard]] const T* get(Id id) const noexcept { return const_cast<SlotMap*>(this)->get(id); }
  [[nodiscard]] bool contains(Id id) const noexcept { return get(id) != nullptr; }

  /** Destroys the value; the slot's next occupant gets a new generation. False if stale. */
  bool erase(Id id) noexcept {
    if (!contains(id)) return false;
    Slot& s = slots_[id.index];
    s.value.reset();
    --live_;
    // A generation that would wrap retires its slot: a handle must never come back to life.
    if (++s.gen != 0) free_.push_back(id.index);
    return true;
  }

  /** Live values. */
  [[nodiscard]] std::size_t size() const noexcept { return live_; }
  /** Slots ever made (live or free): the bound for index-parallel side tables. */
  [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }

  /**
   * The handle of the live value in slot `index` (which must be live): for containers that
   * keep bare indices internally and hand out handles at their boundary.
   */
  [[nodiscard]] Id id_at(std::uint32_t index) const noexcept { return Id{index, slots_[index].gen}; }
  /** The live value in slot `index`, unchecked (internal references only). */
  [[nodiscard]] T& at(std::uint32_t index) noexcept { return *slots_[index].value; }

  /** Calls f(Id, T&) for each live value, in slot order. f must not insert or erase. */
  template <class F>
  void for_each(F&& f) {
    for (std::uint32_t i = 0; i < slots_.size(); ++i) {
      if (slots_[i].value) f(Id{i, slots_[i].gen}, *slots_[i].value);
    }
  }

 private:
  struct Slot {
    std::optional<T> value;
    std::uint32_t gen = 0;
  };
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_;
  std::size_t live_ = 0;
};

}  // namespace mcpfan

template <class Tag>
struct std::hash<mcpfan::Handle<Tag>> {
  std::size_t operator()(mcpfan::Handle<Tag> h) const noexcept {
    return std::hash<std::uint64_t>{}((std::uint64_t{h.gen} << 32) | h.index);
  }
};

#pragma once
// The node's interest in NATS subjects (docs/operations.md "Interest"): subject -> how many local
// subscriptions need it. Shards report deltas from their loops as subscriptions come and go;
// the backplane takes the resulting SUB/UNSUB operations in batches.
//
//  - A subject's first reference (0 -> 1) asks for a SUB in the next batch.
//  - Its last reference going (1 -> 0) asks for an UNSUB only after `linger`: interest that
//    drops and comes back within it (a reconnect storm, a client re-listening) sends nothing.
//  - A subject added and removed before any batch took it sends nothing either.
//  - Bounded: at most `max_subjects` subjects (referenced or lingering). When a new subject
//    would pass the bound, the tenant holding the most subjects is compacted: one subject for
//    all of it, `<scope>.>` (its SUB is sent before the UNSUBs of the subjects it replaces, so
//    no message falls between), and from then on that tenant's references count on it.
//    Over-matching is allowed on the backplane: the receiving node's index drops what it does
//    not want (mcpfan_backplane_unmatched_total). The tenant is itself again once its last
//    reference is gone and the wildcard's linger has passed. Only when no tenant has two
//    subjects to fold does add() refuse a new subject (counted).
//
// Thread-safety: every method may be called from any thread (one mutex; each operation is
// O(1) amortised, take() is O(ops returned)). Lifetime: owned by the backplane, which outlives
// the shards that report to it.
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mcpfan::detail::nats {

class InterestTable {
 public:
  struct Op {
    bool subscribe;       // SUB, else UNSUB
    std::string subject;
  };
  struct Stats {
    std::size_t subjects = 0;       // referenced or lingering (what the server holds or will)
    std::size_t lingering = 0;      // unreferenced, UNSUB pending
    std::uint64_t sub_ops = 0;      // taken so far
    std::uint64_t unsub_ops = 0;
    std::uint64_t refused = 0;      // add() past max_subjects with nothing to compact
    std::size_t compacted_tenants = 0;  // tenants subscribed as one `<scope>.>` now
    std::uint64_t compactions = 0;      // times a tenant was compacted
  };

  InterestTable(std::chrono::milliseconds linger, std::size_t max_subjects)
      : linger_ms_(static_cast<std::uint64_t>(linger.count())), max_subjects_(max_subjects) {}

  /**
   * One more local subscription needs `subject`, of the tenant whose subjects all start with
   * `scope` + "." (empty: a subject no compaction covers). False (counted) when a new subject
   * would pass the bound and no tenant can be compacted.
   */
  [[nodiscard]] bool add(std::string_view subject, std::string_view scope = {});
  /** One fewer needs it; `now_ms` starts the linger of a last reference. Unknown subjects are ignored. */
  void remove(std::string_view subject, std::uint64_t now_ms, std::string_view scope = {});
  /**
   * The operations due at `now_ms`, at most `max_ops`: SUBs of new subjects in the order they
   * were added, then UNSUBs whose linger has passed. What is returned is taken.
   */
  [[nodiscard]] std::vector<Op> take(std::uint64_t now_ms, std::size_t max_ops = SIZE_MAX);
  /**
   * After a reconnect the server knows nothing of ours: every referenced subject as a SUB
   * (nats.c re-sends its own subscriptions by itself; this is for a backplane that does not).
   */
  [[nodiscard]] std::vector<std::string> referenced() const;
  [[nodiscard]] Stats stats() const;

 private:
  struct Tenant {
    std::string scope;         // its key in tenants_
    std::size_t subjects = 0;  // entries of map_ in this scope (the wildcard included)
    bool compacted = false;    // its references count on `<scope>.>`
  };
  struct Entry {
    std::uint32_t refs = 0;
    bool subscribed = false;   // a SUB was taken (and no UNSUB since)
    bool sub_queued = false;   // in subs_, not taken yet
    bool unsub_queued = false; // in unsubs_ (once per subject: the queues stay within the bound)
    bool wildcard = false;     // a compacted tenant's `<scope>.>`
    bool folded = false;       // replaced by its tenant's wildcard: UNSUB at the next batch
    std::uint64_t unsub_at = 0;  // linger deadline while refs == 0 and subscribed
    Tenant* tenant = nullptr;  // node-stable (unordered_map), null without a scope
  };
  using Map = std::unordered_map<std::string, Entry>;
  bool add_locked(std::string_view subject, std::string_view scope, std::uint32_t refs);
  void remove_locked(std::string_view subject, std::uint64_t now_ms);
  /** Folds the tenant with the most subjects (at least two) into its wildcard; false if none has. */
  bool compact_largest();
  void maybe_erase(Map::iterator it);

  const std::uint64_t linger_ms_;
  const std::size_t max_subjects_;
  mutable std::mutex mu_;
  Map map_;
  std::unordered_map<std::string, Tenant> tenants_;  // scope -> tenant, while it has subjects
  std::deque<std::string> subs_;                              // SUBs to send, in order
  // (deadline when queued, subject), oldest first. Loop clocks of different workers differ by
  // milliseconds, so deadlines only nearly grow: an UNSUB may go out that much late (harmless:
  // interest held a little longer only over-matches).
  std::deque<std::pair<std::uint64_t, std::string>> unsubs_;
  std::size_t folding_ = 0;  // folded entries whose UNSUB is not taken yet (outside the bound)
  std::size_t lingering_ = 0;
  std::size_t compacted_ = 0;
  std::uint64_t sub_ops_ = 0, unsub_ops_ = 0, refused_ = 0, compactions_ = 0;
};

}  // namespace mcpfan::detail::nats

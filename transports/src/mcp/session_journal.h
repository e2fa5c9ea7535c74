#pragma once
// What a 2025-era session's GET stream carried, so a client that reconnects with
// Last-Event-ID gets what it missed (docs/protocol.md "Resumable 2025
// sessions").
//
// Every notification matched for the session gets the next number of the session's one
// counter (its SSE event id, format below), whether a live GET stream writes it or the
// session is parked (no stream: recorded only). The journal keeps the newest notification per
// (method, uri) — list_changed kinds keyed by method — so a long outage costs at most one
// entry per changed resource, within a byte bound. Evicting the oldest entry raises the
// floor: a cursor below it cannot be resumed exactly, and gets the re-read answer instead
// (notifications that make the client re-read its state), as does a cursor that is not this
// session's (unparsable, another session's tag, or ahead of the counter).
//
// Not thread-safe: guarded by its Session's mutex.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mcpfan/payload.h"

namespace mcpfan::detail {

/**
 * An event id on a session's GET stream: `<tag>-<seq>`, the session's random tag in 8
 * lowercase hex digits and the sequence number in decimal (visible ASCII). The tag makes
 * another session's ids recognisable as foreign; nothing else is looked up by it.
 */
struct Cursor {
  std::uint32_t tag = 0;
  std::uint64_t seq = 0;
};
[[nodiscard]] std::string format_cursor(Cursor c);
/**
 * The cursor in a Last-Event-ID value, or nullopt for anything format_cursor() did not make.
 * On a session behind the front proxy an id may also carry the upstream's own last event id
 * after a '~' (`<tag>-<seq>~<upstream id>`): the cursor is what comes before it.
 */
[[nodiscard]] std::optional<Cursor> parse_cursor(std::string_view text) noexcept;
/** The upstream's event id in a proxied session's id (after the '~' of a valid cursor), or nullopt. */
[[nodiscard]] std::optional<std::string_view> upstream_event_id(std::string_view text) noexcept;
/** Whether an upstream's event id can ride along in ours: visible ASCII, not too long. */
[[nodiscard]] bool carriable_event_id(std::string_view id) noexcept;

class SessionJournal {
 public:
  /** Bytes charged per entry on top of its frame (keys, bookkeeping). */
  static constexpr std::size_t kEntryOverhead = 128;

  SessionJournal(std::uint32_t tag, std::size_t max_bytes) : tag_(tag), max_bytes_(max_bytes) {}

  [[nodiscard]] std::uint32_t tag() const noexcept { return tag_; }
  /** The last number handed out (0: none yet): a priming event's id. */
  [[nodiscard]] std::uint64_t last() const noexcept { return last_; }
  /** Entries with seq <= floor() may have been evicted. */
  [[nodiscard]] std::uint64_t floor() const noexcept { return floor_; }
  [[nodiscard]] std::size_t size() const noexcept { return by_key_.size(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

  /**
   * Records `p`, matched for one of the session's streams; `live` when that stream is the
   * session's current GET stream. Returns the number to send it under on that stream, or
   * nullopt: not live (recorded for a later resume), or already sent live (the same
   * notification reached the session's previous stream too, while a new GET took over).
   * `evicted` counts the entries this pushed out.
   */
  [[nodiscard]] std::optional<std::uint64_t> record(const PayloadRef& p, bool live, std::size_t& evicted);

  /** A fresh number, for an event that is not journaled (the re-read hints). */
  [[nodiscard]] std::uint64_t next() noexcept { return ++last_; }

  struct Resume {
    bool reread = false;                                  // the cursor is not resumable here
    std::uint64_t prime = 0;  // the priming event's id: the cursor when resumed, else last()
    std::vector<std::pair<std::uint64_t, PayloadRef>> events;  // seq > cursor, in seq order
  };
  /**
   * A new GET stream starts live. With a Last-Event-ID (`last_event_id` non-null): what it
   * missed, or `reread`. Either way everything journaled counts as sent on the new stream.
   * Without: nothing is replayed. Later live numbers are above last().
   */
  [[nodiscard]] Resume start_live(const std::string* last_event_id);

 private:
  struct Entry {
    std::uint64_t seq = 0;
    PayloadRef payload;
    std::size_t bytes = 0;
    bool live_sent = false;  // written by the current GET stream
  };
  static void key_of(const Payload& p, std::string& out);
  void renumber(Entry& e, std::uint64_t seq);  // moves e to `seq` in order_
  std::size_t evict();

  const std::uint32_t tag_;
  const std::size_t max_bytes_;
  std::uint64_t last_ = 0;
  std::uint64_t floor_ = 0;
  std::uint64_t live_high_ = 0;  // highest number sent on the current GET stream
  std::size_t bytes_ = 0;
  std::unordered_map<std::string, Entry> by_key_;
  std::map<std::uint64_t, const std::string*> order_;  // seq -> its key in by_key_ (node keys are stable)
  std::string key_;  // record()'s lookup buffer
};

}  // namespace mcpfan::detail

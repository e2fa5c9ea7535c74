#include "mcp/session_journal.h"

#include <charconv>
#include <cstdio>

namespace mcpfan::detail {

std::string format_cursor(Cursor c) {
  char buf[32];
  int n =
      std::snprintf(buf, sizeof buf, "%08x-%llu", static_cast<unsigned>(c.tag), static_cast<unsigned long long>(c.seq));
  return std::string(buf, static_cast<std::size_t>(n));
}

std::optional<Cursor> parse_cursor(std::string_view text) noexcept {
  text = text.substr(0, text.find('~'));  // a proxied session's id: the upstream's follows
  // Exactly what format_cursor() writes: 8 lowercase hex digits, '-', decimal without sign
  // or leading zeros (so one number has one spelling).
  if (text.size() < 10 || text.size() > 29 || text[8] != '-') return std::nullopt;
  Cursor c;
  for (std::size_t i = 0; i < 8; ++i) {
    char ch = text[i];
    unsigned v;
    if (ch >= '0' && ch <= '9') v = static_cast<unsigned>(ch - '0');
    else if (ch >= 'a' && ch <= 'f') v = static_cast<unsigned>(ch - 'a' + 10);
    else return std::nullopt;
    c.tag = (c.tag << 4) | v;
  }
  std::string_view num = text.substr(9);
  if (num.size() > 1 && num[0] == '0') return std::nullopt;
  for (char ch : num) {
    if (ch < '0' || ch > '9') return std::nullopt;
  }
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), c.seq);
  if (ec != std::errc() || end != num.data() + num.size()) return std::nullopt;  // overflow
  return c;
}

std::optional<std::string_view> upstream_event_id(std::string_view text) noexcept {
  std::size_t tilde = text.find('~');
  if (tilde == std::string_view::npos || !parse_cursor(text)) return std::nullopt;
  return text.substr(tilde + 1);
}

bool carriable_event_id(std::string_view id) noexcept {
  if (id.empty() || id.size() > 256) return false;
  for (char ch : id) {
    if (ch < 0x21 || ch > 0x7e) return false;
  }
  return true;
}

void SessionJournal::key_of(const Payload& p, std::string& out) {
  out.clear();
  out.push_back(static_cast<char>('0' + static_cast<int>(p.kind())));
  out.append(p.uri());
}

std::optional<std::uint64_t> SessionJournal::record(const PayloadRef& p, bool live, std::size_t& evicted) {
  evicted = 0;
  key_of(*p, key_);  // a reused buffer: a lookup of a known key allocates nothing
  auto it = by_key_.find(key_);
  if (it != by_key_.end() && it->second.payload.get() == p.get()) {
    // The same notification again: it matched the session's previous stream too (a GET took
    // over and the old stream is not closed yet). Recorded once; sent once on the live one.
    Entry& e = it->second;
    if (!live || e.live_sent) return std::nullopt;
    e.live_sent = true;
    if (e.seq < live_high_) renumber(e, ++last_);  // keep the ids on the wire increasing
    live_high_ = e.seq;
    return e.seq;
  }
  std::uint64_t seq = ++last_;
  std::size_t size = p->plain(Framing::Sse).size() + kEntryOverhead;
  if (it == by_key_.end()) {
    it = by_key_.emplace(key_, Entry{}).first;
    it->second = Entry{seq, p, size, live};
    order_.emplace(seq, &it->first);
  } else {  // a newer notification for the key replaces the older one
    Entry& e = it->second;
    bytes_ -= e.bytes;
    renumber(e, seq);
    e.payload = p;
    e.bytes = size;
    e.live_sent = live;
  }
  bytes_ += size;
  evicted = evict();
  if (live) live_high_ = seq;
  if (!live) return std::nullopt;
  return seq;
}

void SessionJournal::renumber(Entry& e, std::uint64_t seq) {
  auto node = order_.extract(e.seq);  // the node is reused: no allocation
  node.key() = seq;
  order_.insert(std::move(node));
  e.seq = seq;
}

std::size_t SessionJournal::evict() {
  std::size_t n = 0;
  while (bytes_ > max_bytes_ && !order_.empty()) {
    auto first = order_.begin();
    auto it = by_key_.find(*first->second);
    floor_ = first->first;
    bytes_ -= it->second.bytes;
    order_.erase(first);
    by_key_.erase(it);
    ++n;
  }
  return n;
}

SessionJournal::Resume SessionJournal::start_live(const std::string* last_event_id) {
  Resume r;
  live_high_ = last_;
  r.prime = last_;
  if (!last_event_id) return r;
  std::optional<Cursor> c = parse_cursor(*last_event_id);
  r.reread = !c || c->tag != tag_ || c->seq > last_ || c->seq < floor_;
  if (!r.reread) r.prime = c->seq;  // the replay's ids follow it
  for (auto it = r.reread ? order_.end() : order_.upper_bound(c->seq); it != order_.end(); ++it) {
    r.events.emplace_back(it->first, by_key_.at(*it->second).payload);
  }
  for (auto& [key, e] : by_key_) e.live_sent = true;  // replayed, seen before the cursor, or re-read
  return r;
}

}  // namespace mcpfan::detail

#include "nats/peers.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "mcpfan/json_text.h"

namespace mcpfan::detail::nats {

namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr std::uint64_t kMinIntervalMs = 10;  // a sender's claim below this is taken as this

void append_field(std::string& out, std::string_view name, std::uint64_t v) {
  out += ",\"";
  out += name;
  out += "\":";
  out += std::to_string(v);
}

}  // namespace

void append_instance_hex(std::string& out, std::uint64_t instance) {
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(instance >> shift) & 15u];
}

std::string encode_heartbeat(const Heartbeat& hb) {
  std::string out = R"({"instance":")";
  append_instance_hex(out, hb.instance);
  out += R"(","node":)";
  std::string_view node(hb.node);
  // Cut at a byte boundary: append_json_string escapes whatever it gets, so the result stays valid JSON.
  append_json_string(out, node.substr(0, kMaxHeartbeatNodeBytes));
  append_field(out, "seq", hb.seq);
  append_field(out, "faults", hb.faults);
  append_field(out, "sent", hb.sent);
  append_field(out, "interval_ms", hb.interval_ms);
  if (hb.leaving) out += R"(,"leaving":true)";
  out += '}';
  return out;
}

std::optional<Heartbeat> decode_heartbeat(std::string_view body) {
  if (body.empty() || body.size() > kMaxHeartbeatBytes) return std::nullopt;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object root;
  if (parser.parse(body.data(), body.size()).get(root) != simdjson::SUCCESS) return std::nullopt;
  Heartbeat hb;
  std::string_view instance, node;
  if (root["instance"].get(instance) != simdjson::SUCCESS || instance.size() != 16) return std::nullopt;
  if (std::from_chars(instance.data(), instance.data() + instance.size(), hb.instance, 16).ptr !=
          instance.data() + instance.size() ||
      hb.instance == 0) {
    return std::nullopt;
  }
  if (root["node"].get(node) != simdjson::SUCCESS || node.size() > 6 * kMaxHeartbeatNodeBytes) return std::nullopt;
  hb.node = std::string(node);
  if (root["seq"].get(hb.seq) != simdjson::SUCCESS || hb.seq == 0) return std::nullopt;
  if (root["faults"].get(hb.faults) != simdjson::SUCCESS) return std::nullopt;
  if (root["sent"].get(hb.sent) != simdjson::SUCCESS) return std::nullopt;
  if (root["interval_ms"].get(hb.interval_ms) != simdjson::SUCCESS || hb.interval_ms == 0) return std::nullopt;
  if (simdjson::dom::element leaving;
      root["leaving"].get(leaving) == simdjson::SUCCESS && leaving.get(hb.leaving) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  return hb;
}

void PeerTable::listening(std::uint64_t now_ms) {
  std::lock_guard lock(mu_);
  if (listening_since_ms_ == 0) listening_since_ms_ = now_ms;
}

std::uint64_t PeerTable::silent_after(const Peer& p) const noexcept {
  return limits_.silent_beats * std::max(p.interval_ms, kMinIntervalMs);
}

PeerTable::Miss PeerTable::heard(const Heartbeat& hb, std::uint64_t now_ms) {
  if (hb.instance == self_) return Miss::None;  // no echo is asked of NATS, but a second connection could
  std::lock_guard lock(mu_);
  ++counts_.heard;
  auto it = peers_.find(hb.instance);
  if (it == peers_.end()) {
    if (hb.leaving) return Miss::None;  // never heard, now gone
    if (peers_.size() >= limits_.max_peers) {
      ++counts_.refused;
      return Miss::None;
    }
    peers_.emplace(hb.instance, Peer{hb.seq, hb.faults, hb.interval_ms, now_ms, false});
    // Heartbeat seq-1 left the sender about one of its intervals ago: listening for two, it
    // should have been heard. (A peer that started later begins at 1.)
    const std::uint64_t interval = std::max(hb.interval_ms, kMinIntervalMs);
    if (hb.seq > 1 && listening_since_ms_ != 0 && now_ms >= listening_since_ms_ + 2 * interval) {
      ++counts_.late;
      return Miss::Late;
    }
    return Miss::None;
  }
  Peer& p = it->second;
  p.last_ms = now_ms;
  p.silent = false;
  p.interval_ms = hb.interval_ms;
  if (hb.seq <= p.seq) return Miss::None;  // a repeat or a reordering: nothing new
  const bool gap = hb.seq > p.seq + 1;
  const bool faults = hb.faults > p.faults;
  p.seq = hb.seq;
  p.faults = std::max(p.faults, hb.faults);
  if (hb.leaving) {
    peers_.erase(it);
    ++counts_.left;
  }
  if (gap) {
    ++counts_.gaps;
    return Miss::Gap;
  }
  if (faults) {
    ++counts_.faults;
    return Miss::Faults;
  }
  return Miss::None;
}

std::size_t PeerTable::sweep(std::uint64_t now_ms) {
  std::lock_guard lock(mu_);
  std::size_t silenced = 0;
  for (auto it = peers_.begin(); it != peers_.end();) {
    Peer& p = it->second;
    const std::uint64_t quiet = now_ms > p.last_ms ? now_ms - p.last_ms : 0;
    if (p.silent && quiet >= std::max(limits_.forget_ms, 2 * silent_after(p))) {
      it = peers_.erase(it);
      ++counts_.forgotten;
      continue;
    }
    if (!p.silent && quiet >= silent_after(p)) {
      p.silent = true;
      ++silenced;
      ++counts_.silences;
    }
    ++it;
  }
  return silenced;
}

PeerTable::Stats PeerTable::stats() const {
  std::lock_guard lock(mu_);
  Stats s = counts_;
  s.peers = peers_.size();
  s.silent = static_cast<std::size_t>(
      std::count_if(peers_.begin(), peers_.end(), [](const auto& e) { return e.second.silent; }));
  return s;
}

}  // namespace mcpfan::detail::nats

// The NATS backplane's numbers as /metrics (mcpfan_backplane_*) and /status.json ("backplane")
// show them: one row per family, in the order both list them (docs/operations.md "Backplane metrics").
#include "nats/backplane.h"

namespace mcpfan::detail::nats {

BackplaneReport Backplane::report_of(const Stats& s) {
  using Form = BackplaneFigure::Form;
  constexpr MetricType kCounter = MetricType::Counter;
  constexpr MetricType kGauge = MetricType::Gauge;
  auto d = [](auto v) { return static_cast<double>(v); };
  BackplaneReport r;
  r.health = BackplaneHealth{s.connected, s.queued, s.lag_seconds, s.refused, s.blind_seconds, s.peers.peers,
                             s.peers.silent};
  r.figures = {
      {"mcpfan_backplane_connected", kGauge, "1 while connected to a NATS server.", "connected", Form::Flag,
       s.connected ? 1.0 : 0.0},
      {"mcpfan_backplane_subjects", kGauge, "NATS subjects this node subscribes to (incl. lingering ones).", "subjects",
       Form::Count, d(s.subjects)},
      {"mcpfan_backplane_compacted_tenants", kGauge,
       "Tenants subscribed as one <prefix>.v1.<tenant>.> subject because --nats-max-subjects was reached.",
       "compacted_tenants", Form::Count, d(s.compacted_tenants)},
      {"mcpfan_backplane_compactions_total", kCounter, "Times a tenant's subjects were folded into one.", "compactions",
       Form::Count, d(s.compactions)},
      {"mcpfan_backplane_sub_ops_total", kCounter, "SUB and UNSUB operations sent to NATS.", "sub_ops", Form::Count,
       d(s.sub_ops + s.unsub_ops)},
      {"mcpfan_backplane_sent_total", kCounter, "Notifications sent to other nodes.", "sent", Form::Count, d(s.sent)},
      {"mcpfan_backplane_received_total", kCounter, "Notifications received from other nodes.", "received", Form::Count,
       d(s.received)},
      {"mcpfan_backplane_unmatched_total", kCounter,
       "Received notifications no local subscription matched (hash, fold or folded-tenant over-match, or a subscriber "
       "just gone).",
       "unmatched", Form::Count, d(s.unmatched)},
      {"mcpfan_backplane_queued", kGauge,
       "Notifications for other nodes waiting: NATS unreachable, or within the settle delay after a reconnect.",
       "queued", Form::Count, d(s.queued)},
      {"mcpfan_backplane_held_bytes", kGauge,
       "Bytes of notifications for other nodes admitted and not yet sent (queued, or held by the debouncer); at most "
       "--nats-outage-buffer-bytes.",
       "held_bytes", Form::Count, d(s.held_bytes)},
      {"mcpfan_backplane_receive_bytes", kGauge,
       "Bytes received from other nodes and not yet matched by the worker loops; at most --nats-receive-buffer-bytes.",
       "receive_bytes", Form::Count, d(s.receive_bytes)},
      // Fractional: the one family whose values are not whole (its name ends in _seconds).
      {"mcpfan_backplane_lag_seconds", kGauge,
       "How long the oldest notification for other nodes has waited (0 when none waits).", "lag_seconds",
       Form::Seconds, s.lag_seconds},
      {"mcpfan_backplane_refused_total", kCounter,
       "Publishes refused (503) while NATS was unreachable and the outage buffer full.", "refused", Form::Count,
       d(s.refused)},
      {"mcpfan_backplane_reread_waves_total", kCounter,
       "Times every local listener was sent re-read hints after a miss (a disconnect, a slow consumer, a received "
       "notification dropped, a miss another node's heartbeats revealed).",
       "reread_waves", Form::Count, d(s.reread_waves)},
      {"mcpfan_backplane_reread_hints_total", kCounter,
       "Re-read hints those waves posted (one per watched resource key, one per tenant and list kind).",
       "reread_hints", Form::Count, d(s.reread_hints)},
      {"mcpfan_backplane_faults_total", kCounter,
       "Times this node may have lost notifications it sent (a disconnect, a notification given up), told to the "
       "other nodes in its heartbeats.",
       "faults", Form::Count, d(s.faults)},
      {"mcpfan_backplane_heartbeats_sent_total", kCounter, "Heartbeats this node published (--nats-heartbeat-ms).",
       "heartbeats_sent", Form::Count, d(s.heartbeats_sent)},
      {"mcpfan_backplane_heartbeats_received_total", kCounter, "Heartbeats heard from other nodes.",
       "heartbeats_received", Form::Count, d(s.peers.heard)},
      {"mcpfan_backplane_peers", kGauge, "Other nodes heard by their heartbeats and not forgotten (at most 1,024).",
       "peers", Form::Count, d(s.peers.peers)},
      {"mcpfan_backplane_peers_silent", kGauge,
       "Of them, those whose heartbeats stopped (four of their intervals): dead, or the path to them down.",
       "peers_silent", Form::Count, d(s.peers.silent)},
      {"mcpfan_backplane_peers_refused_total", kCounter,
       "Heartbeats of a new node not tracked because 1,024 peers were known.", "peers_refused", Form::Count,
       d(s.peers.refused)},
      {"mcpfan_backplane_peers_forgotten_total", kCounter,
       "Silent peers dropped from the table (60 s after they were last heard).", "peers_forgotten", Form::Count,
       d(s.peers.forgotten)},
      {"mcpfan_backplane_peers_left_total", kCounter,
       "Peers dropped from the table at their last heartbeat, sent as they stopped.", "peers_left", Form::Count,
       d(s.peers.left)},
      {"mcpfan_backplane_dropped_total", kCounter,
       "Notifications or subjects lost on the backplane: slow-consumer drops, failed publishes, subjects past the "
       "bound.",
       "dropped", Form::Count, d(s.dropped)},
  };
  // Received messages dropped, by reason (nats/inbound.h).
  BackplaneFigure rejected{"mcpfan_backplane_rejected_total", kCounter,
                           "Received messages dropped, by reason: malformed, batch (more than one notification), "
                           "tenant or subject (the body does not match the subject it arrived on), receive_budget, "
                           "inbox_full, own (this node's own message, back through another server).",
                           "rejected", Form::Count, 0};
  rejected.label = "reason";
  for (std::size_t i = 0; i < kRejectReasons; ++i) {
    rejected.by_label.emplace_back(reject_name(static_cast<Reject>(i)), s.rejected[i]);
  }
  r.figures.push_back(std::move(rejected));
  // What the heartbeats revealed (nats/peers.h): each one brings a wave of re-read hints.
  BackplaneFigure misses{"mcpfan_backplane_peer_misses_total", kCounter,
                         "Misses other nodes' heartbeats revealed, by kind: gap (a skipped heartbeat), faults (the "
                         "peer may have lost what it sent), late (first heard past its start), silent (stopped).",
                         "peer_misses", Form::Count, 0};
  misses.label = "kind";
  misses.by_label = {{"gap", s.peers.gaps}, {"faults", s.peers.faults}, {"late", s.peers.late},
                     {"silent", s.peers.silences}};
  r.figures.push_back(std::move(misses));
  return r;
}

}  // namespace mcpfan::detail::nats

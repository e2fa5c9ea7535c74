// The NATS backplane's report (nats/report.cc) is what /metrics and /status.json show of it:
// the text of every mcpfan_backplane_* family and of the "backplane" object, byte for byte as
// they were written when the renderers read the backplane's fields themselves.
#include <gtest/gtest.h>

#include <string>

#include "nats/backplane.h"
#include "server/metrics.h"
#include "status/status.h"

namespace mcpfan::detail::nats {
namespace {

StatsSnapshot snapshot() {
  Backplane::Stats b;
  b.connected = true;
  b.subjects = 3;
  b.compacted_tenants = 1;
  b.compactions = 2;
  b.sub_ops = 4;
  b.unsub_ops = 1;
  b.sent = 11;
  b.received = 7;
  b.unmatched = 1;
  b.queued = 2;
  b.held_bytes = 300;
  b.receive_bytes = 40;
  b.lag_seconds = 0.25;
  b.refused = 5;
  b.dropped = 6;
  b.reread_waves = 7;
  b.reread_hints = 8;
  b.rejected = {1, 2, 3, 4, 5, 6, 7};
  b.faults = 9;
  b.heartbeats_sent = 10;
  b.peers.peers = 2;
  b.peers.silent = 1;
  b.peers.gaps = 1;
  b.peers.faults = 2;
  b.peers.late = 3;
  b.peers.silences = 4;
  b.peers.heard = 12;
  b.peers.refused = 13;
  b.peers.forgotten = 14;
  b.peers.left = 15;
  StatsSnapshot s;
  s.backplane = Backplane::report_of(b);
  return s;
}

TEST(Report, MetricsText) {
  const std::string text = render_prometheus(snapshot());
  const std::string families =
      "# HELP mcpfan_backplane_connected 1 while connected to a NATS server.\n"
      "# TYPE mcpfan_backplane_connected gauge\n"
      "mcpfan_backplane_connected 1\n"
      "# HELP mcpfan_backplane_subjects NATS subjects this node subscribes to (incl. lingering ones).\n"
      "# TYPE mcpfan_backplane_subjects gauge\n"
      "mcpfan_backplane_subjects 3\n"
      "# HELP mcpfan_backplane_compacted_tenants Tenants subscribed as one <prefix>.v1.<tenant>.> subject because "
      "--nats-max-subjects was reached.\n"
      "# TYPE mcpfan_backplane_compacted_tenants gauge\n"
      "mcpfan_backplane_compacted_tenants 1\n"
      "# HELP mcpfan_backplane_compactions_total Times a tenant's subjects were folded into one.\n"
      "# TYPE mcpfan_backplane_compactions_total counter\n"
      "mcpfan_backplane_compactions_total 2\n"
      "# HELP mcpfan_backplane_sub_ops_total SUB and UNSUB operations sent to NATS.\n"
      "# TYPE mcpfan_backplane_sub_ops_total counter\n"
      "mcpfan_backplane_sub_ops_total 5\n"
      "# HELP mcpfan_backplane_sent_total Notifications sent to other nodes.\n"
      "# TYPE mcpfan_backplane_sent_total counter\n"
      "mcpfan_backplane_sent_total 11\n"
      "# HELP mcpfan_backplane_received_total Notifications received from other nodes.\n"
      "# TYPE mcpfan_backplane_received_total counter\n"
      "mcpfan_backplane_received_total 7\n"
      "# HELP mcpfan_backplane_unmatched_total Received notifications no local subscription matched (hash, fold or "
      "folded-tenant over-match, or a subscriber just gone).\n"
      "# TYPE mcpfan_backplane_unmatched_total counter\n"
      "mcpfan_backplane_unmatched_total 1\n"
      "# HELP mcpfan_backplane_queued Notifications for other nodes waiting: NATS unreachable, or within the settle "
      "delay after a reconnect.\n"
      "# TYPE mcpfan_backplane_queued gauge\n"
      "mcpfan_backplane_queued 2\n"
      "# HELP mcpfan_backplane_held_bytes Bytes of notifications for other nodes admitted and not yet sent (queued, or "
      "held by the debouncer); at most --nats-outage-buffer-bytes.\n"
      "# TYPE mcpfan_backplane_held_bytes gauge\n"
      "mcpfan_backplane_held_bytes 300\n"
      "# HELP mcpfan_backplane_receive_bytes Bytes received from other nodes and not yet matched by the worker loops; "
      "at most --nats-receive-buffer-bytes.\n"
      "# TYPE mcpfan_backplane_receive_bytes gauge\n"
      "mcpfan_backplane_receive_bytes 40\n"
      "# HELP mcpfan_backplane_lag_seconds How long the oldest notification for other nodes has waited (0 when none "
      "waits).\n"
      "# TYPE mcpfan_backplane_lag_seconds gauge\n"
      "mcpfan_backplane_lag_seconds 0.250\n"
      "# HELP mcpfan_backplane_refused_total Publishes refused (503) while NATS was unreachable and the outage buffer "
      "full.\n"
      "# TYPE mcpfan_backplane_refused_total counter\n"
      "mcpfan_backplane_refused_total 5\n"
      "# HELP mcpfan_backplane_reread_waves_total Times every local listener was sent re-read hints after a miss (a "
      "disconnect, a slow consumer, a received notification dropped, a miss another node's heartbeats revealed).\n"
      "# TYPE mcpfan_backplane_reread_waves_total counter\n"
      "mcpfan_backplane_reread_waves_total 7\n"
      "# HELP mcpfan_backplane_reread_hints_total Re-read hints those waves posted (one per watched resource key, one "
      "per tenant and list kind).\n"
      "# TYPE mcpfan_backplane_reread_hints_total counter\n"
      "mcpfan_backplane_reread_hints_total 8\n"
      "# HELP mcpfan_backplane_faults_total Times this node may have lost notifications it sent (a disconnect, a "
      "notification given up), told to the other nodes in its heartbeats.\n"
      "# TYPE mcpfan_backplane_faults_total counter\n"
      "mcpfan_backplane_faults_total 9\n"
      "# HELP mcpfan_backplane_heartbeats_sent_total Heartbeats this node published (--nats-heartbeat-ms).\n"
      "# TYPE mcpfan_backplane_heartbeats_sent_total counter\n"
      "mcpfan_backplane_heartbeats_sent_total 10\n"
      "# HELP mcpfan_backplane_heartbeats_received_total Heartbeats heard from other nodes.\n"
      "# TYPE mcpfan_backplane_heartbeats_received_total counter\n"
      "mcpfan_backplane_heartbeats_received_total 12\n"
      "# HELP mcpfan_backplane_peers Other nodes heard by their heartbeats and not forgotten (at most 1,024).\n"
      "# TYPE mcpfan_backplane_peers gauge\n"
      "mcpfan_backplane_peers 2\n"
      "# HELP mcpfan_backplane_peers_silent Of them, those whose heartbeats stopped (four of their intervals): dead, "
      "or the path to them down.\n"
      "# TYPE mcpfan_backplane_peers_silent gauge\n"
      "mcpfan_backplane_peers_silent 1\n"
      "# HELP mcpfan_backplane_peers_refused_total Heartbeats of a new node not tracked because 1,024 peers were "
      "known.\n"
      "# TYPE mcpfan_backplane_peers_refused_total counter\n"
      "mcpfan_backplane_peers_refused_total 13\n"
      "# HELP mcpfan_backplane_peers_forgotten_total Silent peers dropped from the table (60 s after they were last "
      "heard).\n"
      "# TYPE mcpfan_backplane_peers_forgotten_total counter\n"
      "mcpfan_backplane_peers_forgotten_total 14\n"
      "# HELP mcpfan_backplane_peers_left_total Peers dropped from the table at their last heartbeat, sent as they "
      "stopped.\n"
      "# TYPE mcpfan_backplane_peers_left_total counter\n"
      "mcpfan_backplane_peers_left_total 15\n"
      "# HELP mcpfan_backplane_dropped_total Notifications or subjects lost on the backplane: slow-consumer drops, "
      "failed publishes, subjects past the bound.\n"
      "# TYPE mcpfan_backplane_dropped_total counter\n"
      "mcpfan_backplane_dropped_total 6\n"
      "# HELP mcpfan_backplane_rejected_total Received messages dropped, by reason: malformed, batch (more than one "
      "notification), tenant or subject (the body does not match the subject it arrived on), receive_budget, "
      "inbox_full, own (this node's own message, back through another server).\n"
      "# TYPE mcpfan_backplane_rejected_total counter\n"
      "mcpfan_backplane_rejected_total{reason=\"malformed\"} 1\n"
      "mcpfan_backplane_rejected_total{reason=\"batch\"} 2\n"
      "mcpfan_backplane_rejected_total{reason=\"tenant\"} 3\n"
      "mcpfan_backplane_rejected_total{reason=\"subject\"} 4\n"
      "mcpfan_backplane_rejected_total{reason=\"receive_budget\"} 5\n"
      "mcpfan_backplane_rejected_total{reason=\"inbox_full\"} 6\n"
      "mcpfan_backplane_rejected_total{reason=\"own\"} 7\n"
      "# HELP mcpfan_backplane_peer_misses_total Misses other nodes' heartbeats revealed, by kind: gap (a skipped "
      "heartbeat), faults (the peer may have lost what it sent), late (first heard past its start), silent "
      "(stopped).\n"
      "# TYPE mcpfan_backplane_peer_misses_total counter\n"
      "mcpfan_backplane_peer_misses_total{kind=\"gap\"} 1\n"
      "mcpfan_backplane_peer_misses_total{kind=\"faults\"} 2\n"
      "mcpfan_backplane_peer_misses_total{kind=\"late\"} 3\n"
      "mcpfan_backplane_peer_misses_total{kind=\"silent\"} 4\n";
  const std::size_t at = text.find("# HELP mcpfan_backplane_");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(at), families);
}

TEST(Report, StatusJson) {
  const std::string json = render_status_json(snapshot(), 1, 2);
  const std::string object =
      R"("backplane":{"connected":true,"subjects":3,"compacted_tenants":1,"compactions":2,"sub_ops":5,"sent":11,)"
      R"("received":7,"unmatched":1,"queued":2,"held_bytes":300,"receive_bytes":40,"lag_seconds":0.250,"refused":5,)"
      R"("reread_waves":7,"reread_hints":8,"faults":9,"heartbeats_sent":10,"heartbeats_received":12,"peers":2,)"
      R"("peers_silent":1,"peers_refused":13,"peers_forgotten":14,"peers_left":15,)"
      R"("dropped":6,)"
      R"("rejected":{"malformed":1,"batch":2,"tenant":3,"subject":4,"receive_budget":5,"inbox_full":6,"own":7},)"
      R"("peer_misses":{"gap":1,"faults":2,"late":3,"silent":4}}})";
  EXPECT_TRUE(json.ends_with(object)) << json;
}

TEST(Report, HealthIsTheStatsOfTheSameName) {
  const BackplaneHealth h = snapshot().backplane->health;
  EXPECT_TRUE(h.connected);
  EXPECT_EQ(h.queued, 2u);
  EXPECT_EQ(h.lag_seconds, 0.25);
  EXPECT_EQ(h.refused, 5u);
  EXPECT_EQ(h.peers, 2u);
  EXPECT_EQ(h.peers_silent, 1u);
}

}  // namespace
}  // namespace mcpfan::detail::nats

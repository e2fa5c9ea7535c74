#pragma once
// The families of mcpfan's metrics, walked over a StatsSnapshot into a MetricsSink
// (metrics.cc): the rows of counters.h (the one list of names, types, help texts and labels),
// then the process's own. GET /metrics walks them into the Prometheus text sink
// (prometheus_text.h), Server::collect_metrics() into the host's sink, so the two cannot disagree.
#include <string>

#include "mcpfan/transport/metrics.h"
#include "server/stats_snapshot.h"

namespace mcpfan::detail {

/** Every family of `s`, in /metrics order, into `sink`. Calls nothing else. */
void walk_metrics(const StatsSnapshot& s, MetricsSink& sink);

/** Prometheus text format (version 0.0.4) of `s`: the body of GET /metrics. */
[[nodiscard]] std::string render_prometheus(const StatsSnapshot& s);

}  // namespace mcpfan::detail

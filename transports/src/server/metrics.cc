#include "server/metrics.h"

#include "server/counters.h"

// The families of GET /metrics and Server::collect_metrics(): the rows of counters.h, walked over a
// StatsSnapshot, then the backplane's own and the process's. A row added there is walked here.
namespace mcpfan::detail {

namespace {

constexpr MetricType kCounter = MetricType::Counter;
constexpr MetricType kGauge = MetricType::Gauge;

// Values cross the public interface as doubles: exact for integers below 2^53 (centuries of
// deliveries at a million a second).
double num(std::uint64_t v) { return static_cast<double>(v); }

/** A family of one unlabelled sample. */
void one(MetricsSink& sink, std::string_view name, MetricType type, std::string_view help, double value) {
  sink.family(name, type, help);
  sink.sample({}, value);
}

// The backplane's own families, as its report lists them (backplane/backplane.h).
void backplane_families(MetricsSink& sink, const BackplaneReport& b) {
  for (const BackplaneFigure& f : b.figures) {
    if (f.label.empty()) {
      one(sink, f.metric, f.type, f.help, f.value);
      continue;
    }
    sink.family(f.metric, f.type, f.help);
    for (const auto& [label_value, count] : f.by_label) {
      const MetricLabel l{f.label, label_value};
      sink.sample({&l, 1}, num(count));
    }
  }
}

// The Prometheus process-metric conventions (client libraries' "process collector"): the
// same names, types and units, so existing dashboards and alerts apply unchanged. Not rows:
// they describe the process, not the server, and a host's collect_metrics() does not get them.
void process_families(MetricsSink& sink, const ProcessStats& p) {
  one(sink, "process_cpu_seconds_total", kCounter, "Total user and system CPU time spent in seconds.", p.cpu_seconds);
  one(sink, "process_start_time_seconds", kGauge, "Start time of the process since unix epoch in seconds.",
      p.start_time_seconds);
  one(sink, "process_resident_memory_bytes", kGauge, "Resident memory size in bytes.", num(p.resident_bytes));
  one(sink, "process_virtual_memory_bytes", kGauge, "Virtual memory size in bytes.", num(p.virtual_bytes));
  one(sink, "process_open_fds", kGauge, "Number of open file descriptors.", num(p.open_fds));
  one(sink, "process_max_fds", kGauge, "Maximum number of open file descriptors.", num(p.max_fds));
}

}  // namespace

void walk_metrics(const StatsSnapshot& s, MetricsSink& sink) {
  const std::span<const CounterRow> rows = counter_rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CounterRow& row = rows[i];
    if (!counter_present(s, row)) continue;
    sink.family(row.name, row.type, row.help);
    if (row.source.samples) row.source.samples(s, sink);
    else sink.sample({}, counter_value(s, i));
  }
  if (s.backplane) backplane_families(sink, *s.backplane);
  if (s.process) process_families(sink, *s.process);
}

}  // namespace mcpfan::detail

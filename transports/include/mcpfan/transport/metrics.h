#pragma once
/**
 * A host's own metrics sink (docs/embedding.md): mcpfan's numbers handed to the host's metrics system
 * (a Prometheus registry, OpenTelemetry, statsd, ...) without scraping GET /metrics.
 *
 * Pull model, in the style of a Prometheus collector: the host calls
 * Server::collect_metrics(sink) from its own scrape or timer, and mcpfan walks its families
 * into the sink: family() once per family, then sample() once per sample of that family.
 *
 * What is walked: exactly the families of GET /metrics, in its order, with the same names,
 * types, help texts, labels and values at that instant. GET /metrics is itself a MetricsSink
 * (its Prometheus text) fed by the same walk, so the two cannot disagree. A family may have
 * no sample (the per-tenant families before any tenant has clients); optional families (the
 * backplane's with --nats, the upstream's with --upstream) are walked only when configured.
 * One exception: the process_* families of GET /metrics (CPU, memory, descriptors, start
 * time) are not walked into a host's sink. They describe the whole process, the host's, and
 * the host's own metrics library reports them under the same names already.
 *
 * Values: every value is a whole number (exact in a double below 2^53) except those of the
 * families whose name ends in "_seconds", which are fractional seconds. mcpfan_build_info is
 * always 1; its labels (version, compiler, build_type) are what it says. A counter only grows
 * while the server runs (mcpfan_tenant_limit_hits_total restarts when its tenant has no
 * clients left, as in /metrics).
 *
 * Thread affinity: the sink is called synchronously on the thread that called
 * collect_metrics(), never after it returns (a sink shared by concurrent collect_metrics()
 * calls must be thread-safe itself). The views it is given (names, help, labels) are valid
 * only during each call: copy what you keep. The numbers are gathered before the walk starts
 * and no mcpfan lock is held while the sink runs: a slow sink delays only its own thread.
 */
#include <cstdint>
#include <span>
#include <string_view>

namespace mcpfan {

enum class MetricType : std::uint8_t { Counter, Gauge };

struct MetricLabel {
  std::string_view name;
  std::string_view value;
};

class MetricsSink {
 public:
  /** Starts a family: the samples that follow, until the next family(), belong to it. */
  virtual void family(std::string_view name, MetricType type, std::string_view help) = 0;
  /** One sample of the last family(): its labels (empty for a family of one unlabelled sample). */
  virtual void sample(std::span<const MetricLabel> labels, double value) = 0;

 protected:
  // Not deleted through this interface: the host owns its sink.
  ~MetricsSink() = default;
};

}  // namespace mcpfan

#pragma once
// GET /metrics as a MetricsSink: the Prometheus text format (version 0.0.4) of the families
// walked into it (server/metrics.h walk_metrics), so /metrics is one more consumer of the same
// walk a host's sink gets.
#include <string>
#include <utility>

#include "mcpfan/transport/metrics.h"

namespace mcpfan::detail {

class PrometheusText final : public MetricsSink {
 public:
  void family(std::string_view name, MetricType type, std::string_view help) override;
  void sample(std::span<const MetricLabel> labels, double value) override;

  /** The text so far; the sink is empty afterwards. */
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  std::string out_;
  std::string name_;      // the current family's: each sample line repeats it
  bool seconds_ = false;  // the current family's values are seconds: printed with 3 decimals
};

}  // namespace mcpfan::detail

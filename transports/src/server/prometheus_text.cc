#include "server/prometheus_text.h"

#include <cmath>
#include <cstdio>

#include "server/metrics.h"

namespace mcpfan::detail {

namespace {

// Label values: tenant names come from client tokens ([A-Za-z0-9._-] today); escape anyway.
void append_escaped(std::string& out, std::string_view v) {
  for (char ch : v) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') out += "\\n";
    else out += ch;
  }
}

void append_value(std::string& out, double v, bool seconds) {
  char buf[40];
  if (seconds) {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  } else if (std::isnan(v)) {
    out += "NaN";
    return;
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  } else if (v == std::trunc(v) && std::fabs(v) < 9.2e18) {
    // Every walked value but seconds is a whole number: printed as one, as /metrics always was.
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.17g", v);
  }
  out += buf;
}

}  // namespace

void PrometheusText::family(std::string_view name, MetricType type, std::string_view help) {
  name_.assign(name);
  seconds_ = name.ends_with("_seconds") || name.ends_with("_seconds_total");
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += help;
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += type == MetricType::Counter ? " counter\n" : " gauge\n";
}

void PrometheusText::sample(std::span<const MetricLabel> labels, double value) {
  out_ += name_;
  if (!labels.empty()) {
    out_ += '{';
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += labels[i].name;
      out_ += "=\"";
      append_escaped(out_, labels[i].value);
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  append_value(out_, value, seconds_);
  out_ += '\n';
}

std::string render_prometheus(const StatsSnapshot& s) {
  PrometheusText text;
  walk_metrics(s, text);
  return text.take();
}

}  // namespace mcpfan::detail

#pragma once
// Test helpers for the metrics sink (metrics_sink_test.cc, prometheus_text_test.cc): a sink
// that records every family and sample it is given, and a parser of the Prometheus text of
// GET /metrics into the same shape, so the two can be compared with ==.
#include <cstdlib>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "mcpfan/transport/metrics.h"

namespace mcpfan::testing {

struct RecordedSample {
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
  bool operator==(const RecordedSample&) const = default;
};

struct RecordedFamily {
  std::string name;
  std::string type;  // "counter" or "gauge", as /metrics spells it
  std::string help;
  std::vector<RecordedSample> samples;
  bool operator==(const RecordedFamily&) const = default;
};

/** Copies everything (the views it is given die with each call). */
class RecordingSink final : public MetricsSink {
 public:
  std::vector<RecordedFamily> families;
  bool sample_before_family = false;

  void family(std::string_view name, MetricType type, std::string_view help) override {
    families.push_back({std::string(name), type == MetricType::Counter ? "counter" : "gauge", std::string(help), {}});
  }
  void sample(std::span<const MetricLabel> labels, double value) override {
    if (families.empty()) {
      sample_before_family = true;
      return;
    }
    RecordedSample s;
    for (const MetricLabel& l : labels) s.labels.emplace_back(std::string(l.name), std::string(l.value));
    s.value = value;
    families.back().samples.push_back(std::move(s));
  }

  /** The value of the sample of `family` with these labels (an unlabelled family: {}), or -1. */
  [[nodiscard]] double value(std::string_view family,
                             const std::vector<std::pair<std::string, std::string>>& labels = {}) const {
    for (const RecordedFamily& f : families) {
      if (f.name != family) continue;
      for (const RecordedSample& s : f.samples) {
        if (s.labels == labels) return s.value;
      }
    }
    return -1;
  }
};

/**
 * The Prometheus text of /metrics as families: "# HELP name help", "# TYPE name type", then
 * `name{l="v",...} value` lines. Records a line it cannot read as a family named "unparsed: ...".
 */
inline std::vector<RecordedFamily> parse_prometheus(const std::string& text) {
  std::vector<RecordedFamily> out;
  std::istringstream in(text);
  std::string line;
  auto bad = [&out](const std::string& l) { out.push_back({"unparsed: " + l, "", "", {}}); };
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) {
      std::size_t sp = line.find(' ', 7);
      if (sp == std::string::npos) {
        bad(line);
        continue;
      }
      out.push_back({line.substr(7, sp - 7), "", line.substr(sp + 1), {}});
    } else if (line.rfind("# TYPE ", 0) == 0) {
      if (out.empty() || line.substr(7, out.back().name.size() + 1) != out.back().name + " ") {
        bad(line);
        continue;
      }
      out.back().type = line.substr(7 + out.back().name.size() + 1);
    } else {
      RecordedSample s;
      std::size_t i = line.find_first_of("{ ");
      if (out.empty() || i == std::string::npos || line.substr(0, i) != out.back().name) {
        bad(line);
        continue;
      }
      if (line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
          std::size_t eq = line.find("=\"", i);
          if (eq == std::string::npos) break;
          std::string name = line.substr(i, eq - i), value;
          for (i = eq + 2; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\' && i + 1 < line.size()) {
              ++i;
              value += line[i] == 'n' ? '\n' : line[i];
            } else {
              value += line[i];
            }
          }
          s.labels.emplace_back(std::move(name), std::move(value));
          ++i;                                    // the closing quote
          if (i < line.size() && line[i] == ',') ++i;
        }
        ++i;  // '}'
      }
      s.value = std::strtod(line.c_str() + i, nullptr);
      out.back().samples.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace mcpfan::testing

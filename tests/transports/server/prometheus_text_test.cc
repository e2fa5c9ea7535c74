// GET /metrics's text is the Prometheus text sink fed by walk_metrics() over one StatsSnapshot
// (transports/src/server/metrics.cc, prometheus_text.cc): a fixed snapshot, so the exact lines
// can be checked: label escaping, integers printed as integers, the lag's three decimals, and
// that a host's sink walked over the same snapshot gets exactly what the text says.
#include <gtest/gtest.h>

#include <string>

#include "server/metrics.h"
#include "server/prometheus_text.h"
#include "transports/metrics_recorder.h"

namespace {

using mcpfan::detail::StatsSnapshot;

StatsSnapshot fixed_snapshot() {
  StatsSnapshot s;
  s.set("mcpfan_connections_open", 7);
  s.set("mcpfan_deliveries_total", 12'345'678'901);  // past 2^32: still printed whole
  s.set("mcpfan_published_total", 42);
  s.set("mcpfan_workers", 2);
  s.limit_hits[0] = 3;
  s.auth_failures.push_back({"client", "expired", 5});
  s.auth_failures.push_back({"publisher", "unknown_key", 1});
  s.tenants.push_back({"default", 1, 2, 3, 4});
  s.tenants.push_back({"we\"ird\\na\nme", 9, 8, 7, 6});
  s.tenants_other = StatsSnapshot::TenantRow{"_other", 10, 20, 30, 40};
  s.tenant_count = 5;
  // A backplane's figures as it reports them (the NATS one's table: tests/nats/report_test.cc).
  using Figure = mcpfan::detail::BackplaneFigure;
  constexpr auto kCounter = mcpfan::MetricType::Counter;
  mcpfan::detail::BackplaneReport b;
  b.health.connected = true;
  b.health.lag_seconds = 0.25;
  b.figures = {
      {"mcpfan_backplane_connected", mcpfan::MetricType::Gauge, "1 while connected.", "connected", Figure::Form::Flag,
       1},
      {"mcpfan_backplane_sent_total", kCounter, "Sent.", "sent", Figure::Form::Count, 11},
      {"mcpfan_backplane_lag_seconds", mcpfan::MetricType::Gauge, "Lag.", "lag_seconds", Figure::Form::Seconds, 0.25},
      {"mcpfan_backplane_dropped_total", kCounter, "Dropped.", "dropped", Figure::Form::Count, 0},
      {"mcpfan_backplane_rejected_total", kCounter, "Rejected.", "rejected", Figure::Form::Count, 0},
  };
  b.figures.back().label = "reason";
  b.figures.back().by_label = {{"malformed", 2}, {"inbox_full", 0}};
  s.backplane = b;
  return s;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(PrometheusText, FixedSnapshot) {
  StatsSnapshot s = fixed_snapshot();
  std::string text = mcpfan::detail::render_prometheus(s);
  EXPECT_EQ(text.rfind("# HELP mcpfan_connections_open Open TCP connections.\n# TYPE mcpfan_connections_open gauge\n"
                       "mcpfan_connections_open 7\n",
                       0),
            0u)
      << text;
  EXPECT_TRUE(has_line(text, "# TYPE mcpfan_deliveries_total counter")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_deliveries_total 12345678901")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_published_total 42")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_auth_failures_total{scope=\"client\",reason=\"expired\"} 5")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_auth_failures_total{scope=\"publisher\",reason=\"unknown_key\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_tenant_streams{tenant=\"default\"} 2")) << text;
  // Backslash, quote and newline escaped as the text format wants them.
  EXPECT_TRUE(has_line(text, "mcpfan_tenant_streams{tenant=\"we\\\"ird\\\\na\\nme\"} 8")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_tenant_limit_hits_total{tenant=\"_other\"} 40")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_tenants 5")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_backplane_connected 1")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_backplane_lag_seconds 0.250")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_backplane_dropped_total 0")) << text;
  EXPECT_TRUE(text.ends_with("mcpfan_backplane_rejected_total{reason=\"inbox_full\"} 0\n")) << text;
  EXPECT_TRUE(has_line(text, "mcpfan_backplane_rejected_total{reason=\"malformed\"} 2")) << text;
  // Without an upstream, its families are not walked; no line is a float but the lag.
  EXPECT_EQ(text.find("mcpfan_upstream_"), std::string::npos);
  s.backplane->figures[2].value = 0;
  EXPECT_TRUE(has_line(mcpfan::detail::render_prometheus(s), "mcpfan_backplane_lag_seconds 0.000"));
}

TEST(PrometheusText, ProcessFamiliesWhenGiven) {
  StatsSnapshot s = fixed_snapshot();
  EXPECT_EQ(mcpfan::detail::render_prometheus(s).find("process_"), std::string::npos)
      << "none unless read (GET /metrics)";
  mcpfan::detail::ProcessStats p;
  p.cpu_seconds = 1.25;
  p.start_time_seconds = 1700000000.5;
  p.resident_bytes = 4096;
  p.virtual_bytes = 8192;
  p.open_fds = 12;
  p.max_fds = 1024;
  s.process = p;
  std::string text = mcpfan::detail::render_prometheus(s);
  EXPECT_TRUE(has_line(text, "# TYPE process_cpu_seconds_total counter")) << text;
  EXPECT_TRUE(has_line(text, "process_cpu_seconds_total 1.250")) << text;
  EXPECT_TRUE(has_line(text, "process_start_time_seconds 1700000000.500")) << text;
  EXPECT_TRUE(has_line(text, "process_resident_memory_bytes 4096")) << text;
  EXPECT_TRUE(has_line(text, "process_virtual_memory_bytes 8192")) << text;
  EXPECT_TRUE(has_line(text, "process_open_fds 12")) << text;
  EXPECT_TRUE(text.ends_with("\nprocess_max_fds 1024\n")) << text;
  EXPECT_NE(text.find("\nmcpfan_build_info{version=\""), std::string::npos) << text;
}

TEST(PrometheusText, LimitRowsByName) {
  std::string text = mcpfan::detail::render_prometheus(fixed_snapshot());
  std::string first = "mcpfan_limit_hits_total{limit=\"" +
                      std::string(mcpfan::detail::limit_name(static_cast<mcpfan::detail::Limit>(0))) + "\"} 3";
  EXPECT_TRUE(has_line(text, first)) << text;
}

TEST(PrometheusText, SinkSeesWhatTheTextSays) {
  StatsSnapshot s = fixed_snapshot();
  mcpfan::testing::RecordingSink sink;
  mcpfan::detail::walk_metrics(s, sink);
  EXPECT_FALSE(sink.sample_before_family);
  auto parsed = mcpfan::testing::parse_prometheus(mcpfan::detail::render_prometheus(s));
  EXPECT_EQ(sink.families, parsed);
  EXPECT_EQ(sink.value("mcpfan_backplane_lag_seconds"), 0.25);
  EXPECT_EQ(sink.value("mcpfan_tenant_subscriptions", {{"tenant", "we\"ird\\na\nme"}}), 7);
}

TEST(PrometheusText, UnlabelledAndNonIntegerValues) {
  // A sink may be fed by hand: a family of several labels, and a value that is not whole.
  mcpfan::detail::PrometheusText text;
  text.family("x_total", mcpfan::MetricType::Counter, "Help text.");
  const mcpfan::MetricLabel labels[] = {{"a", "1"}, {"b", "2"}};
  text.sample(labels, 3);
  text.family("y", mcpfan::MetricType::Gauge, "Y.");
  text.sample({}, 0.5);
  text.sample({}, -2);
  EXPECT_EQ(text.take(), "# HELP x_total Help text.\n# TYPE x_total counter\nx_total{a=\"1\",b=\"2\"} 3\n"
                         "# HELP y Y.\n# TYPE y gauge\ny 0.5\ny -2\n");
}

}  // namespace

// The counter table (transports/src/server/counters.h) and its three renderings: a snapshot
// with a known, distinct value in every row, rendered as /metrics text, walked into a host's
// sink, and rendered as /status.json. Checks exact text and JSON for known values, that every
// row is in each rendering with the same value, and the table's own rules (unique names and
// keys, Prometheus naming).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "server/counters.h"
#include "server/metrics.h"
#include "status/status.h"
#include "transports/metrics_recorder.h"

namespace {

using mcpfan::detail::counter_rows;
using mcpfan::detail::CounterGroup;
using mcpfan::detail::CounterRow;
using mcpfan::detail::CounterUnit;
using mcpfan::detail::JsonPlace;
using mcpfan::detail::StatsSnapshot;

// Rows /status.json has never had: /metrics only. A new row gets a JSON place unless it joins
// this list on purpose (the per-tenant families are in /status.json by another shape: its
// tenant objects). The backplane's families are its own report's (tests/nats/report_test.cc).
const std::set<std::string_view> kMetricsOnly = {
    "mcpfan_build_info",
    "mcpfan_io_uring_submits_total",
    "mcpfan_upstream_connects_total",
    "mcpfan_upstream_reused_total",
    "mcpfan_upstream_retried_total",
    "mcpfan_upstream_not_retried_total",
    "mcpfan_upstream_expired_total",
    "mcpfan_upstream_resolutions_total",
    "mcpfan_upstream_resolve_failures_total",
    "mcpfan_upstream_tasks_tracked",  // poll-to-push's: /metrics only, as the pool's above
    "mcpfan_upstream_tasks_tracked_total",
    "mcpfan_upstream_tasks_refused_total",
    "mcpfan_upstream_task_polls_total",
    "mcpfan_upstream_task_poll_failures_total",
    "mcpfan_upstream_task_states_published_total",
    "mcpfan_upstream_task_polls_stopped_terminal_total",
    "mcpfan_upstream_task_polls_stopped_ttl_total",
    "mcpfan_upstream_task_polls_stopped_failures_total",
    "mcpfan_upstream_task_owners",
    "mcpfan_upstream_task_ids_withheld_total",
    // The OAuth agent's: /metrics only (its state is in /healthz).
    "mcpfan_oauth_jwks_fetches_total",
    "mcpfan_oauth_jwks_failures_total",
    "mcpfan_oauth_keys",
    "mcpfan_oauth_unknown_kid_refetches_total",
    "mcpfan_oauth_unknown_kid_limited_total",
    "mcpfan_oauth_token_cache_hits_total",
    "mcpfan_oauth_token_cache_misses_total",
    "mcpfan_oauth_introspections_total",
    "mcpfan_oauth_introspection_failures_total",
    "mcpfan_oauth_introspection_cache_hits_total",
    "mcpfan_oauth_introspection_cache_misses_total",
    "mcpfan_authorize_calls_total",
    "mcpfan_authorize_failures_total",
    "mcpfan_authorize_cache_hits_total",
    "mcpfan_authorize_cache_misses_total",
    "mcpfan_oauth_waiting",
    "mcpfan_oauth_waiting_refused_total",
    "mcpfan_tenant_connections",
    "mcpfan_tenant_streams",
    "mcpfan_tenant_subscriptions",
    "mcpfan_tenant_limit_hits_total",
};

/** Every row present, each gathered row with its own value (1000 + its index); no backplane. */
StatsSnapshot full_snapshot() {
  StatsSnapshot s;
  const auto rows = counter_rows();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].source.gather) s.set(rows[i].name, 1000 + static_cast<long long>(i));
  }
  s.upstream = StatsSnapshot::Upstream{};
  s.oauth = StatsSnapshot::OAuth{};
  for (std::size_t i = 0; i < s.limit_hits.size(); ++i) s.limit_hits[i] = 10 + static_cast<long long>(i);
  s.auth_failures = {{"client", "expired", 5}, {"publisher", "unknown_key", 2}};
  s.tenants = {{"default", 1, 2, 3, 4}};
  s.tenants_other = StatsSnapshot::TenantRow{"_other", 10, 20, 30, 40};
  s.tenant_count = 7;
  return s;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

/** The object of /status.json a row's value is a member of: "" for the top level. */
std::string json_object(const CounterRow& row) {
  switch (row.json.place) {
    case JsonPlace::Gauges: return "gauges";
    case JsonPlace::Counters: return "counters";
    case JsonPlace::Group: return "upstream";
    case JsonPlace::Top:
    case JsonPlace::None: break;
  }
  return {};
}

/**
 * The text of member `key` of the object `object` ("" for the top level) in `json`, a document
 * of nested objects and arrays whose strings hold no brace, bracket or comma; "" if absent.
 * (The unit test binary has no JSON parser of its own: simdjson is the library's, built with its
 * own options.)
 */
std::string json_member(const std::string& json, const std::string& object, std::string_view key) {
  std::size_t begin = 0;
  if (!object.empty()) {
    begin = json.find("\"" + object + "\":{");
    if (begin == std::string::npos) return {};
    begin += object.size() + 3;
  }
  int depth = 0;
  const std::string want = "\"" + std::string(key) + "\":";
  for (std::size_t i = begin; i < json.size(); ++i) {
    const char ch = json[i];
    if (ch == '{' || ch == '[') ++depth;
    if (ch == '}' || ch == ']') {
      if (--depth == 0) return {};  // the object ended
    }
    if (depth == 1 && (ch == '{' || ch == ',') && json.compare(i + 1, want.size(), want) == 0) {
      const std::size_t v = i + 1 + want.size();
      return json.substr(v, json.find_first_of(",}", v) - v);
    }
  }
  return {};
}

TEST(Counters, KnownValuesInMetricsText) {
  StatsSnapshot s;
  s.set("mcpfan_connections_open", 3);
  s.set("mcpfan_read_pauses_total", 9);
  s.tenant_count = 2;
  const std::string text = mcpfan::detail::render_prometheus(s);
  EXPECT_TRUE(text.starts_with("# HELP mcpfan_connections_open Open TCP connections.\n"
                               "# TYPE mcpfan_connections_open gauge\nmcpfan_connections_open 3\n"))
      << text;
  EXPECT_NE(text.find("# HELP mcpfan_read_pauses_total Times a client's connection stopped being read until its "
                      "unread answers drained.\n# TYPE mcpfan_read_pauses_total counter\nmcpfan_read_pauses_total 9\n"),
            std::string::npos)
      << text;
  EXPECT_TRUE(has_line(text, "mcpfan_tenants 2")) << text;
  // No --upstream, no --nats: their families are not walked.
  EXPECT_EQ(text.find("mcpfan_upstream_"), std::string::npos) << text;
  EXPECT_EQ(text.find("mcpfan_backplane_"), std::string::npos) << text;
}

TEST(Counters, KnownValuesInStatusJson) {
  StatsSnapshot s;
  s.set("mcpfan_connections_open", 3);
  s.set("mcpfan_listen_streams_open", 4);
  s.set("mcpfan_workers", 2);
  s.set("mcpfan_io_uring_workers", 1);
  s.set("mcpfan_deliveries_total", 12'345'678'901'234'567);  // past 2^53: exact, not through a double
  s.tenant_count = 1;
  s.auth_failures.push_back({"client", "expired", 5});
  s.auth_failures.push_back({"publisher", "missing", 2});
  const std::string json = mcpfan::detail::render_status_json(s, 1000, 20);
  EXPECT_TRUE(json.starts_with(R"({"server":"mcpfan","version":")")) << json;
  EXPECT_NE(json.find(R"(,"unix_ms":1000,"mono_ms":20,"workers":2,"io_uring_workers":1,"gauges":{"connections":3,)"
                      R"("streams":4,"subscriptions":0,"sessions":0,"sessions_idle":0,"sessions_parked":0,)"
                      R"("task_states":0,"task_states_bytes":0,"h2_connections":0,"tenants":1},)"
                      R"("counters":{"published":0,"published_no_audience":0,"deliveries":12345678901234567,)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("callback_exceptions":0,"limit_hits":0,"auth_failures":7},"limit_hits":{)"), std::string::npos)
      << json;
  EXPECT_TRUE(json.ends_with(R"("tenants":[],"tenants_other":null,"upstream":null,"backplane":null})")) << json;

  StatsSnapshot g = full_snapshot();
  const std::string full = mcpfan::detail::render_status_json(g, 0, 0);
  EXPECT_NE(full.find(R"("upstream":{"requests":)" + std::to_string(g.value("mcpfan_upstream_requests_total")) +
                      R"(,"failures":)" + std::to_string(g.value("mcpfan_upstream_failures_total")) + "}"),
            std::string::npos)
      << full;
}

// Every row is walked into a host's sink and the /metrics text alike, and every row with a JSON
// place is in /status.json with the same value.
TEST(Counters, EveryRowInEveryRendering) {
  const StatsSnapshot s = full_snapshot();
  mcpfan::testing::RecordingSink sink;
  mcpfan::detail::walk_metrics(s, sink);
  const auto parsed = mcpfan::testing::parse_prometheus(mcpfan::detail::render_prometheus(s));
  EXPECT_EQ(sink.families, parsed);

  const std::string json = mcpfan::detail::render_status_json(s, 0, 0);

  const auto rows = counter_rows();
  ASSERT_EQ(sink.families.size(), rows.size()) << "every row walked, in order, and nothing else";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const CounterRow& row = rows[i];
    const mcpfan::testing::RecordedFamily& f = sink.families[i];
    EXPECT_EQ(f.name, row.name);
    EXPECT_EQ(f.help, row.help) << row.name;
    EXPECT_EQ(f.type, row.type == mcpfan::MetricType::Counter ? "counter" : "gauge") << row.name;
    ASSERT_FALSE(f.samples.empty()) << row.name;
    double total = 0;
    for (const auto& sample : f.samples) total += sample.value;
    if (!row.source.samples) {
      ASSERT_EQ(f.samples.size(), 1u) << row.name;
      EXPECT_TRUE(f.samples[0].labels.empty()) << row.name;
      EXPECT_EQ(f.samples[0].value, mcpfan::detail::counter_value(s, i)) << row.name;
      if (row.source.gather) {
        EXPECT_EQ(f.samples[0].value, 1000.0 + static_cast<double>(i)) << row.name;
      }
    }
    if (row.json.place == JsonPlace::None) {
      EXPECT_TRUE(kMetricsOnly.contains(row.name)) << row.name << ": give it a place in /status.json";
      continue;
    }
    EXPECT_FALSE(kMetricsOnly.contains(row.name)) << row.name;
    const std::string v = json_member(json, json_object(row), row.json.key);
    ASSERT_FALSE(v.empty()) << row.name << " as " << json_object(row) << "." << row.json.key << " in " << json;
    if (row.unit == CounterUnit::Flag) {
      EXPECT_EQ(v, total != 0 ? "true" : "false") << row.name;
    } else if (row.unit == CounterUnit::Seconds) {
      EXPECT_EQ(std::strtod(v.c_str(), nullptr), total) << row.name;
    } else {
      EXPECT_EQ(v, std::to_string(static_cast<long long>(total))) << row.name;
    }
  }
}

TEST(Counters, TableRules) {
  std::set<std::string_view> names;
  std::set<std::string> json_members;
  for (const CounterRow& row : counter_rows()) {
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
    EXPECT_TRUE(row.name.starts_with("mcpfan_")) << row.name;
    // Prometheus naming: counters end in _total, gauges do not.
    EXPECT_EQ(row.name.ends_with("_total"), row.type == mcpfan::MetricType::Counter) << row.name;
    EXPECT_FALSE(row.help.empty()) << row.name;
    const int sources = (row.source.gather != nullptr) + (row.source.read != nullptr) + (row.source.samples != nullptr);
    EXPECT_EQ(sources, 1) << row.name;
    EXPECT_EQ(row.json.place == JsonPlace::None, row.json.key.empty()) << row.name;
    EXPECT_TRUE(row.json.place != JsonPlace::Group || row.group != CounterGroup::Server) << row.name;
    if (row.json.place != JsonPlace::None) {
      EXPECT_TRUE(json_members.insert(json_object(row) + "." + std::string(row.json.key)).second) << row.name;
    }
    // Seconds are what /metrics prints with decimals: by the name's unit.
    EXPECT_EQ(row.unit == CounterUnit::Seconds, row.name.ends_with("_seconds")) << row.name;
  }
  for (std::string_view name : kMetricsOnly) EXPECT_TRUE(names.contains(name)) << name << " is no row";
}

}  // namespace

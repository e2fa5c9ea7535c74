#include <cstdio>

#include "mcp/messages.h"
#include "mcpfan/json_text.h"
#include "server/counters.h"
#include "status/status.h"

// GET /status.json: the StatsSnapshot that /metrics renders, as one JSON object, from the same
// rows (server/counters.h: each row says where its value goes here). Counters are totals since
// start; the page computes per-second rates from two polls (mono_ms apart).
namespace mcpfan::detail {

namespace {

// Writes `"key":value` pairs into one JSON object, commas included.
class Obj {
 public:
  explicit Obj(std::string& out) : out_(out) { out_ += '{'; }
  Obj(const Obj&) = delete;
  Obj& operator=(const Obj&) = delete;
  ~Obj() { out_ += '}'; }

  Obj& num(std::string_view key, long long v) {
    this->key(key);
    out_ += std::to_string(v);
    return *this;
  }
  Obj& real(std::string_view key, double v) {
    this->key(key);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    out_ += buf;
    return *this;
  }
  Obj& boolean(std::string_view key, bool v) {
    this->key(key);
    out_ += v ? "true" : "false";
    return *this;
  }
  Obj& str(std::string_view key, std::string_view v) {
    this->key(key);
    append_json_string(out_, v);
    return *this;
  }
  Obj& null(std::string_view key) {
    this->key(key);
    out_ += "null";
    return *this;
  }
  /** Starts a nested value: the caller writes it next. */
  std::string& key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    append_json_string(out_, key);
    out_ += ':';
    return out_;
  }

 private:
  std::string& out_;
  bool first_ = true;
};

void tenant_row(std::string& out, const StatsSnapshot::TenantRow& r) {
  Obj(out)
      .str("tenant", r.name)
      .num("connections", r.connections)
      .num("streams", r.streams)
      .num("subscriptions", r.subscriptions)
      .num("limit_hits", r.limit_hits);
}

// A labelled family's samples, summed: its total in "counters".
class Sum final : public MetricsSink {
 public:
  void family(std::string_view, MetricType, std::string_view) override {}
  void sample(std::span<const MetricLabel>, double value) override { total += static_cast<long long>(value); }
  long long total = 0;
};

/** The rows (server/counters.h) that /status.json puts in `place`, in row order, as members of `o`. */
void rows(Obj& o, const StatsSnapshot& s, JsonPlace place, CounterGroup group) {
  const std::span<const CounterRow> all = counter_rows();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const CounterRow& row = all[i];
    if (row.json.place != place || row.group != group) continue;
    if (row.source.samples) {
      Sum sum;
      row.source.samples(s, sum);
      o.num(row.json.key, sum.total);
    } else if (row.source.gather) {
      o.num(row.json.key, s.values[i]);  // exact: not through a double
    } else if (row.unit == CounterUnit::Flag) {
      o.boolean(row.json.key, counter_value(s, i) != 0);
    } else if (row.unit == CounterUnit::Seconds) {
      o.real(row.json.key, counter_value(s, i));
    } else {
      o.num(row.json.key, static_cast<long long>(counter_value(s, i)));
    }
  }
}

}  // namespace

std::string render_status_json(const StatsSnapshot& s, std::int64_t unix_ms, std::int64_t mono_ms) {
  std::string out;
  out.reserve(2048 + 128 * s.tenants.size());
  {  // o closes the object when it goes
    Obj o(out);
    o.str("server", "mcpfan").str("version", kServerVersion).num("unix_ms", unix_ms).num("mono_ms", mono_ms);
    rows(o, s, JsonPlace::Top, CounterGroup::Server);
    {
      Obj g(o.key("gauges"));
      rows(g, s, JsonPlace::Gauges, CounterGroup::Server);
    }
    {
      Obj c(o.key("counters"));
      rows(c, s, JsonPlace::Counters, CounterGroup::Server);
    }
    {
      Obj l(o.key("limit_hits"));
      for (std::size_t i = 0; i < s.limit_hits.size(); ++i) l.num(limit_name(static_cast<Limit>(i)), s.limit_hits[i]);
    }
    {
      std::string& t = o.key("tenants");
      t += '[';
      for (std::size_t i = 0; i < s.tenants.size(); ++i) {
        if (i) t += ',';
        tenant_row(t, s.tenants[i]);
      }
      t += ']';
    }
    if (s.tenants_other) tenant_row(o.key("tenants_other"), *s.tenants_other);
    else o.null("tenants_other");
    if (s.upstream) {
      Obj up(o.key("upstream"));
      rows(up, s, JsonPlace::Group, CounterGroup::Upstream);
    } else {
      o.null("upstream");
    }
    if (s.backplane) {
      Obj bp(o.key("backplane"));  // the backplane's figures, in its order (backplane/backplane.h)
      for (const BackplaneFigure& f : s.backplane->figures) {
        if (!f.label.empty()) {
          Obj by(bp.key(f.json_key));
          for (const auto& [label_value, count] : f.by_label) by.num(label_value, static_cast<long long>(count));
          continue;
        }
        switch (f.form) {
          case BackplaneFigure::Form::Flag: bp.boolean(f.json_key, f.value != 0); break;
          case BackplaneFigure::Form::Seconds: bp.real(f.json_key, f.value); break;
          case BackplaneFigure::Form::Count: bp.num(f.json_key, static_cast<long long>(f.value)); break;
        }
      }
    } else {
      o.null("backplane");
    }
  }
  return out;
}

}  // namespace mcpfan::detail

#include <cstdio>

#include "mcp/messages.h"
#include "mcpfan/json_text.h"
#include "status/status.h"

// GET /status.json: the StatsSnapshot that /metrics renders, as one JSON object. Counters are
// totals since start; the page computes per-second rates from two polls (mono_ms apart).
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

}  // namespace

std::string render_status_json(const StatsSnapshot& s, std::int64_t unix_ms, std::int64_t mono_ms) {
  std::string out;
  out.reserve(2048 + 128 * s.tenants.size());
  {  // o closes the object when it goes
    Obj o(out);
    o.str("server", "mcpfan").str("version", kServerVersion).num("unix_ms", unix_ms).num("mono_ms", mono_ms).num("workers", s.workers).num("io_uring_workers", s.uring_workers);
    {
      Obj g(o.key("gauges"));
      g.num("connections", s.connections)
          .num("streams", s.streams)
          .num("subscriptions", s.subscriptions)
          .num("sessions", s.sessions)
          .num("sessions_idle", s.sessions_idle)
          .num("sessions_parked", s.sessions_parked)
          .num("tenants", s.tenant_count);
    }
    {
      long long auth_failures = 0;
      for (const StatsSnapshot::AuthFailure& f : s.auth_failures) auth_failures += f.count;
      Obj c(o.key("counters"));
      c.num("published", s.published)
          .num("published_no_audience", s.published_no_audience)
          .num("deliveries", s.deliveries)
          .num("coalesced", s.coalesced)
          .num("limit_hits", s.limit_hits_total())
          .num("slow_consumer_closes", s.slow_closes)
          .num("stream_writes", s.stream_writes)
          .num("http_requests", s.http_requests)
          .num("http_errors", s.http_errors)
          .num("session_replayed", s.session_replayed)
          .num("session_rereads", s.session_rereads)
          .num("session_journaled", s.session_journaled)
          .num("session_journal_evictions", s.session_journal_evictions)
          .num("debounce_suppressed", s.debounce_suppressed)
          .num("debounce_trailing", s.debounce_trailing)
          .num("auth_failures", auth_failures)
          .num("read_pauses", s.read_pauses)
          .num("io_uring_sends", s.uring_sends)
          .num("io_uring_short_sends", s.uring_short_sends)
          .num("callback_exceptions", s.callback_exceptions)
          .num("log_lines_dropped", s.log_lines_dropped);
      c.num("shard_inbox_depth", s.shard_inbox_depth)
          .num("shard_inbox_full", s.shard_inbox_full)
          .num("publish_refused_inbox_full", s.publish_refused_full);
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
    if (s.upstream) Obj(o.key("upstream")).num("requests", s.upstream->requests).num("failures", s.upstream->failures);
    else o.null("upstream");
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

#pragma once
// The server's metric families declared once, as rows of one table (counters.cc), in /metrics
// order: each row gives the name, type and help text, where /status.json puts the value, and where
// the value comes from. stats_snapshot.cc gathers the values from the rows; metrics.cc (GET
// /metrics and a host's collect_metrics()) and status/status_json.cc (GET /status.json) render
// the rows. So a new counter is one row, plus the line that increments it.
//
// Reading only: the loops keep writing their relaxed atomics (WorkerStats, ShardStats, ...);
// a row names the atomic (a member pointer) or the accessor a snapshot reads it through.
// The rows are constant; any thread may read them.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "mcpfan/transport/metrics.h"
#include "server/stats_snapshot.h"

namespace mcpfan {
class Hub;
}

namespace mcpfan::detail {

class Worker;
class SessionRegistry;
struct ServerState;

/** The live parts of a started server a row's value is gathered from (stats_snapshot.cc). */
struct CounterInputs {
  std::span<const std::unique_ptr<Worker>> workers;
  Hub& hub;
  SessionRegistry& sessions;
  const ServerState& state;
};

/**
 * Where a row's value comes from: exactly one of
 * - gather: read from the live server when a snapshot is taken, kept in StatsSnapshot::values;
 * - read: read when rendered from a part of the snapshot gathered whole by its owner (the
 *   tenant count);
 * - samples: a labelled family, whose samples (labels and values) it writes into a sink.
 */
struct CounterSource {
  using Gather = long long (*)(const CounterInputs&);
  using Read = double (*)(const StatsSnapshot&);
  using Samples = void (*)(const StatsSnapshot&, MetricsSink&);
  constexpr CounterSource(Gather g) noexcept : gather(g) {}
  constexpr CounterSource(Read r) noexcept : read(r) {}
  constexpr CounterSource(Samples s) noexcept : samples(s) {}
  Gather gather = nullptr;
  Read read = nullptr;
  Samples samples = nullptr;
};

/** Which rows are walked: the optional groups only when configured (their families absent otherwise). */
enum class CounterGroup : std::uint8_t {
  Server,     // always
  Upstream,   // with --upstream: StatsSnapshot::upstream is set
  OAuth,      // with --oauth-issuer: StatsSnapshot::oauth is set
};
// A backplane's families are not rows here: the backplane lists its own (BackplaneReport in
// backplane/backplane.h), and /metrics and /status.json render them after the rows.

/** Where /status.json puts a row's value. */
enum class JsonPlace : std::uint8_t {
  None,      // not in /status.json (/metrics only)
  Top,       // the top-level object
  Gauges,    // "gauges"
  Counters,  // "counters"
  Group,     // the group's own object: "upstream"
};

struct JsonSlot {
  JsonPlace place = JsonPlace::None;
  std::string_view key;  // for a labelled family: the key of the sum of its samples
};

/** How /status.json writes a value (/metrics: a whole number, 3 decimals for "_seconds" names). */
enum class CounterUnit : std::uint8_t {
  Whole,
  Seconds,  // 3 decimals
  Flag,     // true or false
};

struct CounterRow {
  std::string_view name;
  MetricType type;
  JsonSlot json;
  CounterSource source;
  std::string_view help;
  CounterGroup group = CounterGroup::Server;
  CounterUnit unit = CounterUnit::Whole;
};

/** Every row, in /metrics order (the process_* families, not the server's, come after them). */
[[nodiscard]] std::span<const CounterRow> counter_rows() noexcept;

/** Whether `s` has the group of `row` (so its family is walked). */
[[nodiscard]] bool counter_present(const StatsSnapshot& s, const CounterRow& row) noexcept;

/** The value of the unlabelled row `i` of counter_rows() in `s` (not for a labelled family). */
[[nodiscard]] double counter_value(const StatsSnapshot& s, std::size_t i);

/** Fills `s.values` from the live server: every row with a gather source. */
void gather_counters(const CounterInputs& in, StatsSnapshot& s);

}  // namespace mcpfan::detail

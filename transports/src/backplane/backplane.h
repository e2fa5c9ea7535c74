#pragma once
// What the server needs of a backplane, the link that makes several nodes one tier: a publish
// accepted by any node reaches every matching stream on every node. Only the factory below
// names an implementation (today the NATS one in nats/, docs/operations.md "Several nodes"), so the
// routes, the worker, the health checks and the metrics and status renderers know this
// interface alone, and a build without any backplane library (MCPFAN_WITH_NATS=OFF) is the
// same server with start_backplane() refusing --nats.
//
// The path of a publish with a backplane: the publish route decodes every notification with
// its copy for other nodes (PublishDecoder, for_backplane), asks admit() before anything is
// delivered (all or nothing), then Hub::publish(notes) debounces, fans out locally and hands
// what other nodes need to the Hub's forwarder, which calls forward(). What other nodes send
// arrives on the backplane's own threads and enters the Hub by Hub::deliver_forwarded().
//
// Thread-safety: every method is thread-safe. key_added/key_removed (KeyListener) run on shard
// loops, admit() on the worker that parsed the publish, forward() on the publishing thread or
// the debouncer's, report() anywhere.
// Lifetime: created by Server::start() before the workers, destroyed by Server::stop() after
// them and after the Hub was closed (destroying it stops it: it sends what is queued, within
// a bound, and closes its connections); the Hub outlives it.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcpfan/hub.h"
#include "mcpfan/index.h"
#include "mcpfan/notification.h"
#include "mcpfan/result.h"
#include "mcpfan/transport/metrics.h"
#include "mcpfan/transport/server.h"
namespace mcpfan::detail {

namespace log {
class Logger;
}

/** What readiness and /healthz ask of a backplane. */
struct BackplaneHealth {
  bool connected = false;     // other nodes can be reached now
  std::uint64_t queued = 0;   // notifications for other nodes waiting (an outage, or just after a reconnect)
  double lag_seconds = 0;     // how long the oldest of them has waited (0: none waits)
  std::uint64_t refused = 0;  // publishes refused (503) because what waits reached its bound
  // How long other nodes' notifications have not reached this node: since the disconnect (or
  // the start, before the first connect) while disconnected; 0 when connected.
  double blind_seconds = 0;
  std::size_t peers = 0;         // other nodes heard by their heartbeats
  std::size_t peers_silent = 0;  // of them, those gone quiet: dead, or the path to them down
};

/**
 * One number of a backplane as /metrics and /status.json show it: the metric family
 * (`metric`, `type`, `help`) and the key of the "backplane" object of /status.json. A family
 * with a `label` has one sample per entry of `by_label` (a JSON object keyed by label value);
 * else `value` is its one sample.
 */
struct BackplaneFigure {
  enum class Form : std::uint8_t {
    Count,    // a whole number: JSON writes it as an integer
    Flag,     // 0 or 1: JSON writes false or true
    Seconds,  // fractional: JSON writes three decimals
  };
  BackplaneFigure(std::string_view metric_name, MetricType metric_type, std::string_view help_text,
                  std::string_view key, Form how, double v)
      : metric(metric_name), type(metric_type), help(help_text), json_key(key), form(how), value(v) {}

  std::string_view metric;    // static strings: the implementation's table
  MetricType type = MetricType::Gauge;
  std::string_view help;
  std::string_view json_key;
  Form form = Form::Count;
  double value = 0;           // exact for whole numbers below 2^53
  std::string_view label;     // empty: one unlabelled sample
  std::vector<std::pair<std::string_view, std::uint64_t>> by_label;
};

/** A backplane's numbers at one instant: a plain value, owned by whoever asked. */
struct BackplaneReport {
  BackplaneHealth health;
  std::vector<BackplaneFigure> figures;  // in the order /metrics and /status.json list them
};

/** Why admit() refused a publish: the caller answers with nothing delivered. */
struct BackplaneRefusal {
  enum class Why : std::uint8_t {
    TooLarge,  // a notification other nodes cannot take whatever the load (413)
    Busy,      // cannot take more now; a retry may succeed (503 with Retry-After)
  };
  Why why = Why::Busy;
  std::string message;  // for the publisher: what was refused and why, in the backplane's words
};

class Backplane : public KeyListener {
 public:
  virtual ~Backplane() = default;

  /**
   * Admits a publish's notifications whole, before anything of it is delivered: checks each
   * forwarded() one and reserves what they will hold while they wait for other nodes (each
   * Notification carries its part, Notification::reserved, and gives it back when it is sent,
   * suppressed or dropped). A refusal reserves nothing and is counted by the backplane.
   */
  [[nodiscard]] virtual std::optional<BackplaneRefusal> admit(std::vector<Notification>& notes) = 0;
  /**
   * Sends each forwarded() notification to the other nodes (the Hub's forwarder, after the
   * local fan-out and the debouncer). Never blocks on the network; failures are counted.
   */
  virtual void forward(std::vector<Notification>& notes) = 0;
  [[nodiscard]] virtual BackplaneReport report() const = 0;
};

/**
 * Why `config` names a backplane this build cannot start (the settings and files it would
 * use, judged without connecting, or a backplane left out of the build), or nullopt. The flag
 * is named first, as every other configuration error.
 */
[[nodiscard]] std::optional<std::string> backplane_config_error(const ServerConfig& config);

/**
 * The backplane `config` asks for, started (connecting in the background if its servers do
 * not answer yet), or null when it asks for none. It delivers what other nodes send through
 * `hub`, and logs to `logger`; both outlive it.
 */
[[nodiscard]] Result<std::unique_ptr<Backplane>> start_backplane(const ServerConfig& config, Hub& hub,
                                                                  log::Logger& logger);

}  // namespace mcpfan::detail

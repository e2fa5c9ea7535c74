#pragma once
// Poll-to-push (docs/protocol.md "Poll-to-push", --upstream-task-poll): the upstream answered a
// `tools/call` proxied through this loop with a task (`resultType: "task"`, SEP-2663); while a
// listen on this node watches that task, this loop polls `tasks/get` on the upstream at the
// task's pollIntervalMs (within --upstream-task-poll-min-ms and -max-ms), with the creating
// request's credentials, `Mcp-Name: <taskId>` and the newest `requestState`, and publishes
// each state that changed as `notifications/tasks`, through the same checks as /v1/publish
// (PublishDecoder, the backplane's admission, Hub::publish, TaskStates). One poll serves every
// listener of the task, here and, with a backplane, on other nodes.
//
// Who listens: the hub's LocalInterest (the task's key is held by a shard from before its
// listen is acknowledged until after it is gone). A task nobody watches is not polled; it is
// looked at again each interval, so a listener that comes later starts the polling within one
// interval (and meanwhile gets the newest state kept, replayed behind its acknowledgement).
//
// Bounds, each counted (WorkerStats::tasks): the tasks tracked (TaskOwners, shared by the
// loops: --upstream-task-poll-max-tasks), one call in flight per task, an answer read up to
// --max-task-bytes plus 64 KiB. Polling a task stops at a terminal status, at its TTL (ttlMs
// from creation, at most --task-state-max-ttl-ms), or after --upstream-task-poll-max-failures
// failures in a row (an error status, a JSON-RPC error, a timeout, an invalid task); a
// failure is logged (rate-limited) and retried at the interval.
//
// Thread affinity: loop-affine (the loop of the pool it is given). Lifetime: close() before
// the pool closes (it cancels its calls and closes its timer); destroyed once the loop ran
// the timer's close callback.
#include <uv.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "proxy/upstream.h"

namespace mcpfan::detail {

class LoopContext;
class TaskOwners;

/** What a loop counts of poll-to-push; written by the loop, read by /metrics. */
struct TaskPollStats {
  std::atomic<std::uint64_t> tracked_total{0};     // tasks taken on (a CreateTaskResult seen)
  std::atomic<std::int64_t> tracked{0};            // tracked now (gauge)
  std::atomic<std::uint64_t> refused{0};           // not taken on: the table full, or another principal's task id
  std::atomic<std::uint64_t> polls{0};             // tasks/get sent
  std::atomic<std::uint64_t> failures{0};          // polls that failed (status, error, timeout, invalid task)
  std::atomic<std::uint64_t> published{0};         // states published (the creation's and each change)
  std::atomic<std::uint64_t> stopped_terminal{0};  // polling stopped: completed, cancelled or failed
  std::atomic<std::uint64_t> stopped_ttl{0};       // polling stopped: the task's TTL passed
  std::atomic<std::uint64_t> stopped_failures{0};  // polling stopped: too many failures in a row
};

/** A task the upstream created, as the creating call's request and answer tell it. */
struct CreatedTask {
  std::string tenant;            // the creating request's tenant (name)
  std::string principal;         // its token's subject (empty: none)
  std::string authorization;     // its Authorization field, sent with each poll (empty: none)
  std::string protocol_version;  // its MCP-Protocol-Version field
  std::string task_id;
  std::string task_json;  // the task as notifications/tasks params: the result without resultType
  bool terminal = false;
  std::optional<std::uint64_t> poll_interval_ms;
  std::optional<std::uint64_t> ttl_ms;  // nullopt: null or absent (unlimited)
  std::optional<std::string> request_state;
};

/**
 * One JSON-RPC response read as a task (pure): the result of a CreateTaskResult
 * (`expect_create`: resultType must be "task") or of a tasks/get. Null when it is not one:
 * an error, no result, no taskId, or an unknown status. Fills every field but the caller's.
 */
[[nodiscard]] std::optional<CreatedTask> read_task_answer(std::string_view message, bool expect_create);

/**
 * The JSON-RPC response in an upstream answer (pure): the body itself, or for an event stream
 * the data of the last event that is a response (has `result` or `error`). Null: none.
 */
[[nodiscard]] std::optional<std::string> response_in(std::string_view body, bool event_stream);

class TaskPoller {
 public:
  TaskPoller(LoopContext& ctx, proxy::UpstreamPool& pool, TaskOwners& owners, TaskPollStats& stats);
  ~TaskPoller();
  TaskPoller(const TaskPoller&) = delete;
  TaskPoller& operator=(const TaskPoller&) = delete;

  /** Takes the task on: claims it for its principal, publishes its first state, and polls it while watched. */
  void track(CreatedTask task);
  /** Cancels every call and closes the timer; nothing more is polled. Idempotent. */
  void close();
  [[nodiscard]] std::size_t tracked() const noexcept { return tasks_.size(); }

 private:
  struct Polled;
  enum class Stop : std::uint8_t { Terminal, Ttl, Failures };
  void schedule(Polled& p, std::uint64_t at);
  void arm();
  void on_timer();
  void poll(Polled& p, std::uint64_t now);
  void answered(Polled& p);
  void failed(Polled& p, std::string_view why);
  [[nodiscard]] bool watched(const Polled& p);
  [[nodiscard]] bool publish(Polled& p, const std::string& task_json);
  void stop(Polled& p, Stop why);  // marks it; the timer erases it (never inside a sink call)
  [[nodiscard]] std::uint64_t interval(std::optional<std::uint64_t> asked) const;

  struct Due {
    std::uint64_t at;
    std::uint64_t version;
    std::string key;
    bool operator>(const Due& o) const noexcept { return at > o.at; }
  };

  LoopContext& ctx_;
  proxy::UpstreamPool& pool_;
  TaskOwners& owners_;
  TaskPollStats& stats_;
  uv_timer_t* timer_ = nullptr;                                     // heap-allocated, freed by its close callback
  std::unordered_map<std::string, std::unique_ptr<Polled>> tasks_;  // tenant '\0' task id
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due_;  // stale items are skipped
  std::uint64_t next_version_ = 0;
  std::uint64_t next_id_ = 0;  // the polls' JSON-RPC ids
  bool closed_ = false;
};

}  // namespace mcpfan::detail

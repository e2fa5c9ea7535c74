#include "server/task_poller.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>

#include "backplane/backplane.h"
#include "mcp/task_owners.h"
#include "mcpfan/json_text.h"
#include "mcpfan/publish_decoder.h"
#include "server/log.h"
#include "server/loop_context.h"

namespace mcpfan::detail {

namespace {

using simdjson::dom::element;
using simdjson::dom::object;

constexpr std::uint64_t kDefaultIntervalMs = 1000;  // a task without pollIntervalMs
constexpr std::size_t kAnswerSlack = 64 * 1024;     // an answer's bytes beyond the task's own bound

std::optional<std::uint64_t> uint_field(object o, std::string_view key) {
  element v;
  if (o[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  std::uint64_t u = 0;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) return u;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 1e15) return static_cast<std::uint64_t>(d);
  return std::nullopt;
}

// The data of one SSE event (its data lines joined by \n), or nullopt when it has none.
std::optional<std::string> event_data(std::string_view event) {
  std::optional<std::string> data;
  std::size_t pos = 0;
  while (pos < event.size()) {
    std::size_t e = event.find_first_of("\r\n", pos);
    std::string_view line = event.substr(pos, e == std::string_view::npos ? std::string_view::npos : e - pos);
    pos = e == std::string_view::npos ? event.size() : e + 1;
    if (e != std::string_view::npos && event[e] == '\r' && pos < event.size() && event[pos] == '\n') ++pos;
    if (line.substr(0, 5) != "data:") continue;
    std::string_view v = line.substr(5);
    if (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    if (data)
      *data += '\n';
    else
      data.emplace();
    *data += v;
  }
  return data;
}

bool is_response(std::string_view json) {
  simdjson::dom::parser parser;
  object o;
  if (parser.parse(json.data(), json.size()).get(o) != simdjson::SUCCESS) return false;
  element ignored;
  return o["result"].get(ignored) == simdjson::SUCCESS || o["error"].get(ignored) == simdjson::SUCCESS;
}

}  // namespace

std::optional<std::string> response_in(std::string_view body, bool event_stream) {
  if (!event_stream) return std::string(body);
  std::optional<std::string> last;
  // Events end at a blank line (\n\n, \r\n\r\n or \r\r): split on any line ending followed by another.
  std::size_t start = 0, pos = 0;
  while (pos < body.size()) {
    std::size_t e = body.find_first_of("\r\n", pos);
    if (e == std::string_view::npos) break;
    std::size_t next = e + 1;
    if (body[e] == '\r' && next < body.size() && body[next] == '\n') ++next;
    bool blank = next < body.size() && (body[next] == '\n' || body[next] == '\r');
    if (blank) {
      std::size_t after = next + 1;
      if (body[next] == '\r' && after < body.size() && body[after] == '\n') ++after;
      if (auto data = event_data(body.substr(start, e - start)); data && is_response(*data)) last = std::move(data);
      start = after;
      pos = after;
    } else {
      pos = next;
    }
  }
  if (start < body.size()) {  // an event without its blank line at the end of the body
    if (auto data = event_data(body.substr(start)); data && is_response(*data)) last = std::move(data);
  }
  return last;
}

std::optional<CreatedTask> read_task_answer(std::string_view message, bool expect_create) {
  simdjson::dom::parser parser;
  object msg, result;
  if (parser.parse(message.data(), message.size()).get(msg) != simdjson::SUCCESS) return std::nullopt;
  if (msg["result"].get(result) != simdjson::SUCCESS) return std::nullopt;
  if (expect_create) {
    std::string_view type;
    if (result["resultType"].get(type) != simdjson::SUCCESS || type != "task") return std::nullopt;
  }
  std::string_view id, status;
  if (result["taskId"].get(id) != simdjson::SUCCESS || id.empty()) return std::nullopt;
  if (result["status"].get(status) != simdjson::SUCCESS) return std::nullopt;
  std::optional<bool> terminal = task_status_terminal(status);
  if (!terminal) return std::nullopt;
  CreatedTask t;
  t.task_id = std::string(id);
  t.terminal = *terminal;
  t.poll_interval_ms = uint_field(result, "pollIntervalMs");
  t.ttl_ms = uint_field(result, "ttlMs");
  std::string_view state;
  if (result["requestState"].get(state) == simdjson::SUCCESS) t.request_state = std::string(state);
  // The task as a notification's params: what tasks/get would have returned, without the
  // result's discriminator (a Result field, not the Task's).
  std::string& out = t.task_json;
  out.reserve(message.size());
  out += '{';
  bool first = true;
  for (auto [k, v] : result) {
    if (k == "resultType") continue;
    if (!first) out += ',';
    first = false;
    append_json_string(out, k);
    out += ':';
    out += simdjson::minify(v);
  }
  out += '}';
  return t;
}

struct TaskPoller::Polled final : proxy::UpstreamSink {
  TaskPoller* owner = nullptr;
  std::string key;
  CreatedTask task;  // the creating request's context; task_json is the last state published
  std::uint64_t interval_ms = kDefaultIntervalMs;
  std::uint64_t expires_at = 0;  // uv_now() ms
  std::uint64_t version = 0;     // of its current item in due_
  unsigned failures = 0;         // in a row
  proxy::UpstreamCall* call = nullptr;
  bool in_flight = false;
  std::optional<Stop> stopped;
  // The answer being read.
  int status = 0;
  bool event_stream = false;
  bool too_large = false;
  std::string body;

  void on_head(int s, const proxy::HeaderList& headers) override {
    status = s;
    event_stream = proxy::is_event_stream(headers);
  }
  void on_body(std::string_view bytes) override {
    if (too_large) return;
    std::size_t bound = owner->ctx_.config().tasks.max_bytes + kAnswerSlack;
    if (body.size() + bytes.size() > bound) {
      too_large = true;
      body.clear();
      return;
    }
    body.append(bytes);
  }
  void on_end() override {
    call = nullptr;
    in_flight = false;
    guarded(owner->ctx_.stats(), [&] { owner->answered(*this); });
  }
  void on_failure(proxy::UpstreamFailure kind, const std::string& what) override {
    call = nullptr;
    in_flight = false;
    guarded(owner->ctx_.stats(),
            [&] { owner->failed(*this, "upstream " + std::string(proxy::failure_name(kind)) + ": " + what); });
  }
};

TaskPoller::TaskPoller(LoopContext& ctx, proxy::UpstreamPool& pool, TaskOwners& owners, TaskPollStats& stats)
    : ctx_(ctx), pool_(pool), owners_(owners), stats_(stats) {
  timer_ = new uv_timer_t;
  uv_timer_init(ctx_.loop(), timer_);
  timer_->data = this;
}

TaskPoller::~TaskPoller() {
  close();
}

void TaskPoller::close() {
  if (closed_) return;
  closed_ = true;
  for (auto& [key, p] : tasks_) {
    if (p->call) pool_.cancel(p->call);
    p->call = nullptr;
  }
  stats_.tracked.fetch_sub(static_cast<std::int64_t>(tasks_.size()), std::memory_order_relaxed);
  tasks_.clear();
  uv_timer_stop(timer_);
  uv_close(reinterpret_cast<uv_handle_t*>(timer_), [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  timer_ = nullptr;
}

std::uint64_t TaskPoller::interval(std::optional<std::uint64_t> asked) const {
  const UpstreamConfig& u = ctx_.config().upstream;
  // The floor wins over the cap when they cross: the upstream is never polled faster than the floor.
  return std::max(u.task_poll_min_ms, std::min(asked.value_or(kDefaultIntervalMs), u.task_poll_max_ms));
}

void TaskPoller::track(CreatedTask task) {
  if (closed_) return;
  std::string key = task.tenant;
  key += '\0';
  key += task.task_id;
  if (tasks_.contains(key)) return;  // the upstream named a task it had named before: it is polled already
  // The id goes into a header field (Mcp-Name): visible ASCII only, and no longer than a listen may name.
  bool sendable = !task.task_id.empty() && task.task_id.size() <= ctx_.config().tasks.max_id_length &&
                  std::all_of(task.task_id.begin(), task.task_id.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; });
  if (!sendable) {
    stats_.refused.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Warn, "task_poll_refused",
              "a task is not polled: its id is not visible ASCII within --max-task-id-length",
              {{"tenant", task.tenant}});
    return;
  }
  std::uint64_t cap = ctx_.config().tasks.state_max_ttl_ms;
  std::uint64_t ttl = std::min(task.ttl_ms.value_or(cap), cap);
  auto claim = owners_.claim(task.tenant, task.task_id, task.principal, std::chrono::milliseconds(ttl));
  if (claim != TaskOwners::Claim::Claimed) {
    stats_.refused.fetch_add(1, std::memory_order_relaxed);
    log::line(LogLevel::Warn, "task_poll_refused",
              claim == TaskOwners::Claim::Full
                  ? "a task is not polled: --upstream-task-poll-max-tasks tasks are tracked"
                  : "a task is not polled: its id is another principal's task in this tenant",
              {{"tenant", task.tenant}});
    return;
  }
  auto p = std::make_unique<Polled>();
  p->owner = this;
  p->key = key;
  p->interval_ms = interval(task.poll_interval_ms);
  std::uint64_t now = uv_now(ctx_.loop());
  p->expires_at = now + ttl;
  std::string first = std::move(task.task_json);
  bool terminal = task.terminal;
  p->task = std::move(task);
  Polled& ref = *p;
  tasks_.emplace(std::move(key), std::move(p));
  stats_.tracked_total.fetch_add(1, std::memory_order_relaxed);
  stats_.tracked.fetch_add(1, std::memory_order_relaxed);
  // The creation's state is the task's first: kept for late listeners, and heard by any already there.
  if (publish(ref, first) && terminal) return stop(ref, Stop::Terminal);
  schedule(ref, now + ref.interval_ms);
}

void TaskPoller::schedule(Polled& p, std::uint64_t at) {
  p.version = ++next_version_;
  due_.push(Due{at, p.version, p.key});
  arm();
}

void TaskPoller::arm() {
  if (closed_) return;
  while (!due_.empty()) {
    auto it = tasks_.find(due_.top().key);
    if (it != tasks_.end() && it->second->version == due_.top().version) break;
    due_.pop();  // stale: rescheduled since, or gone
  }
  if (due_.empty()) {
    uv_timer_stop(timer_);
    return;
  }
  std::uint64_t now = uv_now(ctx_.loop());
  std::uint64_t at = due_.top().at;
  uv_timer_start(
      timer_,
      [](uv_timer_t* t) {
        auto* self = static_cast<TaskPoller*>(t->data);
        guarded(self->ctx_.stats(), [&] { self->on_timer(); });
      },
      at > now ? at - now : 0, 0);
}

void TaskPoller::on_timer() {
  std::uint64_t now = uv_now(ctx_.loop());
  while (!due_.empty() && due_.top().at <= now) {
    Due d = due_.top();
    due_.pop();
    auto it = tasks_.find(d.key);
    if (it == tasks_.end() || it->second->version != d.version) continue;
    Polled& p = *it->second;
    if (p.stopped) {
      Stop why = *p.stopped;
      auto& counter = why == Stop::Terminal ? stats_.stopped_terminal
                      : why == Stop::Ttl    ? stats_.stopped_ttl
                                            : stats_.stopped_failures;
      counter.fetch_add(1, std::memory_order_relaxed);
      stats_.tracked.fetch_sub(1, std::memory_order_relaxed);
      if (p.call) pool_.cancel(p.call);
      tasks_.erase(it);
      continue;
    }
    if (now >= p.expires_at) {
      stop(p, Stop::Ttl);
      continue;
    }
    if (p.in_flight) continue;  // its answer schedules it
    if (!watched(p)) {          // nobody here listens: looked at again in an interval, not polled
      schedule(p, now + p.interval_ms);
      continue;
    }
    poll(p, now);
  }
  arm();
}

bool TaskPoller::watched(const Polled& p) {
  Hub& hub = ctx_.hub();
  LocalInterest* interest = hub.interest();
  if (!interest) return true;  // no routing table (an embedding without it): assume someone listens
  std::optional<TenantId> tenant = hub.tenants().find(p.task.tenant);
  if (!tenant) return false;  // no client of the tenant here
  ShardSet shards(hub.shard_count());
  interest->shards_for(*tenant, Kind::TaskStatus, p.task.task_id, shards);
  return !shards.empty();
}

void TaskPoller::poll(Polled& p, std::uint64_t) {
  const proxy::UpstreamTarget& target = pool_.target();
  std::string body = R"({"jsonrpc":"2.0","id":"mcpfan-task-poll:)" + std::to_string(++next_id_) +
                     R"(","method":"tasks/get","params":{"taskId":)";
  append_json_string(body, p.task.task_id);
  if (p.task.request_state) {
    body += R"(,"requestState":)";
    append_json_string(body, *p.task.request_state);
  }
  body += R"(,"_meta":{"io.modelcontextprotocol/protocolVersion":)";
  append_json_string(body, p.task.protocol_version);
  body += R"(,"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}})";
  proxy::ForwardedRequest req;
  std::string& b = req.bytes;
  b.reserve(512 + body.size() + p.task.authorization.size() + p.task.task_id.size());
  b += "POST ";
  b += target.path;
  b += " HTTP/1.1\r\nHost: ";
  b += target.authority;
  b += "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  b += "MCP-Protocol-Version: ";
  b += p.task.protocol_version;
  b += "\r\nMcp-Method: tasks/get\r\nMcp-Name: ";
  b += p.task.task_id;  // visible ASCII: track() refused any other
  b += "\r\n";
  if (!p.task.authorization.empty()) {
    b += "Authorization: ";
    b += p.task.authorization;
    b += "\r\n";
  }
  b += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  b += body;
  p.status = 0;
  p.event_stream = false;
  p.too_large = false;
  p.body.clear();
  p.in_flight = true;
  stats_.polls.fetch_add(1, std::memory_order_relaxed);
  proxy::UpstreamCall* call = pool_.start(std::move(req), &p);
  if (p.in_flight) p.call = call;  // else it ended inside start(): the call is gone
}

void TaskPoller::answered(Polled& p) {
  if (closed_) return;
  if (p.too_large) return failed(p, "the upstream's tasks/get answer is larger than --max-task-bytes plus 64 KiB");
  if (p.status != 200) return failed(p, "the upstream answered tasks/get with HTTP " + std::to_string(p.status));
  std::optional<std::string> message = response_in(p.body, p.event_stream);
  std::optional<CreatedTask> t = message ? read_task_answer(*message, false) : std::nullopt;
  if (!t) return failed(p, "the upstream's tasks/get answer is not a task (an error, or not JSON-RPC)");
  if (t->task_id != p.task.task_id) return failed(p, "the upstream's tasks/get answer names another task");
  p.body.clear();
  p.body.shrink_to_fit();
  if (t->request_state) p.task.request_state = std::move(t->request_state);
  if (t->poll_interval_ms) p.interval_ms = interval(t->poll_interval_ms);
  if (t->task_json != p.task.task_json) {
    if (!publish(p, t->task_json)) return failed(p, "the task's new state was not published");
  }
  p.failures = 0;
  if (t->terminal) return stop(p, Stop::Terminal);
  schedule(p, uv_now(ctx_.loop()) + p.interval_ms);
}

void TaskPoller::failed(Polled& p, std::string_view why) {
  if (closed_) return;
  p.body.clear();
  stats_.failures.fetch_add(1, std::memory_order_relaxed);
  ++p.failures;
  unsigned max = ctx_.config().upstream.task_poll_max_failures;
  log::line(LogLevel::Warn, "task_poll_failed",
            std::string("polling a task on the upstream failed: ") + std::string(why) +
                (p.failures >= max ? "; polling it stops (--upstream-task-poll-max-failures)" : "; retried"),
            {{"tenant", p.task.tenant}, log::num("failures", p.failures)});
  if (p.failures >= max) return stop(p, Stop::Failures);
  schedule(p, uv_now(ctx_.loop()) + p.interval_ms);
}

bool TaskPoller::publish(Polled& p, const std::string& task_json) {
  Backplane* backplane = ctx_.backplane();
  std::string body = R"({"tenant":)";
  append_json_string(body, p.task.tenant);
  body += R"(,"method":"notifications/tasks","params":)";
  body += task_json;
  body += '}';
  Hub& hub = ctx_.hub();
  auto decoded = ctx_.publish_decoder().decode(body, hub.tenants(), std::nullopt, backplane != nullptr);
  if (!decoded) {
    log::line(LogLevel::Warn, "task_poll_invalid",
              "the upstream's task state is not a valid notifications/tasks: " + decoded.error().message,
              {{"tenant", p.task.tenant}});
    return false;
  }
  if (backplane && backplane->admit(decoded.value().notifications)) return false;
  if (!hub.publish(std::move(decoded.value().notifications), decoded.value().tasks)) return false;
  stats_.published.fetch_add(1, std::memory_order_relaxed);
  p.task.task_json = task_json;
  return true;
}

void TaskPoller::stop(Polled& p, Stop why) {
  p.stopped = why;
  schedule(p, uv_now(ctx_.loop()));  // erased by the timer, outside any sink call
}

}  // namespace mcpfan::detail

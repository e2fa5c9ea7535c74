#pragma once
// Watches a proxied `tools/call` answer go by for a task handle (poll-to-push, docs/protocol.md
// "Poll-to-push"): the answer streams to the client unchanged, and a copy of it is read on
// the side, bounded, and looked at once it is whole. A JSON answer is kept up to the bound; an
// event stream is kept event by event (only the event being read, and the last response). A
// CreateTaskResult in a 200 answer is handed to the loop's TaskPoller with the creating
// request's tenant, principal, credentials and protocol version.
//
// Loop-affine (the exchange's). Owned by the ProxiedAnswer, which drops it when the answer ends.
#include <memory>
#include <string>
#include <string_view>

#include "http/exchange.h"
#include "proxy/sse_events.h"
#include "server/task_poller.h"

namespace mcpfan::detail {

class TaskCapture final : public AnswerObserver {
 public:
  /** `context`: the creating request's (its task_id and task_json are filled from the answer). */
  TaskCapture(TaskPoller& poller, CreatedTask context, std::size_t max_bytes);

  void answer_head(int status, const proxy::HeaderList& headers) override;
  void answer_body(std::string_view bytes) override;
  void answer_end() override;

 private:
  void read(std::string_view bytes);
  void end();
  TaskPoller& poller_;
  CreatedTask context_;
  std::size_t max_;
  bool ok_ = false;  // a 200
  bool event_stream_ = false;
  bool over_ = false;  // past the bound: nothing is looked at
  std::string body_;   // JSON: the answer so far
  std::unique_ptr<proxy::SseEventSplitter> events_;
  std::string last_;  // SSE: the last event's data that is a task's answer
};

}  // namespace mcpfan::detail

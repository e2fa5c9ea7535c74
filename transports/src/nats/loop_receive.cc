#include "nats/loop_receive.h"

#include <nats/nats.h>

// nats.c's message filter (see loop_receive.h): exported by libnats, not declared in its
// public headers. Declared here by its ABI (a function of the connection, the message slot and
// a closure), weak, so that a libnats without it links and runs, on the delivery pool.
extern "C" {
using mcpfan_nats_msg_filter = void (*)(natsConnection* nc, natsMsg** msg, void* closure);
void natsConn_setFilterWithClosure(natsConnection* nc, mcpfan_nats_msg_filter f, void* closure) __attribute__((weak));
}

namespace mcpfan::detail::nats {

bool LoopReceive::available() noexcept {
  // The hook's signature is what nats.c 3.x has (3.4.1 read, and its master); a libnats of
  // another major version is not trusted with it, whatever it exports.
  return &natsConn_setFilterWithClosure != nullptr && (nats_GetVersionNumber() >> 16) == 3;
}

bool LoopReceive::is_data_subject(std::string_view prefix, std::string_view subject) noexcept {
  // <prefix>.v1.<tenant>.<k>.<rest>, k one of r, l, t (nats/subjects.h), rest non-empty.
  if (subject.size() <= prefix.size() || subject.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = subject.substr(prefix.size());
  if (rest.substr(0, 4) != ".v1.") return false;
  rest.remove_prefix(4);
  const std::size_t dot = rest.find('.');
  if (dot == 0 || dot == std::string_view::npos) return false;
  rest.remove_prefix(dot + 1);
  return rest.size() > 2 && (rest[0] == 'r' || rest[0] == 'l' || rest[0] == 't') && rest[1] == '.';
}

LoopReceive::LoopReceive(uv_loop_t* loop, std::string prefix, Take take, Deliver deliver)
    : loop_(loop),
      prefix_(std::move(prefix)),
      take_(std::move(take)),
      deliver_(std::move(deliver)),
      loop_thread_(std::this_thread::get_id()) {
  batch_.reserve(kMaxBatch);
  uv_check_init(loop_, &check_);
  check_.data = this;
  // After every poll phase: what the reads of this iteration brought goes out together. An
  // active check handle does not keep the loop from sleeping in its poll.
  uv_check_start(&check_, [](uv_check_t* h) { static_cast<LoopReceive*>(h->data)->flush(); });
}

void LoopReceive::attach(natsConnection* nc) {
  if (nc != nullptr && available()) natsConn_setFilterWithClosure(nc, &LoopReceive::filter, this);
}

void LoopReceive::detach(natsConnection* nc) {
  flush();
  destroy_held();
  if (nc != nullptr && available()) natsConn_setFilterWithClosure(nc, nullptr, nullptr);
}

void LoopReceive::close() {
  flush();
  destroy_held();
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
}

void LoopReceive::filter(natsConnection*, natsMsg** msg, void* closure) {
  auto* self = static_cast<LoopReceive*>(closure);
  if (msg == nullptr || *msg == nullptr || std::this_thread::get_id() != self->loop_thread_) return;
  const char* subject = natsMsg_GetSubject(*msg);
  const std::string_view s = subject ? std::string_view(subject) : std::string_view();
  if (!is_data_subject(self->prefix_, s)) return;  // not ours: nats.c delivers it as usual
  // Ours from here: nats.c forgets it once the slot is null.
  natsMsg* m = *msg;
  *msg = nullptr;
  ++self->taken_;
  const char* reply = natsMsg_GetReply(m);
  self->take_(s, reply ? std::string_view(reply) : std::string_view(),
              std::string_view(natsMsg_GetData(m), static_cast<std::size_t>(natsMsg_GetDataLength(m))), self->batch_);
  if (self->held_.empty()) self->held_since_ms_ = uv_now(self->loop_);
  self->held_.push_back(m);
  self->held_bytes_ += static_cast<std::size_t>(natsMsg_GetDataLength(m)) + s.size();
  if (self->batch_.size() >= kMaxBatch) self->flush();
}

void LoopReceive::flush() {
  if (!batch_.empty()) {
    ++batches_;
    deliver_(batch_);
    batch_.clear();
  }
  if (!held_.empty() &&
      (held_.size() >= kMaxHeld || held_bytes_ >= kMaxHeldBytes || uv_now(loop_) - held_since_ms_ >= kDestroyAfterMs)) {
    destroy_held();
  }
}

void LoopReceive::destroy_held() {
  for (natsMsg* m : held_) natsMsg_Destroy(m);
  held_.clear();
  held_bytes_ = 0;
}

}  // namespace mcpfan::detail::nats

#include "server/loop_context.h"

#include "server/conn.h"
#include "server/server_state.h"

namespace mcpfan::detail {

LoopContext::LoopContext(unsigned index, ServerState& state, std::function<StatsSnapshot()> snapshot)
    : index_(index),
      config_(state.config),
      hub_(*state.hub),
      shard_(state.hub->shard(index)),
      sessions_(state.sessions),
      limits_(state.limits),
      clients_(state.clients),
      publishers_(state.publishers),
      backplane_(state.backplane.get()),
      acceptors_(state.acceptors),
      tls_(state.tls.get()),
      publish_tls_(state.publish_tls.get()),
      snapshot_(std::move(snapshot)),
      publish_decoder_(config_.publish_limits()),
      rpc_decoder_(config_.rpc_limits()),
      read_buf_(64 * 1024, '\0') {
  uv_loop_init(&loop_);
  io_.loop = &loop_;
  io_.read_buffer = read_buf_.data();
  io_.read_buffer_size = read_buf_.size();
  io_.callback_exceptions = &stats_.callback_exceptions;
}

LoopContext::~LoopContext() = default;

void LoopContext::hand_over_h2(std::unique_ptr<net::Socket> sock, bool operator_listener, std::string_view first) {
  acceptors_.h2(*this, std::move(sock), operator_listener, first);
}

void LoopContext::link(Conn* c) noexcept {
  c->next_ = conns_;
  c->prev_ = nullptr;
  if (conns_) conns_->prev_ = c;
  conns_ = c;
}

void LoopContext::unlink(Conn* c) noexcept {
  if (c->prev_) c->prev_->next_ = c->next_;
  else conns_ = c->next_;
  if (c->next_) c->next_->prev_ = c->prev_;
  c->prev_ = c->next_ = nullptr;
  if (stopping_ && on_unlinked_) on_unlinked_(on_unlinked_arg_);
}

}  // namespace mcpfan::detail

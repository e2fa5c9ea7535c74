#include "nats/backplane.h"

#include <nats/nats.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <limits>
#include <random>

#include "nats/libuv_adapter.h"
#include "nats/subjects.h"
#include "server/log.h"

namespace mcpfan::detail::nats {

namespace {

std::uint64_t steady_us() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::uint64_t steady_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// nats.c's per-subscription bound, ahead of the delivery thread: past it the server's
// messages are dropped (and counted through the error handler) instead of piling up in this
// process. Its bytes bound is the receive budget's (see BackplaneConfig::nats).
constexpr int kPendingMsgs = 1 << 16;
constexpr std::uint64_t kInterestTickMs = 10;
constexpr std::size_t kOpsPerTick = 4096;
// At stop: how long the loop may write what was queued before the connection closes.
constexpr std::uint64_t kFinalWriteMs = 20;

// The server the connection is on ("nats://127.0.0.1:4222"), or "" when it has none.
std::string connected_url(natsConnection* nc) {
  char buf[256] = {};
  if (nc == nullptr || natsConnection_GetConnectedUrl(nc, buf, sizeof buf) != NATS_OK) return {};
  return buf;
}

// This process's heartbeat instance: random, so a restarted node is a new origin to its peers.
std::uint64_t random_instance() {
  std::random_device rd;
  std::uint64_t v = 0;
  while (v == 0) v = (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  return v;
}

// `_mf.<16 hex>`: the reply subject of every notification this process sends (see send()).
std::string own_reply_subject(std::uint64_t instance) {
  std::string out = "_mf.";
  append_instance_hex(out, instance);
  return out;
}

Error nats_error(const char* what, natsStatus s) {
  return Error{rpc_code::kInternalError, std::string("NATS ") + what + ": " + natsStatus_GetText(s)};
}

}  // namespace

Backplane::Backplane(BackplaneConfig config, Hub& hub)
    : config_(std::move(config)),
      hub_(hub),
      interest_(std::chrono::milliseconds(config_.nats.linger_ms), config_.nats.max_subjects),
      outage_(config_.nats.outage_buffer_bytes),
      receive_budget_(std::make_shared<ByteBudget>(config_.nats.receive_buffer_bytes)),
      instance_(random_instance()),
      heartbeat_subject_(heartbeat_subject(config_.nats.prefix)),
      own_reply_(own_reply_subject(instance_)),
      peers_(instance_, PeerTable::Limits{}) {}

int Backplane::pending_bytes_limit() const noexcept {
  return static_cast<int>(std::min<std::int64_t>(config_.nats.receive_buffer_bytes, std::numeric_limits<int>::max()));
}

Result<std::unique_ptr<Backplane>> Backplane::start(BackplaneConfig config, Hub& hub) {
  if (auto e = prefix_error(config.nats.prefix)) return Error{rpc_code::kInvalidParams, "--nats-prefix: " + *e};
  std::unique_ptr<Backplane> b(new Backplane(std::move(config), hub));
  const BackplaneConfig& c = b->config_;
  std::vector<std::string> urls;
  for (std::size_t at = 0; at <= c.nats.urls.size();) {
    std::size_t comma = c.nats.urls.find(',', at);
    if (comma == std::string::npos) comma = c.nats.urls.size();
    if (comma > at) urls.push_back(c.nats.urls.substr(at, comma - at));
    at = comma + 1;
  }
  if (urls.empty()) return Error{rpc_code::kInvalidParams, "--nats: no server URL"};
  std::vector<const char*> url_ptrs;
  for (const auto& u : urls) url_ptrs.push_back(u.c_str());

  natsStatus s = NATS_OK;
  if (c.nats.delivery_threads > 0 && (s = nats_SetMessageDeliveryPoolSize(c.nats.delivery_threads)) != NATS_OK) {
    return nats_error("delivery pool", s);
  }
  if ((s = natsOptions_Create(&b->opts_)) != NATS_OK) return nats_error("options", s);
  natsOptions* opts = b->opts_;
  // On nats.c's callback thread.
  auto on_disconnected = [](natsConnection*, void* self) {
    auto* b = static_cast<Backplane*>(self);
    b->blind_since_ms_.store(steady_ms(), std::memory_order_relaxed);
    b->connected_.store(false, std::memory_order_release);
    {
      std::lock_guard lock(b->queue_mu_);
      b->in_outage_ = true;
    }
    if (b->stopping_.load(std::memory_order_acquire)) return;   // our own close at stop()
    b->reread_pending_.store(true, std::memory_order_release);  // what other nodes sent meanwhile is lost to us
    b->note_fault();  // and what we had just written may never have reached the server: our peers hear of it
    b->logger().write(
        LogLevel::Warn, "nats_disconnected",
        "NATS disconnected; local delivery goes on, notifications for other nodes wait in the outage queue "
        "(--nats-outage-buffer-bytes) while nats.c reconnects",
        {{"node", b->node_name_}});
  };
  auto on_connected = [](natsConnection* nc, void* self) { static_cast<Backplane*>(self)->mark_connected(nc); };
  // nats.c runs connection callbacks on its own thread, in order, after natsConnection_Close()
  // returned; the closed callback is the last of them (nats.c conn.c _close): the destructor
  // waits for it, so no callback runs on a freed backplane.
  auto on_closed = [](natsConnection*, void* self) {
    auto* b = static_cast<Backplane*>(self);
    std::lock_guard lock(b->closed_mu_);
    b->closed_cb_ = true;
    b->closed_cv_.notify_all();
  };
  auto on_error = [](natsConnection*, natsSubscription*, natsStatus err, void* self) {
    // Slow consumer: messages past a subscription's pending bound were dropped.
    auto* b = static_cast<Backplane*>(self);
    if (err == NATS_SLOW_CONSUMER) {
      b->dropped_.fetch_add(1, std::memory_order_relaxed);
      b->reread_pending_.store(true, std::memory_order_release);
      b->logger().write(LogLevel::Warn, "nats_slow_consumer",
                        "NATS slow consumer: messages from other nodes dropped (a subscription's pending bound, "
                        "--nats-receive-buffer-bytes, was full)");
    } else {
      b->logger().write(LogLevel::Warn, "nats_error",
                        std::string("NATS asynchronous error: ") + natsStatus_GetText(err));
    }
  };
  const std::string name = c.nats.node_name.empty() ? "mcpfan" : c.nats.node_name;
  b->node_name_ = name;
  const bool on_loop = c.io() == NatsIo::Libuv;
  if (uv_loop_init(&b->loop_) != 0) return Error{rpc_code::kInternalError, "NATS: uv_loop_init failed"};
  b->loop_ready_ = true;
  if ((s = natsOptions_SetServers(opts, url_ptrs.data(), static_cast<int>(url_ptrs.size()))) != NATS_OK ||
      (s = natsOptions_SetName(opts, name.c_str())) != NATS_OK ||
      (s = natsOptions_SetNoEcho(opts, true)) != NATS_OK ||      // never our own messages back
      (s = natsOptions_SetMaxReconnect(opts, -1)) != NATS_OK ||  // a tier never gives up (default: 60 tries)
      (s = natsOptions_SetReconnectWait(opts, 250)) != NATS_OK ||
      (s = natsOptions_SetReconnectJitter(opts, 100, 1000)) != NATS_OK ||
      (s = natsOptions_SetReconnectBufSize(opts, c.nats.outage_buffer_bytes)) != NATS_OK ||
      // A dead link or a stalled server noticed in seconds (nats.c's default: 2 minutes per ping).
      (s = natsOptions_SetPingInterval(opts, static_cast<int64_t>(c.nats.ping_interval_ms))) != NATS_OK ||
      (s = natsOptions_SetMaxPingsOut(opts, c.nats.max_pings_out)) != NATS_OK ||
      // Socket IO on our own loop (the adapter) or on nats.c's reader thread. Either way
      // nats.c's flusher thread waits 1 ms before each write (+1 ms on every hop) unless
      // publishes are "sent at once": on the loop that only asks it for the socket's
      // writability, so what piles up while it is busy still goes out in one write.
      (on_loop && (s = libuv::use_loop(opts, &b->loop_)) != NATS_OK) ||
      (s = natsOptions_SetSendAsap(opts, !c.nats.publish_batching)) != NATS_OK ||
      // A shared pool, not a thread per subject (measured: docs/performance.md "NATS hop: IO and delivery").
      (s = natsOptions_UseGlobalMessageDelivery(opts, c.nats.delivery_threads > 0)) != NATS_OK ||
      (s = natsOptions_SetDisconnectedCB(opts, on_disconnected, b.get())) != NATS_OK ||
      (s = natsOptions_SetReconnectedCB(opts, on_connected, b.get())) != NATS_OK ||
      (s = natsOptions_SetClosedCB(opts, on_closed, b.get())) != NATS_OK ||
      (s = natsOptions_SetErrorHandler(opts, on_error, b.get())) != NATS_OK ||
      // The node serves locally while NATS is away, from the first connect on. On the loop,
      // nats.c's first attach must come from the loop's thread, which its retry thread is
      // not: there the backplane retries the first connect itself.
      (!on_loop && (s = natsOptions_SetRetryOnFailedConnect(opts, true, on_connected, b.get())) != NATS_OK)) {
    return nats_error("options", s);
  }
  if (!c.nats.creds_file.empty() &&
      (s = natsOptions_SetUserCredentialsFromFiles(opts, c.nats.creds_file.c_str(), nullptr)) != NATS_OK) {
    return nats_error("credentials", s);
  }
  if (!c.nats.tls_ca_file.empty() &&
      ((s = natsOptions_SetSecure(opts, true)) != NATS_OK ||
       (s = natsOptions_LoadCATrustedCertificates(opts, c.nats.tls_ca_file.c_str())) != NATS_OK)) {
    return nats_error("TLS CA", s);
  }
  // The first connect runs on the backplane's thread (the adapter needs it there); its
  // outcome comes back here, so that a bad configuration fails the start.
  std::promise<int> first;
  std::future<int> outcome = first.get_future();
  b->thread_ = std::thread([p = b.get(), first = std::move(first)]() mutable { p->run(std::move(first)); });
  s = static_cast<natsStatus>(outcome.get());
  if (s != NATS_OK && s != NATS_NOT_YET_CONNECTED && s != NATS_NO_SERVER) return nats_error("connect", s);
  if (s != NATS_OK) {
    b->logger().write(
        LogLevel::Error, "nats_unreachable",
        std::string("cannot reach NATS (") + natsStatus_GetText(s) +
            "); serving local clients only and retrying; notifications for other nodes wait in the outage queue",
        {{"nats", c.nats.urls}, {"node", name}});
  }
  return b;
}

void Backplane::mark_connected(natsConnection* nc) {
  // Read here, once per (re)connect, for admit() on the workers: nats.c's getter takes the
  // connection's lock, which its reconnect thread holds through each connect attempt (seconds
  // to a partitioned server), and a worker loop must never wait for that.
  max_payload_.store(natsConnection_GetMaxPayload(nc), std::memory_order_relaxed);
  connected_at_ms_.store(steady_ms(), std::memory_order_relaxed);  // the settle delay starts
  blind_since_ms_.store(0, std::memory_order_relaxed);
  connected_.store(true, std::memory_order_release);
  const bool again = ever_connected_.exchange(true, std::memory_order_acq_rel);
  logger().write(LogLevel::Info, again ? "nats_reconnected" : "nats_connected",
                 again ? "NATS reconnected" : "NATS connected", {{"url", connected_url(nc)}, {"node", node_name_}});
}

Backplane::~Backplane() {
  stopping_.store(true, std::memory_order_release);
  if (thread_.joinable()) {
    uv_async_send(&stop_);  // the loop closes the connection on its own thread, then returns
    thread_.join();
  }
  if (conn_.load(std::memory_order_acquire) != nullptr) {
    // The loop closed it (close_connection): its last callback still comes from nats.c's
    // callback thread. Bounded: a callback thread that never runs costs this wait, not a hang.
    std::unique_lock lock(closed_mu_);
    (void)closed_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return closed_cb_; });
    // A message handler may still be running on nats.c's delivery pool (it uses the hub and
    // this object): wait, bounded, until every subscription has said it is done.
    if (!closed_cv_.wait_for(lock, std::chrono::seconds(5), [&] { return live_handlers_ == 0; })) {
      logger().write(LogLevel::Warn, "nats_stop",
                     std::to_string(live_handlers_) +
                         " subscription handlers did not report their end within 5 s; stopping anyway");
    }
  }
  for (auto& [subject, sub] : subs_) natsSubscription_Destroy(sub);
  subs_.clear();
  if (heartbeat_sub_ != nullptr) natsSubscription_Destroy(heartbeat_sub_);
  if (natsConnection* c = conn_.load(std::memory_order_acquire)) natsConnection_Destroy(c);
  if (loop_ready_) (void)uv_loop_close(&loop_);
  if (opts_) natsOptions_Destroy(opts_);
}

bool Backplane::try_connect() {
  natsConnection* c = nullptr;
  natsStatus s = natsConnection_Connect(&c, opts_);
  if (c) conn_.store(c, std::memory_order_release);
  // On the loop, before its first read of a message (the subscriptions come from the tick).
  if (c && loop_receive_) loop_receive_->attach(c);
  if (s == NATS_OK) mark_connected(c);
  last_connect_ = static_cast<int>(s);
  return s == NATS_OK || s == NATS_NOT_YET_CONNECTED;  // else (on the loop): retried by the tick
}

void Backplane::run(std::promise<int> first) {
  // The loop: the connection's socket IO (--nats-io libuv), the interest tick, and the stop
  // signal. Its handles are initialised here, on the thread that runs it, before start()
  // returns (so the destructor's uv_async_send always has a handle to signal).
  if (config_.io() == NatsIo::Libuv) libuv::set_thread_loop(&loop_);
  log::Bind logging(&logger());
  uv_async_init(&loop_, &stop_, [](uv_async_t* h) { static_cast<Backplane*>(h->data)->close_loop(); });
  stop_.data = this;
  uv_timer_init(&loop_, &tick_);
  tick_.data = this;
  uv_async_init(&loop_, &flush_, [](uv_async_t* h) { static_cast<Backplane*>(h->data)->on_flush_request(); });
  flush_.data = this;
  uv_timer_init(&loop_, &batch_timer_);
  batch_timer_.data = this;
  uv_timer_init(&loop_, &heartbeat_);
  heartbeat_.data = this;
  if (config_.receive_on_loop()) {
    loop_receive_ = std::make_unique<LoopReceive>(
        &loop_, config_.nats.prefix,
        [this](std::string_view subject, std::string_view reply, std::string_view body,
               std::vector<Hub::Forwarded>& batch) {
          try {
            receive(subject, reply, body, &batch);
          } catch (...) {
            dropped_.fetch_add(1, std::memory_order_relaxed);
          }
        },
        [this](std::vector<Hub::Forwarded>& batch) {
          try {  // on the loop's check phase: nothing may escape into libuv
            hub_.deliver_forwarded(batch);
            for (const Hub::Forwarded& f : batch) count(f.result);
          } catch (...) {
            dropped_.fetch_add(batch.size(), std::memory_order_relaxed);
          }
        });
  }
  logger().write(LogLevel::Info, "nats_receive",
                 loop_receive_ ? "messages from other nodes are taken on the backplane's loop, one batch per read"
                               : "messages from other nodes are taken by nats.c's delivery thread",
                 {{"node", node_name_}});
  (void)try_connect();
  const auto outcome = static_cast<natsStatus>(last_connect_);
  if (outcome != NATS_OK) {  // what is forwarded until the first connect waits, and is logged when it goes
    blind_since_ms_.store(steady_ms(), std::memory_order_relaxed);
    // The node serves its listeners meanwhile: what other nodes send until it connects is lost to
    // them, so the first connect brings re-read hints, as a reconnect does.
    reread_pending_.store(true, std::memory_order_release);
    std::lock_guard lock(queue_mu_);
    in_outage_ = true;
  }
  const bool fatal = outcome != NATS_OK && outcome != NATS_NOT_YET_CONNECTED && outcome != NATS_NO_SERVER;
  // On a fatal error start() reports it and destroys the backplane, whose stop signal ends
  // this loop like any other: stop_ is only ever closed by its own callback.
  if (!fatal) {
    uv_timer_start(
        &tick_, [](uv_timer_t* h) { static_cast<Backplane*>(h->data)->tick(); }, kInterestTickMs, kInterestTickMs);
    if (const std::uint64_t every = config_.nats.heartbeat_ms; every > 0) {
      uv_timer_start(
          &heartbeat_, [](uv_timer_t* h) { static_cast<Backplane*>(h->data)->beat(); }, every, every);
    }
  }
  first.set_value(last_connect_);
  uv_run(&loop_, UV_RUN_DEFAULT);
}

void Backplane::tick() {
  if (stopping_.load(std::memory_order_acquire)) return;
  if (!conn_.load(std::memory_order_acquire)) {
    // The first connect failed (on the loop nats.c does not retry it): again, every second.
    if (++connect_ticks_ * kInterestTickMs >= 1000) {
      connect_ticks_ = 0;
      (void)try_connect();
    }
    return;
  }
  // Before the first connect the operations wait in the table; after it, nats.c itself
  // re-sends every subscription on each reconnect.
  if (connected()) apply(interest_.take(steady_ms(), kOpsPerTick));
  if (connected() && heartbeat_sub_ == nullptr && config_.nats.heartbeat_ms > 0) {
    // Once, at the first connect: nats.c renews it on every reconnect, as every subscription.
    if (natsConnection_Subscribe(&heartbeat_sub_, conn_.load(std::memory_order_acquire), heartbeat_subject_.c_str(),
                                 &Backplane::on_message, this) == NATS_OK) {
      track_handler(heartbeat_sub_);
      peers_.listening(steady_ms());
    } else {
      heartbeat_sub_ = nullptr;  // tried again at the next tick
    }
  }
  release_queue();  // the outage queue after the settle delay, or anything a batch left
  maybe_send_reread_hints();
}

void Backplane::maybe_send_reread_hints() {
  // After a miss this node could observe (a disconnect, a slow-consumer drop, a received
  // message it had no room for), once NATS is back and the settle delay has let the
  // subscriptions return: every local listener is told to re-read what it watches. At most one
  // wave per kRereadIntervalMs: misses meanwhile are covered by the next wave.
  if (!reread_pending_.load(std::memory_order_acquire) || !settled()) return;
  const std::uint64_t now = steady_ms();
  if (now < reread_not_before_ms_.load(std::memory_order_acquire)) return;
  if (last_reread_ms_ != 0 && now - last_reread_ms_ < kRereadIntervalMs) return;
  reread_pending_.store(false, std::memory_order_release);
  last_reread_ms_ = now;
  const Hub::RereadWave wave = hub_.send_reread_hints();
  // A hint a full shard inbox refused is owed still: the next wave (a second later) sends them all again.
  if (wave.refused > 0) reread_pending_.store(true, std::memory_order_release);
  reread_waves_.fetch_add(1, std::memory_order_relaxed);
  reread_hints_.fetch_add(wave.posted, std::memory_order_relaxed);
  logger().write(LogLevel::Info, "nats_reread_hints",
                 "re-read hints sent to local listeners: notifications from other nodes may have been missed",
                 {log::num("hints", static_cast<std::int64_t>(wave.posted)),
                  log::num("refused", static_cast<std::int64_t>(wave.refused))});
}

void Backplane::note_miss(std::uint64_t delay_ms) {
  const std::uint64_t due = steady_ms() + delay_ms;
  std::uint64_t was = reread_not_before_ms_.load(std::memory_order_relaxed);
  while (was < due && !reread_not_before_ms_.compare_exchange_weak(was, due, std::memory_order_acq_rel)) {}
  reread_pending_.store(true, std::memory_order_release);
}

void Backplane::note_fault() {
  faults_.fetch_add(1, std::memory_order_relaxed);
}

void Backplane::beat() {
  if (stopping_.load(std::memory_order_acquire)) return;
  const std::uint64_t now = steady_ms();
  if (const std::size_t silent = peers_.sweep(now); silent > 0) {
    // A dead peer, or a path to it down: what it sent last may be lost. Its next heartbeat, if it
    // comes, says whether more was.
    note_miss(config_.nats.settle_ms);
    logger().write(LogLevel::Warn, "nats_peer_silent",
                   "other nodes' heartbeats stopped: what they sent may be lost to this node; its listeners get "
                   "re-read hints",
                   {log::num("peers", static_cast<std::int64_t>(silent))});
  }
  send_heartbeat(/*leaving=*/false);
}

void Backplane::send_heartbeat(bool leaving) {
  natsConnection* c = conn_.load(std::memory_order_acquire);
  // While disconnected none is sent: our peers hear our faults after the reconnect.
  if (c == nullptr || !connected() || config_.nats.heartbeat_ms == 0) return;
  Heartbeat hb{instance_,
               node_name_,
               ++heartbeat_seq_,
               faults_.load(std::memory_order_relaxed),
               sent_.load(std::memory_order_relaxed),
               config_.nats.heartbeat_ms,
               leaving};
  const std::string body = encode_heartbeat(hb);
  // A failed one still used its number: the peers see the gap and send hints, which is right.
  if (natsConnection_Publish(c, heartbeat_subject_.c_str(), body.data(), static_cast<int>(body.size())) == NATS_OK) {
    heartbeats_sent_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Backplane::hear(std::string_view body) {
  std::optional<Heartbeat> hb = decode_heartbeat(body);
  if (!hb) {
    count(Reject::Malformed);
    return;
  }
  const PeerTable::Miss miss = peers_.heard(*hb, steady_ms());
  if (miss == PeerTable::Miss::None) return;
  // The path is back (this heartbeat came through it); the interest it carries may still be
  // arriving at the servers, so the hints wait a settle delay: what is sent after them reaches us.
  note_miss(config_.nats.settle_ms);
  const char* why = miss == PeerTable::Miss::Gap ? "gap" : miss == PeerTable::Miss::Faults ? "faults" : "late";
  logger().write(LogLevel::Warn, "nats_peer_miss",
                 "another node's heartbeats show that notifications it sent may be lost to this node; its listeners "
                 "get re-read hints",
                 {{"peer", hb->node}, {"why", why}, log::num("seq", static_cast<std::int64_t>(hb->seq))});
}

void Backplane::close_loop() {  // the stop signal's callback: once
  // What is queued (a batch window's worth) goes out first: the loop writes it at its next
  // turn, so the connection closes a moment later (at-most-once, but not lost for nothing).
  release_queue();
  {
    std::lock_guard lock(queue_mu_);
    if (!queue_.empty()) note_fault();  // still held (the settle delay): lost with this process
  }
  send_heartbeat(/*leaving=*/true);  // after what it sent: its peers drop it without hints
  uv_timer_stop(&batch_timer_);
  uv_timer_stop(&heartbeat_);
  uv_timer_stop(&tick_);
  uv_timer_start(
      &tick_, [](uv_timer_t* t) { static_cast<Backplane*>(t->data)->close_connection(); }, kFinalWriteMs, 0);
}

void Backplane::close_connection() {
  // No more deliveries into the hub from here; on the loop the adapter detaches here too.
  if (loop_receive_) loop_receive_->detach(conn_.load(std::memory_order_acquire));
  if (natsConnection* c = conn_.load(std::memory_order_acquire)) natsConnection_Close(c);
  if (loop_receive_) {
    loop_receive_->close();
    logger().write(LogLevel::Info, "nats_receive_stop", "messages taken from NATS on the backplane's loop",
                   {log::num("messages", loop_receive_->taken()), log::num("batches", loop_receive_->batches())});
  }
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&batch_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&heartbeat_), nullptr);
  // A forward() after this would signal a closed handle: the hub is closed before the
  // backplane is destroyed, so none comes.
  uv_close(reinterpret_cast<uv_handle_t*>(&flush_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&stop_), nullptr);
}

std::string Backplane::subject_of(std::string_view tenant, Kind kind, std::string_view uri) const {
  return interest_of(config_.nats.prefix, tenant, kind, uri);
}

void Backplane::key_added(TenantId tenant, Kind kind, std::string_view uri) {
  // Called inside the shard's index: nothing may escape.
  try {
    std::string name = hub_.tenants().name(tenant);
    if (name.empty()) {  // reclaimed meanwhile: nothing to name
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // Past the bound the table folds the largest tenant into one subject; refused (and
    // counted) only when no tenant has two subjects to fold.
    (void)interest_.add(subject_of(name, kind, uri), tenant_scope(config_.nats.prefix, name));
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Backplane::key_removed(TenantId tenant, Kind kind, std::string_view uri) {
  try {
    std::string name = hub_.tenants().name(tenant);
    if (!name.empty()) {
      interest_.remove(subject_of(name, kind, uri), steady_ms(), tenant_scope(config_.nats.prefix, name));
    }
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Backplane::apply(const std::vector<InterestTable::Op>& ops) {
  for (const InterestTable::Op& op : ops) {
    if (op.subscribe) {
      natsSubscription* sub = nullptr;
      if (natsConnection_Subscribe(&sub, conn_.load(std::memory_order_acquire), op.subject.c_str(),
                                   &Backplane::on_message, this) != NATS_OK) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      track_handler(sub);
      subs_[op.subject] = sub;
    } else if (auto it = subs_.find(op.subject); it != subs_.end()) {
      (void)natsSubscription_Unsubscribe(it->second);
      natsSubscription_Destroy(it->second);
      subs_.erase(it);
    }
  }
}

void Backplane::track_handler(natsSubscription* sub) {
  (void)natsSubscription_SetPendingLimits(sub, kPendingMsgs, pending_bytes_limit());
  {
    std::lock_guard lock(closed_mu_);
    ++live_handlers_;
  }
  // After the subscription closes (unsubscribed, or with the connection) and its handler
  // has returned for the last time: from then on on_message() is never called for it.
  if (natsSubscription_SetOnCompleteCB(sub, &Backplane::on_subscription_complete, this) != NATS_OK) {
    std::lock_guard lock(closed_mu_);
    --live_handlers_;  // not tracked: an old nats.c; the closed-callback wait is all there is
  }
}

void Backplane::on_subscription_complete(void* closure) {
  auto* self = static_cast<Backplane*>(closure);
  std::lock_guard lock(self->closed_mu_);
  --self->live_handlers_;
  self->closed_cv_.notify_all();
}

void Backplane::on_message(natsConnection*, natsSubscription*, natsMsg* msg, void* closure) {
  auto* self = static_cast<Backplane*>(closure);
  // nats.c's delivery thread: no exception may leave, and no socket of ours is touched here.
  try {
    const char* subject = natsMsg_GetSubject(msg);
    const std::string_view s = subject ? std::string_view(subject) : std::string_view();
    const std::string_view body(natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
    const char* reply = natsMsg_GetReply(msg);
    if (s == self->heartbeat_subject_)
      self->hear(body);
    else
      self->receive(s, reply ? std::string_view(reply) : std::string_view(), body);
  } catch (...) {
    self->dropped_.fetch_add(1, std::memory_order_relaxed);
  }
  natsMsg_Destroy(msg);
}

void Backplane::receive(std::string_view subject, std::string_view reply, std::string_view body,
                        std::vector<Hub::Forwarded>* batch) {
  received_.fetch_add(1, std::memory_order_relaxed);
  // This process's own message, routed back through another server (its reply subject names us).
  if (!reply.empty() && reply == own_reply_) {
    count(Reject::Own);
    return;
  }
  // One decoder per delivery thread (it owns a reusable parser).
  thread_local PublishDecoder decoder(config_.limits);
  // The subject decides the tenant, and a message is one notification (nats/inbound.h).
  Inbound in = check_inbound(decoder, config_.nats.prefix, subject, body, hub_.tenants());
  if (in.rejected) {
    count(*in.rejected);
    return;
  }
  if (in.task) hub_.task_states().put(std::move(*in.task));
  if (!in.payload) {  // its tenant has no clients here
    unmatched_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // The receive budget: what this node has received and not yet delivered, from here until
  // the last shard it goes to has matched it (the shard releases the hold).
  const Payload& p = *in.payload;
  const auto bytes = static_cast<std::int64_t>(sizeof(Payload) + p.frame_size(Framing::Sse) +
                                               p.plain(Framing::Sse).size() + p.uri().size());
  struct Hold {
    std::shared_ptr<ByteBudget> budget;  // first: it outlives the reservation
    ByteReservation bytes;
  };
  ByteReservation reserved = receive_budget_->try_reserve(bytes);
  if (!reserved.held()) {
    count(Reject::ReceiveBudget);
    reread_pending_.store(true, std::memory_order_release);
    return;
  }
  auto hold = std::make_shared<Hold>(Hold{receive_budget_, std::move(reserved)});
  if (batch) {
    batch->push_back(Hub::Forwarded{std::move(in.payload), std::move(hold)});
    return;
  }
  count(hub_.deliver_forwarded(std::move(in.payload), std::move(hold)));
}

void Backplane::count(Hub::Delivery d) noexcept {
  switch (d) {
    case Hub::Delivery::Posted:
      break;
    case Hub::Delivery::Unmatched:
      unmatched_.fetch_add(1, std::memory_order_relaxed);
      break;
    case Hub::Delivery::InboxFull:
      count(Reject::InboxFull);
      reread_pending_.store(true, std::memory_order_release);
      break;
    case Hub::Delivery::Closed:
      break;  // the server stops
  }
}

std::int64_t Backplane::max_payload() const noexcept {
  return max_payload_.load(std::memory_order_relaxed);
}

bool Backplane::settled() const {
  return connected() && steady_ms() >= connected_at_ms_.load(std::memory_order_relaxed) + config_.nats.settle_ms;
}

std::int64_t Backplane::cost(const Notification& m) {
  return static_cast<std::int64_t>(m.message.size() + m.tenant.size() + m.uri.size() + kMaxSubjectBytes);
}

void Backplane::on_flush_request() {
  // A first notification after a quiet spell goes at once; one that follows a send within
  // the window waits for the window's end, and whatever piled up by then leaves together.
  const std::uint64_t now = steady_us();
  const std::uint64_t due = last_send_us_ + config_.nats.batch_window_us;
  if (now >= due) {
    release_queue();
  } else if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&batch_timer_))) {
    uv_timer_start(
        &batch_timer_, [](uv_timer_t* t) { static_cast<Backplane*>(t->data)->release_queue(); },
        (due - now + 999) / 1000, 0);
  }
}

void Backplane::release_queue() {
  std::deque<Waiting> out;
  {
    std::lock_guard lock(queue_mu_);
    flush_requested_ = false;
    // Held while disconnected, and for the settle delay after a (re)connect (peers may not
    // have re-subscribed yet); the interest tick retries every 10 ms.
    if (!settled()) return;
    if (in_outage_) {  // the first release since a disconnect: what waited goes out now
      in_outage_ = false;
      std::int64_t bytes = 0;
      for (const Waiting& w : queue_) bytes += cost(w.note);
      logger().write(LogLevel::Info, "nats_outage_released",
                     "NATS outage queue released: what waited for other nodes is sent",
                     {log::num("notifications", queue_.size()), log::num("bytes", bytes),
                      log::num("waited_ms", queue_.empty() ? 0 : steady_ms() - queue_.front().since_ms)});
    }
    if (queue_.empty()) return;
    // Held too while nats.c's own buffer is past the bound (the server does not keep up):
    // nats.c would grow it without limit; ours is bounded, and can_take() refuses past it.
    natsConnection* c = conn_.load(std::memory_order_acquire);
    if (c && natsConnection_Buffered(c) > config_.nats.outage_buffer_bytes) return;
    out.swap(queue_);
  }
  // Only this (the loop's) thread sends, in queue order: what is queued meanwhile goes next.
  // Each one's outage reservation is given back as it leaves (NATS has it from here).
  for (Waiting& w : out) {
    send(w.note);
    w.note.reserved.reset();
  }
  last_send_us_ = steady_us();
}

std::optional<BackplaneRefusal> Backplane::admit(std::vector<Notification>& notes) {
  // All or nothing: a notification NATS would refuse is refused before anything is delivered.
  const std::int64_t max = max_payload();
  for (const Notification& n : notes) {
    if (max > 0 && static_cast<std::int64_t>(n.message.size()) > max) {
      return BackplaneRefusal{BackplaneRefusal::Why::TooLarge, "a notification of " + std::to_string(n.message.size()) +
                                                                   " bytes exceeds the NATS servers' max_payload of " +
                                                                   std::to_string(max)};
    }
  }
  if (!can_take(notes)) {
    return BackplaneRefusal{BackplaneRefusal::Why::Busy,
                            "the NATS backplane cannot take more now (disconnected, or NATS not keeping up) and "
                            "its outage buffer is full; nothing was published"};
  }
  return std::nullopt;
}

bool Backplane::can_take(std::vector<Notification>& messages) {
  // Connected and keeping up, the budget holds a batch window's worth; disconnected, or with
  // NATS not keeping up, it fills up to the bound, and past it a publish is refused whole.
  // One reservation for the whole publish (all or nothing), then split among its
  // notifications, so that each gives its own bytes back when it goes.
  std::int64_t need = 0;
  for (const Notification& m : messages) need += m.forwarded() ? cost(m) : 0;
  if (need == 0) return true;
  ByteReservation all = outage_.try_reserve(need);
  if (!all.held()) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  for (Notification& m : messages) {
    if (m.forwarded()) m.reserved = all.split(cost(m));
  }
  return true;
}

void Backplane::send(const Notification& n) {
  std::string subject;
  append_subject(subject, config_.nats.prefix, n.tenant, n.kind, n.uri);
  // The reply subject names this process (nobody answers): a receiver drops its own messages by it.
  natsStatus s =
      natsConnection_PublishRequest(conn_.load(std::memory_order_acquire), subject.c_str(), own_reply_.c_str(),
                                    n.message.data(), static_cast<int>(n.message.size()));
  (s == NATS_OK ? sent_ : dropped_).fetch_add(1, std::memory_order_relaxed);
  if (s != NATS_OK) note_fault();
}

void Backplane::forward(std::vector<Notification>& notifications) {
  bool wake = false;
  {
    std::lock_guard lock(queue_mu_);
    const std::uint64_t now = steady_ms();
    for (Notification& n : notifications) {
      if (!n.forwarded()) continue;
      // Admitted by can_take(), it holds its bytes already; else it takes them now or is
      // dropped (a publish path that skipped admission must not pass the bound either).
      if (!n.reserved.held() && !(n.reserved = outage_.try_reserve(cost(n))).held()) {
        dropped_.fetch_add(1, std::memory_order_relaxed);
        note_fault();  // other nodes' listeners miss it: our next heartbeat tells them
        continue;
      }
      queue_.push_back(Waiting{std::move(n), now});
    }
    // One wake-up of the backplane's loop per batch; while NATS is away or the settle delay
    // runs, the interest tick releases the queue instead.
    if (!flush_requested_ && !queue_.empty() && settled()) wake = flush_requested_ = true;
  }
  if (wake) uv_async_send(&flush_);
}

Backplane::Stats Backplane::stats() const {
  InterestTable::Stats i = interest_.stats();
  Stats s;
  s.connected = connected();
  s.subjects = i.subjects;
  s.sub_ops = i.sub_ops;
  s.unsub_ops = i.unsub_ops;
  s.received = received_.load(std::memory_order_relaxed);
  s.unmatched = unmatched_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed) + i.refused;
  s.compacted_tenants = i.compacted_tenants;
  s.compactions = i.compactions;
  s.sent = sent_.load(std::memory_order_relaxed);
  s.refused = refused_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < kRejectReasons; ++i) s.rejected[i] = rejected_[i].load(std::memory_order_relaxed);
  s.peers = peers_.stats();
  {
    std::lock_guard lock(queue_mu_);
    s.queued = queue_.size();
    s.held_bytes = outage_.used();
    s.receive_bytes = receive_budget_->used();
    if (std::uint64_t since = blind_since_ms_.load(std::memory_order_relaxed); since != 0 && !s.connected) {
      s.blind_seconds = static_cast<double>(steady_ms() - since) / 1000.0;
    }
    s.reread_waves = reread_waves_.load(std::memory_order_relaxed);
    s.reread_hints = reread_hints_.load(std::memory_order_relaxed);
    s.faults = faults_.load(std::memory_order_relaxed);
    s.heartbeats_sent = heartbeats_sent_.load(std::memory_order_relaxed);
    if (!queue_.empty()) s.lag_seconds = static_cast<double>(steady_ms() - queue_.front().since_ms) / 1000.0;
  }
  return s;
}

}  // namespace mcpfan::detail::nats

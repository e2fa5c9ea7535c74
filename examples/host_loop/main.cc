// A host that drives an mcpfan shard from its own libuv loop, with the engine alone: the host
// owns the loop, the streams (here a sink that counts what it is given) and the threads that
// publish; mcpfan matches, coalesces and batches.
//
// The contract (shard.h, hub.h): Shard::set_waker() before the first post; the waker runs on
// the publishing thread, so it only calls uv_async_send(). drain() and flush() run on the
// loop's thread, as does every other loop-affine Shard method and every StreamSink call.
// Hub::close() comes before the loop stops draining. Exits 0 when every publish arrived.
#include <uv.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "mcpfan/hub.h"
#include "mcpfan/mcp.h"
#include "mcpfan/payload.h"

namespace {

constexpr int kThreads = 2;
constexpr int kPerThread = 500;

struct Host;

/** The host's stream: counts notifications; a real host would uv_write() the iovecs. */
struct CountingSink final : mcpfan::StreamSink {
  Host* host = nullptr;
  void write_batch(mcpfan::OutBatch&& batch) override;
  void close_requested(mcpfan::CloseReason) override { std::fputs("host_loop: stream closed by the shard\n", stderr); }
};

struct Host {
  uv_loop_t loop{};
  uv_async_t wake{};
  uv_timer_t deadline{};
  mcpfan::Hub hub{1};
  mcpfan::Shard& shard = hub.shard(0);
  CountingSink sink;
  mcpfan::StreamId stream;
  int received = 0;
};

void CountingSink::write_batch(mcpfan::OutBatch&& batch) {
  for (const iovec& v : batch.bufs) {
    std::string_view bytes(static_cast<const char*>(v.iov_base), v.iov_len);
    for (std::size_t at = bytes.find("resources/updated"); at != std::string_view::npos;
         at = bytes.find("resources/updated", at + 1)) {
      ++host->received;
    }
  }
  host->shard.write_done(host->stream);  // written (synchronously, here): the next batch may come
  if (host->received == kThreads * kPerThread) uv_stop(&host->loop);
}

}  // namespace

int main() {
  Host host;
  host.sink.host = &host;
  uv_loop_init(&host.loop);
  host.wake.data = &host;
  // uv_async_send coalesces: one wake-up may stand for many posts, so drain until empty.
  uv_async_init(&host.loop, &host.wake, [](uv_async_t* a) {
    Host& h = *static_cast<Host*>(a->data);
    bool more = h.shard.drain();
    h.shard.flush(uv_now(&h.loop));
    if (more) uv_async_send(&h.wake);  // bounded batches per turn: come back for the rest
  });
  host.shard.set_waker([](void* a) { uv_async_send(static_cast<uv_async_t*>(a)); }, &host.wake);
  uv_timer_init(&host.loop, &host.deadline);
  uv_timer_start(&host.deadline, [](uv_timer_t* t) { uv_stop(t->loop); }, 10000, 0);

  // On the loop's thread (this one; the loop has not started): a stream and its subscription.
  host.stream = host.shard.open_stream(&host.sink, mcpfan::Framing::Line);
  mcpfan::ListenSpec spec;
  spec.resource_uris = {"file:///work/"};
  mcpfan::mcp::ListenPlan plan = mcpfan::mcp::plan_listen(spec, mcpfan::kDefaultTenant, R"("listen:0")");
  if (!host.shard.subscribe(host.stream, plan.filter, R"("listen:0")").valid()) return 1;

  std::vector<std::thread> publishers;
  for (int t = 0; t < kThreads; ++t) {
    publishers.emplace_back([&host, t] {
      for (int i = 0; i < kPerThread; ++i) {
        // Distinct URIs: nothing is coalesced, every publish is one delivery.
        (void)host.hub.publish(
            mcpfan::mcp::resource_updated("file:///work/t" + std::to_string(t) + "/" + std::to_string(i)));
      }
    });
  }
  uv_run(&host.loop, UV_RUN_DEFAULT);
  for (auto& th : publishers) th.join();

  // Shutdown order: the hub refuses publishes before the loop stops draining; then the
  // stream ends on its loop's thread, and the handles close.
  host.hub.close();
  host.shard.close_stream(host.stream);
  uv_close(reinterpret_cast<uv_handle_t*>(&host.wake), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&host.deadline), nullptr);
  uv_run(&host.loop, UV_RUN_DEFAULT);
  uv_loop_close(&host.loop);

  if (host.received != kThreads * kPerThread) {
    std::fprintf(stderr, "host_loop: %d of %d notifications arrived\n", host.received, kThreads * kPerThread);
    return 1;
  }
  std::printf("host_loop: ok (%d publishes from %d threads delivered by the host's own libuv loop)\n",
              host.received, kThreads);
  return 0;
}

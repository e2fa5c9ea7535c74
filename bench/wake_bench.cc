// What waking another worker loop costs on this machine: "the cost of uv_async_send and of
// the mutex in Worker::wake", measured, not assumed (docs/performance.md, "Targeted publishes").
//
//   BM_WakeMutex           the uncontended lock/unlock Worker::wake takes around uv_async_send
//   BM_AsyncSendPending    uv_async_send to a loop that has not run since the last one: libuv
//                          sees the wake-up pending and makes no system call
//   BM_CrossLoopPingPong   two libuv loops on two threads wake each other in turn (the
//                          benchmark thread runs one loop, a second thread the other). One
//                          iteration = two wake-ups of a sleeping loop; reported as the process's
//                          CPU (both threads, user + kernel) per wake-up: the eventfd write, the
//                          receiver's return from epoll_wait, its eventfd read, and both
//                          threads going back to sleep. This is what a targeted publish pays when
//                          it is parsed on one worker and its stream lives on another, idle one.
#include <uv.h>

#include <benchmark/benchmark.h>

#include <atomic>
#include <mutex>
#include <thread>

namespace {

void BM_WakeMutex(benchmark::State& state) {
  std::mutex mu;
  for (auto _ : state) {
    std::lock_guard lock(mu);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_WakeMutex);

void BM_AsyncSendPending(benchmark::State& state) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_async_t a;
  uv_async_init(&loop, &a, [](uv_async_t*) {});
  uv_async_send(&a);  // pending from now on: the loop never runs
  for (auto _ : state) uv_async_send(&a);
  uv_close(reinterpret_cast<uv_handle_t*>(&a), nullptr);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}
BENCHMARK(BM_AsyncSendPending);

struct PingPong {
  uv_loop_t loop_a{}, loop_b{};
  uv_async_t to_a{}, to_b{}, stop_b{};
  std::uint64_t answered = 0;  // loop A's, read on the benchmark thread only
};

void BM_CrossLoopPingPong(benchmark::State& state) {
  PingPong p;
  uv_loop_init(&p.loop_a);
  uv_loop_init(&p.loop_b);
  p.to_a.data = p.to_b.data = p.stop_b.data = &p;
  uv_async_init(&p.loop_a, &p.to_a, [](uv_async_t* h) { ++static_cast<PingPong*>(h->data)->answered; });
  uv_async_init(&p.loop_b, &p.to_b, [](uv_async_t* h) { uv_async_send(&static_cast<PingPong*>(h->data)->to_a); });
  uv_async_init(&p.loop_b, &p.stop_b, [](uv_async_t* h) {
    auto* pp = static_cast<PingPong*>(h->data);
    uv_close(reinterpret_cast<uv_handle_t*>(&pp->to_b), nullptr);
    uv_close(reinterpret_cast<uv_handle_t*>(&pp->stop_b), nullptr);
  });
  std::thread b([&] { uv_run(&p.loop_b, UV_RUN_DEFAULT); });
  for (auto _ : state) {
    std::uint64_t want = p.answered + 1;
    uv_async_send(&p.to_b);
    // Bounded: B always answers; a lost wake-up would show as a hang of this benchmark.
    while (p.answered < want) uv_run(&p.loop_a, UV_RUN_ONCE);
  }
  uv_async_send(&p.stop_b);
  b.join();
  uv_close(reinterpret_cast<uv_handle_t*>(&p.to_a), nullptr);
  uv_run(&p.loop_a, UV_RUN_DEFAULT);
  uv_loop_close(&p.loop_a);
  uv_loop_close(&p.loop_b);
  state.counters["cpu_per_wake"] = benchmark::Counter(static_cast<double>(state.iterations()) * 2,
                                                      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
// Process CPU (both threads): the rate counter divides by it, so it reads as CPU per wake-up.
BENCHMARK(BM_CrossLoopPingPong)->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();

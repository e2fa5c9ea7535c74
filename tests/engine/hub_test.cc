// Tests for engine/src/hub.cc: thread-safe publish into several shards, each drained by its
// own thread, as worker loops do.
#include "mcpfan/hub.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test_sink.h"

namespace mcpfan {
namespace {

using test::RecordingSink;

constexpr int kProducers = 4;
constexpr int kPerProducer = 1500;
constexpr std::size_t kShards = 2;

// Parses every message of a stream into (producer, seq) pairs, in arrival order.
std::vector<std::pair<std::int64_t, std::int64_t>> events_of(const RecordingSink& s, std::string_view want_id) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  simdjson::dom::parser parser;
  for (const std::string& json : test::split_messages(s.bytes, Framing::Sse)) {
    simdjson::dom::element doc;
    if (parser.parse(json).get(doc)) {
      ADD_FAILURE() << "not JSON: " << json;
      continue;
    }
    std::string_view sid;
    EXPECT_EQ(doc["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"].get_string().get(sid),
              simdjson::SUCCESS);
    EXPECT_EQ(sid, want_id);
    std::int64_t p = -1, seq = -1;
    EXPECT_EQ(doc["params"]["producer"].get_int64().get(p), simdjson::SUCCESS) << json;
    EXPECT_EQ(doc["params"]["seq"].get_int64().get(seq), simdjson::SUCCESS) << json;
    out.emplace_back(p, seq);
  }
  return out;
}

// Every producer's events exactly once each, in that producer's order.
void expect_all_in_order(const std::vector<std::pair<std::int64_t, std::int64_t>>& events,
                         const std::vector<int>& producers, const char* what) {
  std::map<std::int64_t, std::int64_t> next;
  for (auto [p, seq] : events) {
    ASSERT_EQ(seq, next[p]) << what << ": producer " << p << " out of order or duplicated";
    ++next[p];
  }
  for (int p : producers) EXPECT_EQ(next[p], kPerProducer) << what << ": producer " << p;
  EXPECT_EQ(events.size(), producers.size() * std::size_t{kPerProducer}) << what;
}

TEST(Hub, ConcurrentPublishersReachEveryMatchingStreamOnceInProducerOrder) {
  Hub hub(kShards);
  ASSERT_EQ(hub.shard_count(), kShards);
  auto acme_ref = hub.tenants().acquire("acme");
  ASSERT_TRUE(acme_ref);
  TenantId acme = *acme_ref;

  // Per shard: one stream for everything, one for producer 1 only, one in another tenant.
  struct Streams {
    std::unique_ptr<RecordingSink> all, one, other;
  };
  std::vector<Streams> streams(kShards);
  for (std::size_t i = 0; i < kShards; ++i) {
    Shard& shard = hub.shard(i);
    streams[i].all = std::make_unique<RecordingSink>(shard);
    streams[i].one = std::make_unique<RecordingSink>(shard);
    streams[i].other = std::make_unique<RecordingSink>(shard);
    streams[i].all->open(Framing::Sse);
    streams[i].one->open(Framing::Sse);
    streams[i].other->open(Framing::Sse);
    (void)shard.subscribe(streams[i].all->id, Filter{kDefaultTenant, 0, {"file:///p/"}}, R"("all")");
    (void)shard.subscribe(streams[i].one->id, Filter{kDefaultTenant, 0, {"file:///p/1/"}}, R"("one")");
    (void)shard.subscribe(streams[i].other->id, Filter{acme, 0, {"file:///p/"}}, R"("other")");
  }

  const std::uint64_t total = std::uint64_t{kProducers} * kPerProducer;
  std::atomic<bool> timed_out{false};
  std::vector<std::thread> loops;
  for (std::size_t i = 0; i < kShards; ++i) {
    loops.emplace_back([&, i] {
      Shard& shard = hub.shard(i);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (shard.stats().payloads.load() < total) {
        bool more = shard.drain();
        shard.flush();
        if (!more) std::this_thread::yield();
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          return;
        }
      }
      shard.flush();
    });
  }

  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&hub, p] {
      auto make = [p](int seq) {
        return test::make_update("file:///p/" + std::to_string(p) + "/" + std::to_string(seq), kDefaultTenant,
                                 {{"producer", std::to_string(p)}, {"seq", std::to_string(seq)}});
      };
      if (p == kProducers - 1) {  // one producer uses the bulk form
        for (int seq = 0; seq < kPerProducer; seq += 10) {
          std::vector<PayloadRef> batch;
          for (int k = seq; k < seq + 10 && k < kPerProducer; ++k) batch.push_back(make(k));
          ASSERT_TRUE(hub.publish(batch));
        }
      } else {
        for (int seq = 0; seq < kPerProducer; ++seq) ASSERT_TRUE(hub.publish(make(seq)));
      }
    });
  }
  for (auto& t : producers) t.join();
  for (auto& t : loops) t.join();
  ASSERT_FALSE(timed_out) << "shards did not receive every payload";

  EXPECT_EQ(hub.published(), total);
  std::vector<int> everyone;
  for (int p = 0; p < kProducers; ++p) everyone.push_back(p);
  for (std::size_t i = 0; i < kShards; ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    const ShardStats& st = hub.shard(i).stats();
    EXPECT_EQ(st.payloads.load(), total);
    EXPECT_EQ(st.deliveries.load(), total + kPerProducer);
    EXPECT_EQ(st.coalesced.load(), 0u);
    expect_all_in_order(events_of(*streams[i].all, R"(all)"), everyone, "all");
    expect_all_in_order(events_of(*streams[i].one, R"(one)"), {1}, "one");
    EXPECT_EQ(streams[i].other->bytes, "") << "another tenant's stream received events";
  }
}

// Shard order (shard.h): a publish that happened-before another is delivered first, even
// when the two come from different threads. Three producers take turns, each publishing
// only after the previous publish returned.
TEST(Hub, PublishesOrderedByHappensBeforeAcrossThreadsArriveInThatOrder) {
  constexpr int kTurns = 1200, kThreads = 3;
  Hub hub(kShards);
  std::vector<std::unique_ptr<RecordingSink>> sinks;
  for (std::size_t i = 0; i < kShards; ++i) {
    sinks.push_back(std::make_unique<RecordingSink>(hub.shard(i)));
    sinks.back()->open(Framing::Sse);
    (void)hub.shard(i).subscribe(sinks.back()->id, Filter{kDefaultTenant, 0, {"file:///t/"}}, R"("all")");
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> loops;
  for (std::size_t i = 0; i < kShards; ++i) {
    loops.emplace_back([&, i] {
      Shard& shard = hub.shard(i);
      while (!stop.load() || shard.drain()) {
        shard.drain();
        shard.flush();
        std::this_thread::yield();
      }
      shard.flush();
    });
  }
  std::atomic<int> turn{0};
  std::vector<std::thread> producers;
  for (int p = 0; p < kThreads; ++p) {
    producers.emplace_back([&, p] {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      for (int seq = p; seq < kTurns; seq += kThreads) {
        while (turn.load(std::memory_order_acquire) != seq) {
          if (std::chrono::steady_clock::now() > deadline) return;
          std::this_thread::yield();
        }
        (void)hub.publish(test::make_update("file:///t/" + std::to_string(seq), kDefaultTenant,
                                      {{"producer", "0"}, {"seq", std::to_string(seq)}}));
        turn.store(seq + 1, std::memory_order_release);
      }
    });
  }
  for (auto& t : producers) t.join();
  ASSERT_EQ(turn.load(), kTurns) << "producers timed out";
  stop = true;
  for (auto& t : loops) t.join();
  for (std::size_t i = 0; i < kShards; ++i) {
    SCOPED_TRACE("shard " + std::to_string(i));
    EXPECT_EQ(hub.shard(i).stats().payloads.load(), std::uint64_t{kTurns});
    auto events = events_of(*sinks[i], "all");
    ASSERT_EQ(events.size(), std::size_t{kTurns});
    for (int k = 0; k < kTurns; ++k) ASSERT_EQ(events[k].second, k) << "position " << k;
  }
}

TEST(Hub, EmptyBulkPublishIsANoOp) {
  Hub hub(3);
  int wakes = 0;
  for (std::size_t i = 0; i < hub.shard_count(); ++i)
    hub.shard(i).set_waker([](void* n) { ++*static_cast<int*>(n); }, &wakes);
  EXPECT_TRUE(hub.publish(std::vector<PayloadRef>{}));
  EXPECT_EQ(hub.published(), 0u);
  EXPECT_EQ(wakes, 0);
  EXPECT_TRUE(hub.publish(test::make_list_changed(Kind::ToolsListChanged)));
  EXPECT_EQ(hub.published(), 1u);
  EXPECT_EQ(wakes, 3);  // one wake-up per shard
  for (std::size_t i = 0; i < hub.shard_count(); ++i) {
    EXPECT_FALSE(hub.shard(i).drain());
    EXPECT_EQ(hub.shard(i).stats().payloads.load(), 1u);
  }
}

// Regression: the server stopped its workers while other threads could still publish
// (and reset the debouncer under a concurrent publish). close() is the hub's end of
// publishing: publishes in flight finish, later ones are refused and touch no shard.
TEST(Hub, CloseWaitsOutPublishesInFlightAndRefusesLaterOnes) {
  Hub hub(2);
  std::atomic<int> wakes{0};
  for (std::size_t i = 0; i < hub.shard_count(); ++i) {
    hub.shard(i).set_waker([](void* n) { static_cast<std::atomic<int>*>(n)->fetch_add(1); }, &wakes);
  }
  std::atomic<bool> go{true};
  // `late`: publishes accepted although the publisher had already seen closed() — the
  // only way to tell "after close() returned" from the publisher's side (a publish may
  // return true and be counted just after close() returned; that one was in flight).
  std::atomic<std::uint64_t> accepted{0}, refused{0}, late{0};
  std::vector<std::thread> publishers;
  for (int t = 0; t < 4; ++t) {
    publishers.emplace_back([&] {
      PayloadRef p = test::make_list_changed(Kind::ToolsListChanged);
      for (int i = 0; i < 200000 && go.load(); ++i) {
        bool closed_before = hub.closed();
        if (hub.publish(p)) {
          accepted.fetch_add(1);
          if (closed_before) late.fetch_add(1);
        } else {
          refused.fetch_add(1);
        }
      }
    });
  }
  while (accepted.load() < 1000) std::this_thread::yield();
  hub.close();
  EXPECT_TRUE(hub.closed());
  // Wakes happen inside publish(), which close() waits out: none may follow it.
  int wakes_at_close = wakes.load();
  for (auto& t : publishers) t.join();
  EXPECT_EQ(late.load(), 0u) << "a publish was accepted after close() returned";
  EXPECT_EQ(wakes.load(), wakes_at_close) << "a shard was woken after close() returned";
  EXPECT_FALSE(hub.publish(test::make_list_changed(Kind::ToolsListChanged)));
  // The inboxes hold exactly what was accepted: nothing lost, nothing extra.
  for (std::size_t i = 0; i < hub.shard_count(); ++i) {
    while (hub.shard(i).drain()) {
    }
    EXPECT_EQ(hub.shard(i).stats().payloads.load(), accepted.load());
  }
  go = false;
}

TEST(Hub, APublishOfTasksKeepsTheirStatesAndARefusedOneKeepsNone) {
  Hub hub(1);
  auto state = [](std::string_view id) {
    TaskState t;
    t.tenant = "default";
    t.payload = test::make_task(id, "working");
    return t;
  };
  auto notes = [](const std::vector<TaskState>& tasks) {
    std::vector<Notification> n;
    for (const TaskState& t : tasks) n.emplace_back().local = t.payload;
    return n;
  };
  std::vector<TaskState> first = {state("t1")};
  ASSERT_TRUE(hub.publish(notes(first), first));
  EXPECT_EQ(hub.task_states().find("default", "t1").get(), first[0].payload.get());
  // Refused (the hub closed): the state it would have replaced stays, its own is not kept.
  hub.close();
  std::vector<TaskState> refused = {state("t2")};
  EXPECT_FALSE(hub.publish(notes(refused), refused));
  EXPECT_FALSE(hub.task_states().find("default", "t2"));
  EXPECT_EQ(hub.task_states().stats().tasks, 1u);
}

TEST(Hub, CloseFansOutWhatTheDebouncerHolds) {
  Hub hub(1);
  hub.set_debounce(std::chrono::hours(1));
  PayloadRef first = test::make_update("file:///hot"), held = test::make_update("file:///hot");
  ASSERT_TRUE(hub.publish(first));
  ASSERT_TRUE(hub.publish(held));  // within the interval: held
  Shard& shard = hub.shard(0);
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.stats().payloads.load(), 1u);
  hub.close();  // does not wait an hour: the held update goes out now
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.stats().payloads.load(), 2u);
  EXPECT_FALSE(hub.publish(first));
}

// With a backplane the hub debounces whole notifications where they are accepted: the
// forwarder hears only what went out here (a suppressed update never leaves the node, a
// notification for a tenant with no local payload is debounced by name), after its local
// fan-out; what arrives from other nodes is fanned out and never held again.
TEST(Hub, DebouncesAtIngressAndForwardsWhatWentOut) {
  Hub hub(1);
  hub.set_debounce(std::chrono::hours(1));
  std::vector<std::string> forwarded;
  Shard& shard = hub.shard(0);
  hub.set_forwarder([&](std::vector<Notification>& ns) {
    for (auto& n : ns) forwarded.push_back(n.message);
  });
  auto note = [](PayloadRef local, std::string tenant, std::string message) {
    std::vector<Notification> one;  // move-only (it carries its outage reservation): no initializer list
    one.push_back(Notification{
        std::move(local), Kind::ResourceUpdated, std::move(tenant), "file:///hot", std::move(message), {}});
    return one;
  };
  ASSERT_TRUE(hub.publish(note(test::make_update("file:///hot"), "default", "m1")));
  ASSERT_TRUE(hub.publish(note(test::make_update("file:///hot"), "default", "m2")));  // held
  ASSERT_TRUE(hub.publish(note(test::make_update("file:///hot"), "default", "m3")));  // replaces m2
  ASSERT_TRUE(hub.publish(note({}, "elsewhere", "r1")));  // no local payload: keyed by name
  ASSERT_TRUE(hub.publish(note({}, "elsewhere", "r2")));  // held
  EXPECT_EQ(forwarded, (std::vector<std::string>{"m1", "r1"}));
  ASSERT_NE(hub.debouncer(), nullptr);
  EXPECT_EQ(hub.debouncer()->suppressed(), 1u);
  // From another node: out at once, although the same key is held here.
  ASSERT_EQ(hub.deliver_forwarded(test::make_update("file:///hot")), Hub::Delivery::Posted);
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.stats().payloads.load(), 2u) << "m1's payload and the forwarded one";
  hub.close();  // the held ones go out now (two keys: in no particular order)
  ASSERT_EQ(forwarded.size(), 4u);
  std::sort(forwarded.begin() + 2, forwarded.end());
  EXPECT_EQ(forwarded, (std::vector<std::string>{"m1", "r1", "m3", "r2"}));
  while (shard.drain()) {
  }
  EXPECT_EQ(shard.stats().payloads.load(), 3u) << "m3's payload at close";
}

}  // namespace
}  // namespace mcpfan

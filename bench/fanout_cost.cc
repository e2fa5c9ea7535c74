// A deterministic cost figure for the in-process fan-out: one event to 10,000 in-memory
// streams, repeated, counted in instructions by callgrind (bench/callgrind.sh). Only the
// function measured_fanout() is collected (--toggle-collect), so set-up is excluded, and
// instruction counts are stable from run to run where times are not.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "mcpfan/hub.h"

namespace {

using namespace mcpfan;

/** Accepts every batch at once, as a socket with room would. */
class CountingSink final : public StreamSink {
 public:
  Shard* shard = nullptr;
  StreamId id{};
  std::size_t bytes = 0;
  void write_batch(OutBatch&& batch) override {
    bytes += batch.bytes;
    OutBatch done(std::move(batch));  // destroyed here: references released, vectors recycled
    shard->write_done(id);
  }
  void close_requested(CloseReason) override {}
};

PayloadRef make_event(const std::string& uri_json, std::string_view uri) {
  NotificationParts parts;
  parts.kind = Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params.emplace_back("uri", uri_json);
  parts.meta.emplace_back("origin/rev", "42");
  return encode_notification(parts);
}

// noinline: the name callgrind collects.
[[gnu::noinline]] void measured_fanout(Hub& hub, const PayloadRef& event, int rounds) {
  Shard& shard = hub.shard(0);
  for (int i = 0; i < rounds; ++i) {
    (void)hub.publish(event);
    (void)shard.drain();
    shard.flush();
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int streams = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  Hub hub(1);
  Shard& shard = hub.shard(0);
  std::vector<CountingSink> sinks(static_cast<std::size_t>(streams));
  const std::string uri = "file:///project/config.json";
  const std::string uri_json = "\"" + uri + "\"";
  Filter filter;
  filter.uris.push_back(uri);
  for (int i = 0; i < streams; ++i) {
    CountingSink& s = sinks[static_cast<std::size_t>(i)];
    s.shard = &shard;
    s.id = shard.open_stream(&s, Framing::Sse);
    (void)shard.subscribe(s.id, filter, "\"listen:" + std::to_string(i) + "\"");
  }
  PayloadRef event = make_event(uri_json, uri);
  measured_fanout(hub, event, 2);  // warm-up: vectors grown and recycled once (also collected; see callgrind.sh)
  measured_fanout(hub, event, rounds);
  std::size_t bytes = 0;
  for (auto& s : sinks) bytes += s.bytes;
  std::printf("streams=%d rounds=%d deliveries=%lld bytes=%zu\n", streams, rounds,
              static_cast<long long>(streams) * (rounds + 2), bytes);
  return bytes == 0;
}

// An engine-only host (no mcpfan transports): it decodes a client's listen with RpcDecoder,
// answers with mcpfan/mcp.h's messages, subscribes a stream of its own on a Shard it drives
// itself, publishes through the Hub and checks the bytes its sink is given.
#include <cstdio>
#include <string>

#include "mcpfan/hub.h"
#include "mcpfan/mcp.h"
#include "mcpfan/payload.h"
#include "mcpfan/rpc_decoder.h"

namespace {
struct Sink final : mcpfan::StreamSink {
  mcpfan::Shard* shard = nullptr;
  mcpfan::StreamId id;
  std::string out;
  void write_batch(mcpfan::OutBatch&& batch) override {
    for (const iovec& v : batch.bufs) out.append(static_cast<const char*>(v.iov_base), v.iov_len);
    shard->write_done(id);
  }
  void close_requested(mcpfan::CloseReason) override {}
};
int fail(const char* what) {
  std::fprintf(stderr, "engine_only: %s\n", what);
  return 1;
}
}  // namespace

int main() {
  mcpfan::RpcDecoder decoder;
  mcpfan::RpcRequest req = decoder.decode(
      R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{)"
      R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
      R"("io.modelcontextprotocol/clientCapabilities":{}},)"
      R"("notifications":{"toolsListChanged":true}}})");
  if (!mcpfan::mcp::is_2026_version(req.meta_version)) return fail("version");
  if (req.error || req.method != "subscriptions/listen") return fail("decode");
  mcpfan::mcp::ListenPlan plan = mcpfan::mcp::plan_listen(std::move(req.listen), mcpfan::kDefaultTenant, req.id);

  mcpfan::Hub hub(1);
  mcpfan::Shard& shard = hub.shard(0);  // this thread is its loop
  Sink sink;
  sink.shard = &shard;
  sink.id = shard.open_stream(&sink, mcpfan::Framing::Line);
  if (shard.send(sink.id, plan.ack + "\n") != mcpfan::SendStatus::Ok) return fail("send ack");
  if (!shard.subscribe(sink.id, plan.filter, req.id).valid()) return fail("subscribe");
  mcpfan::NotificationParts parts;
  parts.kind = mcpfan::Kind::ToolsListChanged;
  if (!hub.publish(mcpfan::encode_notification(parts))) return fail("publish");
  shard.drain();
  shard.flush();
  if (sink.out.find("notifications/subscriptions/acknowledged") == std::string::npos ||
      sink.out.find(R"("method":"notifications/tools/list_changed")") == std::string::npos ||
      sink.out.find(R"("io.modelcontextprotocol/subscriptionId":"listen:0")") == std::string::npos) {
    std::fprintf(stderr, "%s\n", sink.out.c_str());
    return fail("unexpected output");
  }
  shard.close_stream(sink.id);
  hub.close();
  std::puts("engine_only: ok (decoded listen, mcp.h ack, published, delivered on the host's shard)");
  return 0;
}

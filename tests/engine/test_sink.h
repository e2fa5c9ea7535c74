#pragma once
/**
 * Shared helpers for the engine unit tests:
 *  - RecordingSink: a StreamSink that records the exact bytes a Shard writes to one stream,
 *    completing each batch at once (Immediate) or when the test says so (Manual);
 *  - payload builders (encode_notification with the params a publisher would send);
 *  - expected wire frames, spelled out from the documented layout (design §2.1, payload.h)
 *    rather than derived from the engine's own constants.
 *
 * Loop-affine like the shard it records: use a sink only from the thread that drives it.
 */
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mcpfan/json_text.h"
#include "mcpfan/kind.h"
#include "mcpfan/payload.h"
#include "mcpfan/shard.h"

namespace mcpfan::test {

class RecordingSink final : public StreamSink {
 public:
  enum class Mode { Immediate, Manual };

  explicit RecordingSink(Shard& shard, Mode mode = Mode::Immediate) : shard_(shard), mode_(mode) {}
  RecordingSink(const RecordingSink&) = delete;
  RecordingSink& operator=(const RecordingSink&) = delete;

  StreamId open(Framing framing = Framing::Sse, StreamJournal* journal = nullptr) {
    id = shard_.open_stream(this, framing, journal);
    open_ = true;
    return id;
  }
  /** What a transport does when its connection ends. */
  void close() {
    open_ = false;
    shard_.close_stream(id);
  }

  void write_batch(OutBatch&& batch) override {
    ++write_calls;
    if (!open_) ++calls_after_close;
    if (!inflight_.empty()) ++overlapping_writes;
    if (batch.bufs.empty() || batch.bufs[0].iov_len != 0) ++bad_framing_slot;
    std::size_t sum = 0;
    for (std::size_t i = 1; i < batch.bufs.size(); ++i) sum += batch.bufs[i].iov_len;
    if (sum != batch.bytes) ++bad_byte_counts;
    buf_counts.push_back(batch.bufs.size());
    inflight_.emplace_back(std::move(batch));
    if (mode_ == Mode::Immediate) complete();
  }

  void close_requested(CloseReason) override {
    ++close_requests;
    if (!open_) ++calls_after_close;
    close();  // the contract: the transport closes the stream (a no-op by now)
  }

  /**
   * Completes the oldest outstanding batch: its bytes are read only now, so every buffer
   * must still be alive (ASan reports it otherwise). Then write_done(), as a transport
   * does — unless the stream was closed, when a transport no longer reports on it.
   */
  void complete() {
    OutBatch& b = inflight_.front();
    std::string text;
    for (std::size_t i = 1; i < b.bufs.size(); ++i)
      text.append(static_cast<const char*>(b.bufs[i].iov_base), b.bufs[i].iov_len);
    inflight_.pop_front();
    bytes += text;
    writes.push_back(std::move(text));
    if (open_) shard_.write_done(id);
  }
  [[nodiscard]] std::size_t inflight() const noexcept { return inflight_.size(); }
  [[nodiscard]] bool is_open() const noexcept { return open_; }

  StreamId id{};
  std::string bytes;                    // everything completed, in write order
  std::vector<std::string> writes;      // one entry per completed batch
  std::vector<std::size_t> buf_counts;  // bufs.size() of each batch, framing slot included
  int write_calls = 0;
  int close_requests = 0;
  int overlapping_writes = 0;  // write_batch while a batch was still outstanding
  int bad_framing_slot = 0;    // bufs[0] missing or not empty
  int bad_byte_counts = 0;     // OutBatch::bytes != sum of bufs[1..]
  int calls_after_close = 0;

 private:
  Shard& shard_;
  Mode mode_;
  bool open_ = false;
  std::deque<OutBatch> inflight_;
};

/** JSON string literal for `s` (json_text has its own tests). */
inline std::string quoted(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

/** A resources/updated payload as a publisher sends it: params.uri plus `extra` members. */
inline PayloadRef make_update(std::string_view uri, TenantId tenant = kDefaultTenant,
                              std::vector<std::pair<std::string, std::string>> extra = {}) {
  std::string raw_uri = quoted(uri);
  NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = Kind::ResourceUpdated;
  parts.uri = uri;
  parts.params.emplace_back("uri", raw_uri);
  for (auto& [k, v] : extra) parts.params.emplace_back(k, v);
  return encode_notification(parts);
}

/** A notifications/tasks for `task_id` with `status` (what a publisher sends, shortened to the key and status). */
inline PayloadRef make_task(std::string_view task_id, std::string_view status, TenantId tenant = kDefaultTenant) {
  std::string raw_id = quoted(task_id), raw_status = quoted(status);
  NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = Kind::TaskStatus;
  parts.uri = task_id;
  parts.params.emplace_back("taskId", raw_id);
  parts.params.emplace_back("status", raw_status);
  return encode_notification(parts);
}

/** Its SSE or line frame as subscription `id_token` gets it. */
inline std::string task_frame(Framing f, std::string_view id_token, std::string_view task_id, std::string_view status) {
  std::string json = R"({"jsonrpc":"2.0","method":"notifications/tasks","params":{"_meta":{)"
                     R"("io.modelcontextprotocol/subscriptionId":)";
  json += id_token;
  json += R"(},"taskId":")";
  json += task_id;
  json += R"(","status":")";
  json += status;
  json += R"("}})";
  return f == Framing::Sse ? "event: message\ndata: " + json + "\n\n" : json + "\n";
}

inline PayloadRef make_list_changed(Kind kind, TenantId tenant = kDefaultTenant) {
  NotificationParts parts;
  parts.tenant = tenant;
  parts.kind = kind;
  return encode_notification(parts);
}

/**
 * One notification on the wire. `params_tail` is what follows `_meta` inside params
 * (e.g. `,"uri":"file:///a"`), `meta_tail` what follows the subscriptionId inside _meta.
 */
inline std::string frame(Framing f, std::string_view method, std::string_view id_token,
                         std::string_view params_tail = {}, std::string_view meta_tail = {}) {
  std::string json = R"({"jsonrpc":"2.0","method":")";
  json += method;
  json += R"(","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":)";
  json += id_token;
  json += meta_tail;
  json += "}";
  json += params_tail;
  json += "}}";
  return f == Framing::Sse ? "event: message\ndata: " + json + "\n\n" : json + "\n";
}

inline std::string update_frame(Framing f, std::string_view id_token, std::string_view uri,
                                std::string_view more_params = {}) {
  std::string tail = ",\"uri\":\"";
  tail += uri;
  tail += "\"";
  tail += more_params;
  return frame(f, "notifications/resources/updated", id_token, tail);
}

inline std::string list_changed_frame(Framing f, std::string_view what, std::string_view id_token) {
  return frame(f, "notifications/" + std::string(what) + "/list_changed", id_token);
}

/** Splits SSE text into the JSON of its `data:` lines, or stdio text into its lines. */
inline std::vector<std::string> split_messages(std::string_view text, Framing f) {
  std::vector<std::string> out;
  if (f == Framing::Line) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      if (nl == std::string_view::npos) nl = text.size();
      out.emplace_back(text.substr(start, nl - start));
      start = nl + 1;
    }
    return out;
  }
  constexpr std::string_view kData = "data: ";
  std::size_t pos = 0;
  while ((pos = text.find(kData, pos)) != std::string_view::npos) {
    if (pos != 0 && text[pos - 1] != '\n') { pos += kData.size(); continue; }
    std::size_t start = pos + kData.size();
    std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    out.emplace_back(text.substr(start, nl - start));
    pos = nl;
  }
  return out;
}

}  // namespace mcpfan::test

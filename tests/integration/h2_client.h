// An HTTP/2 client for the integration tests: nghttp2's client session over one loopback
// TCP connection (itest::Conn), cleartext with prior knowledge. Every wait is bounded by a
// deadline. Besides well-formed requests it can hold a stream's window shut (flow control
// by hand), reset streams, and write raw frames, for the hostile-peer tests.
#pragma once

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness.h"

namespace itest {

class H2Client {
 public:
  struct Stream {
    int status = 0;
    std::vector<Header> headers;
    std::string data;
    bool closed = false;
    std::uint32_t rst_code = 0;  // the code it closed with (0: NO_ERROR, the normal end)
    SseParser sse;               // `data` as SSE events, parsed as it arrives
    std::deque<SseEvent> events;
  };

  struct Options {
    // Opens no stream window by itself: only what Consume() gives back (a reader that stops).
    bool manual_window = false;
    std::uint32_t initial_window = 1u << 20;
  };

  H2Client();
  explicit H2Client(Options o);
  ~H2Client();
  H2Client(const H2Client&) = delete;
  H2Client& operator=(const H2Client&) = delete;

  /** Connects, sends the preface and SETTINGS, and waits for the server's SETTINGS. */
  ::testing::AssertionResult Connect(int port, Ms timeout = kIo);
  /** Submits a request; returns its stream id (<0: nghttp2's error). */
  std::int32_t Request(std::string_view method, std::string_view path, const std::vector<Header>& headers,
                       std::string_view body = {});
  /** A 2026-07-28 subscriptions/listen on a new stream. */
  std::int32_t Listen(std::string_view id_json, std::string_view notifications_json);
  /** Sends what is pending and reads until `done()` holds, the peer closes, or the deadline. */
  bool RunUntil(const std::function<bool()>& done, Ms timeout = kIo);
  /** RST_STREAM(CANCEL) on `id`. */
  void Reset(std::int32_t id);
  /** Gives `bytes` of window back to stream `id` and the connection (manual_window). */
  void Consume(std::int32_t id, std::size_t bytes);
  /** One raw frame: the 9-byte header and `payload`. */
  static std::string Frame(std::uint8_t type, std::uint8_t flags, std::int32_t stream, std::string_view payload);
  /** A request head block (HPACK, nothing indexed into the dynamic table): GET `path` over http. */
  static std::string GetBlock(std::string_view path);
  /** Sends what is queued, then the FIN: the client writes nothing more and goes on reading. */
  bool ShutdownWrite();
  /** Writes bytes as they are, behind what nghttp2 has queued. */
  bool SendRaw(std::string_view bytes);

  Stream& stream(std::int32_t id) { return streams_[id]; }
  [[nodiscard]] bool goaway() const { return goaway_; }
  [[nodiscard]] std::uint32_t goaway_code() const { return goaway_code_; }
  [[nodiscard]] const std::string& goaway_reason() const { return goaway_reason_; }
  [[nodiscard]] bool peer_closed() const { return conn_.eof(); }
  /** RST_STREAM seen by the frame scan (also for streams opened with raw frames): its code, or nullopt. */
  [[nodiscard]] std::optional<std::uint32_t> raw_reset(std::int32_t id) const {
    auto it = raw_resets_.find(id);
    return it == raw_resets_.end() ? std::nullopt : std::optional<std::uint32_t>(it->second);
  }
  [[nodiscard]] std::uint32_t max_concurrent_streams() const;
  nghttp2_session* session() { return session_; }

 private:
  static int on_header(nghttp2_session*, const nghttp2_frame*, const std::uint8_t*, std::size_t, const std::uint8_t*,
                       std::size_t, std::uint8_t, void*);
  static int on_data(nghttp2_session*, std::uint8_t, std::int32_t, const std::uint8_t*, std::size_t, void*);
  static int on_close(nghttp2_session*, std::int32_t, std::uint32_t, void*);
  static int on_frame(nghttp2_session*, const nghttp2_frame*, void*);
  bool Flush();
  /** Reads the frames' headers itself: a GOAWAY is seen even where nghttp2 gave up on the session. */
  void ScanFrames(std::string_view bytes);

  Options opt_;
  Conn conn_;
  nghttp2_session* session_ = nullptr;
  std::map<std::int32_t, Stream> streams_;
  std::list<std::string> bodies_;  // request bodies being sent (kept until the client goes)
  std::string out_;                // what nghttp2 serialized, written by Flush()
  bool settings_seen_ = false;
  bool goaway_ = false;
  std::uint32_t goaway_code_ = 0;
  std::string goaway_reason_;
  std::string raw_;  // received bytes not yet scanned (a frame cut by a read)
  std::map<std::int32_t, std::uint32_t> raw_resets_;
  bool session_failed_ = false;
  bool write_shut_ = false;
};

}  // namespace itest

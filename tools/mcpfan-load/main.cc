// mcpfan-load: the subscriber-side load generator for mcpfan and its peers (nginx+nchan,
// the TypeScript SDK v2 listen hub). Command line: bench/compare/LOADGEN_CLI.md.
//
// One thread, one libuv loop, N non-blocking subscriber streams. Streams are spread over
// loopback source addresses 127.0.0.2.. (bound with IP_BIND_ADDRESS_NO_PORT, so the port
// is picked per 4-tuple at connect time) and opened through a bounded window of in-flight
// handshakes, so neither ephemeral ports nor the server's accept backlog run out. The fd
// limit is raised to the hard limit.
//
// Hot path per delivery: one read() of the stream, chunk framing checked, the SSE event
// (or stdio line) split with memchr, the publisher's `"bench/seq":` marker found with
// memmem (no JSON parsing), one clock read per read() call. Sequence numbers are unique
// per run (wall-clock based), so replayed messages from earlier runs (nchan's message
// buffer) are recognised as stale.
//
// Slow readers (--slow-readers F, sustained only): a fraction F of the streams, spread evenly
// over the stream indices, get a small SO_RCVBUF and read at most --slow-read-bytes-per-s
// (token bucket, refilled every 20 ms; reading pauses with uv_read_stop while the bucket is
// empty). The server's socket buffers towards them fill up, so it has to hold, coalesce or
// drop their updates; the report keeps the fast streams' latency apart from the slow ones'.
// For mcpfan (kinds listen/session/stdio) /metrics is read before and after the measured
// phase, for the server's own coalesced and closed-for-backpressure counts.
//
// Several processes, one measurement (bench/cluster): --scenario receive opens the streams
// and then only counts what arrives (DeliveryTally: latency from the publish's own
// "bench/ts_ns", duplicates, misdeliveries by URI), --scenario publish opens no stream and
// publishes over several --publish-url's; both are driven over stdin/stdout (control.h).
// --stream-uris own|both gives stream i its own URI <--own-uri-base><--index-base + i>, and
// --scenario targeted addresses each publish to one random stream's URI in one process
// (docs/performance.md "Targeted publishes"), against mcpfan, nchan (one channel per stream, subscribed through a
// multiplexed location together with --extra-uris K never-published channels) and the SDK hub, at a fixed
// --rate or at --rate max over P publisher connections with a --window each.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/un.h>
#include <uv.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "control.h"
#include "histogram.h"
#include "http_pool.h"
#include "proc_stats.h"
#include "publisher.h"
#include "tally.h"
#include "tls_pipe.h"
#include "wire.h"

namespace mcpload {
namespace {

enum class Kind : uint8_t { Listen, Session, Stdio, Nchan, SdkHub };
enum class Scenario : uint8_t { Burst, Sustained, Storm, Receive, Publish, Targeted };
enum class StreamUris : uint8_t { Shared, Own, Both };  // --stream-uris

constexpr std::string_view kEnvelope2026 =
    R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientInfo":{"name":"mcpfan-load","version":"0.1.0"},)"
    R"("io.modelcontextprotocol/clientCapabilities":{}})";
// --task-listens: the same envelope, declaring the Tasks extension (a listen with taskIds needs it).
constexpr std::string_view kEnvelope2026Tasks =
    R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientInfo":{"name":"mcpfan-load","version":"0.1.0"},)"
    R"("io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}})";
constexpr std::string_view kOwnTaskBase = "task-";  // --task-listens: stream i watches task-<index base + i>
constexpr int kMaxAttempts = 5;          // per stream handshake
constexpr int kControlConnections = 16;  // session kind: POSTs, one in flight each
// Publishes are written when due, never held back waiting for answers: a server that takes
// publishes in slowly shows it as latency (send time = when the publish was due and written).
constexpr int kPublishDepth = 1 << 20;
constexpr uint64_t kMs = 1000000;
constexpr uint64_t kSec = 1000000000;

struct Options {
  std::string kind_s, scenario_s;
  Kind kind = Kind::Listen;
  Scenario scenario = Scenario::Burst;
  std::string target, unix_path, sub_path = "/sub/bench", publish_url, uri = "file:///bench/a", json_file;
  int streams = 0;
  int rounds = 10;
  double rate = 100;
  std::string rate_s;             // --rate as given: a number, or "max" (targeted)
  bool rate_max = false;          // --rate max: as fast as the server answers, --window per connection
  int pub_window = 16;            // --window: targeted publishes in flight per publisher connection
  int batch = 1;                  // --batch: targeted at --rate max, notifications per POST (a JSON array)
  int extra_uris = 0;             // --extra-uris K: never-published URIs per stream (subscriptions cost)
  bool sub_path_set = false;      // --sub-path given (else nchan's own-URI streams use /sub/multi/)
  double duration = 5;
  int sources = 0;
  int server_pid = 0;
  double timeout_s = 120;
  int window = 1024;
  double slow_fraction = 0;       // --slow-readers
  double slow_bps = 2048;         // --slow-read-bytes-per-s
  int slow_rcvbuf = 4096;         // --slow-rcvbuf (SO_RCVBUF of a slow stream's socket)
  int pad_bytes = 0;              // --pad-bytes: "bench/pad" string of this length in each publish
  int params_bytes = 0;           // --params-bytes: targeted publishes' params padded to this size
  bool task_listens = false;      // --task-listens: each listen watches task-<i>; publishes notifications/tasks
  std::string metrics_url;        // --metrics-url; default <target>/metrics for mcpfan kinds
  bool no_metrics = false;        // --no-metrics
  std::string stream_uris_s = "shared";
  StreamUris stream_uris = StreamUris::Shared;  // --stream-uris: what each stream subscribes to
  std::string own_uri_base = "file:///bench/s/";  // --own-uri-base: stream i's own URI is this + (index base + i)
  uint64_t index_base = 0;        // --index-base: global index of this process's first stream
  bool tls = false;               // --tls (or an https:// --target): TLS on the subscriber connections
  std::string ca_file;            // --ca-file: the CA that signed the server's certificate
  std::string bearer;             // --bearer: every listen carries "Authorization: Bearer <it>" (OAuth, JWT)
  bool insecure_tls = false;      // --insecure-tls: no verification
  bool h2 = false;                // --h2: streams as HTTP/2 streams (ALPN h2 with --tls, else h2c)
  int streams_per_conn = 1000;    // --streams-per-conn K: h2 streams per connection
};

constexpr uint64_t kSlowTickMs = 20;

struct Url {
  sockaddr_in addr{};
  std::string hostport;  // Host header
  std::string path;
};

bool ParseUrl(std::string_view s, Url* u, std::string* err, bool* https = nullptr) {
  if (https && s.starts_with("https://")) {
    *https = true;
    s.remove_prefix(8);
  } else if (s.starts_with("http://")) {
    s.remove_prefix(7);
  } else {
    *err = "only http:// URLs are supported" + std::string(https ? " (and https:// for --target)" : "") + ": " +
           std::string(s);
    return false;
  }
  size_t slash = s.find('/');
  std::string_view hp = s.substr(0, slash);
  u->path = slash == std::string_view::npos ? "" : std::string(s.substr(slash));
  size_t colon = hp.rfind(':');
  std::string host(hp.substr(0, colon));
  int port = 80;
  if (colon != std::string_view::npos) {
    port = std::atoi(std::string(hp.substr(colon + 1)).c_str());
    if (port <= 0 || port > 65535) {
      *err = "bad port in URL: " + std::string(hp);
      return false;
    }
  }
  if (host == "localhost") host = "127.0.0.1";
  u->addr.sin_family = AF_INET;
  u->addr.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host.c_str(), &u->addr.sin_addr) != 1) {
    *err = "the host must be an IPv4 literal (loopback): " + host;
    return false;
  }
  if ((ntohl(u->addr.sin_addr.s_addr) >> 24) != 127) {
    *err = "loopback targets only (127.0.0.0/8): " + host;
    return false;
  }
  u->hostport = host + ":" + std::to_string(port);
  return true;
}

std::string JsonEscape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", unsigned(c));
      o += b;
    } else {
      o += c;
    }
  }
  return o;
}

std::string Num(double v, int prec = 3) {
  if (!std::isfinite(v)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", prec, v);
  return b;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint64_t SelfCpuUs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return uint64_t(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000u +
         uint64_t(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

class Loadgen;

enum class SState : uint8_t {
  Idle,
  Queued,
  SessionSetup,
  Connecting,
  AwaitHead,
  AwaitAck,
  AwaitSubscribe,
  Open,
  Closing
};
enum class AfterClose : uint8_t { Nothing, Retry, Reconnect };

struct Stream {
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  uv_connect_t creq;
  Loadgen* lg = nullptr;
  uint32_t idx = 0;
  uint32_t gen = 0;
  SState state = SState::Idle;
  AfterClose after_close = AfterClose::Nothing;
  uint8_t attempts = 0;
  bool handle_open = false;
  bool slow = false;      // a slow reader (--slow-readers)
  bool paused = false;    // slow reader: reading stopped until its bucket refills
  uint64_t retry_at = 0;
  uint64_t open_ns = 0;   // when its connect left the queue (retries included in its confirm time)
  double tokens = 0;      // slow reader: bytes it may read now
  uint64_t last_seq = 0;  // local sequence index of the newest delivery
  uint64_t own_hash = 0;  // UriHash of this stream's own URI (--stream-uris own|both)
  std::string carry;      // response head being assembled
  BodyDecoder body;
  LineFramer lines;
  std::string sid;        // session kind: Mcp-Session-Id
  std::unique_ptr<TlsPipe> tls;  // --tls, HTTP/1.1: this stream's own TLS connection
  // --h2: this stream is HTTP/2 stream h2_sid (0: none open) on connection idx / K
  int32_t h2_sid = 0;
  uint16_t h2_status = 0;
  bool h2_sse = false;  // content-type text/event-stream
  std::string h2body;   // the request body nghttp2 still has to send
  std::string h2auth;   // --bearer: its authorization field value (nghttp2 reads it when the request is submitted)
  size_t h2off = 0;

  uv_handle_t* handle() { return reinterpret_cast<uv_handle_t*>(&h); }
  uv_stream_t* stream() { return reinterpret_cast<uv_stream_t*>(&h); }
};

// --h2: one connection carrying up to --streams-per-conn streams (streams idx*K .. idx*K+K-1).
struct H2Conn {
  enum class St : uint8_t { Idle, Connecting, Handshaking, Ready, Closing };
  uv_tcp_t tcp;
  uv_connect_t creq;
  Loadgen* lg = nullptr;
  uint32_t idx = 0;
  St state = St::Idle;
  bool dirty = false;  // frames to send: written before the loop next blocks (uv_prepare)
  std::unique_ptr<TlsPipe> tls;
  nghttp2_session* sess = nullptr;
  std::vector<uint32_t> waiting;  // streams to open once the connection is ready
};

struct StreamSink {
  Loadgen* lg;
  Stream* st;
  uint64_t now;
  bool closed = false;
  bool OnMessage(const Msg& m);
  bool OnFramingError(const char* what);
  void OnIdLine();
  void OnEventType(std::string_view t);
};

class Loadgen {
 public:
  explicit Loadgen(Options o) : o_(std::move(o)) {}
  int Run();

  // StreamSink callbacks
  bool OnMessage(Stream* st, const Msg& m, uint64_t now);
  bool OnFramingError(Stream* st, const char* what);
  void OnIdLine(Stream*) { ++id_lines_; }
  void OnEventType(Stream*, std::string_view) { ++other_events_; }

 private:
  bool Setup(std::string* err);
  void Teardown();

  // streams
  void Enqueue(Stream* st);
  void PumpConnects();
  void StartAttempt(Stream* st);
  void ConnectTcp(Stream* st);
  void ConnectPipe(Stream* st);
  void SessionStep(Stream* st, int step);
  void Confirm(Stream* st);
  void FailAttempt(Stream* st, const std::string& why);
  void CloseStream(Stream* st, AfterClose then);
  void OnEnd(Stream* st, const std::string& why);
  void Feed(Stream* st, const char* p, size_t n, uint64_t now);
  void FeedBody(Stream* st, const char* p, size_t n, uint64_t now);
  void Deliver(Stream* st, uint64_t seq, uint64_t now);
  std::string ListenBody(uint32_t idx) const;
  std::string ListenRequest(uint32_t idx) const;

  // --h2 (nghttp2 client sessions; frames written once per loop turn per connection)
  H2Conn* ConnOf(const Stream* st) { return &conns_[st->idx / uint32_t(o_.streams_per_conn)]; }
  void H2Open(Stream* st);
  void H2Connect(H2Conn* c);
  bool H2Start(H2Conn* c);
  void H2Submit(H2Conn* c, Stream* st);
  void H2Head(Stream* st);
  void H2Detach(Stream* st);
  void H2Down(H2Conn* c, const std::string& why);
  void H2Send(H2Conn* c);
  void H2MarkDirty(H2Conn* c);
  static void OnH2Connect(uv_connect_t* req, int status);
  static void OnH2Read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnH2Closed(uv_handle_t* h);
  static void OnH2Prepare(uv_prepare_t* p);
  static int H2OnHeader(nghttp2_session*, const nghttp2_frame* f, const uint8_t* name, size_t namelen,
                        const uint8_t* value, size_t valuelen, uint8_t, void* user);
  static int H2OnFrameRecv(nghttp2_session*, const nghttp2_frame* f, void* user);
  static int H2OnData(nghttp2_session*, uint8_t, int32_t sid, const uint8_t* data, size_t len, void* user);
  static int H2OnStreamClose(nghttp2_session*, int32_t sid, uint32_t code, void* user);
  static ssize_t H2ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                            nghttp2_data_source* src, void*);
  const char* Transport() const { return o_.h2 ? (o_.tls ? "h2" : "h2c") : (o_.tls ? "https/1.1" : "http/1.1"); }
  std::string SessionPost(const std::string& sid, std::string_view body) const;

  static void OnStreamConnect(uv_connect_t* req, int status);
  static void OnStreamAlloc(uv_handle_t*, size_t, uv_buf_t* buf);
  static void OnStreamRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf);
  static void OnStreamClosed(uv_handle_t* h);
  void AfterClosed(Stream* st);
  static void OnRetryTimer(uv_timer_t* t);
  static void OnTick(uv_timer_t* t);
  static void OnSlowTick(uv_timer_t* t);

  // server counters (mcpfan's /metrics)
  struct Metrics {
    bool ok = false;
    double published = 0, deliveries = 0, coalesced = 0, slow_closes = 0, writes = 0, streams = 0;
    double task_states = NAN, task_states_bytes = NAN;  // gauges (absent before the Tasks extension)
  };
  Metrics FetchMetrics();

  // publishing
  void EnsureSeq(uint64_t i);
  void Publish(uint64_t i);
  std::string PublishRequest(uint64_t seq, uint64_t ts) const;

  // phases
  bool RunUntil(const std::function<bool()>& done, uint64_t deadline, const std::string& what,
                bool fatal_on_timeout = true);
  void SetFatal(const std::string& msg);
  void ResetPhase(uint64_t base);
  bool ConnectAll();
  bool RunBurst();
  bool RunSustained();
  bool RunStorm();
  // Several processes, one measurement: driven by stdin commands (control.h).
  bool RunReceive();
  bool RunPublish();
  void OnPublishCommand(const std::string& line);
  bool RunTargeted();
  bool WarmUpTargeted();
  bool Tallying() const { return tally_ != nullptr; }
  // A delivery's URI is one this stream subscribed to: the shared --uri (or, when that ends
  // in '/', a URI directly below it: the server matches sub-resources), or its own URI.
  bool UriOk(const Stream* st, const Msg& m) const {
    if (m.uri_hash == 0) return false;
    if (m.uri_hash == st->own_hash) return true;
    if (o_.stream_uris == StreamUris::Own) return false;
    return m.uri_hash == shared_hash_ || (shared_is_dir_ && m.uri_dir_hash == shared_hash_);
  }
  // Stream i's own key: its URI, or with --task-listens its task id.
  std::string OwnBase() const { return o_.task_listens ? std::string(kOwnTaskBase) : o_.own_uri_base; }
  std::string OwnUri(uint32_t idx) const { return OwnBase() + std::to_string(o_.index_base + idx); }
  // --extra-uris: stream i also subscribes to <own URI>/x1 .. /xK, which nobody publishes: they
  // cost the server subscriptions (index entries, memory) without traffic.
  std::string ExtraUri(uint32_t idx, int k) const { return OwnUri(idx) + "/x" + std::to_string(k); }
  // nchan: stream i's channels, for its multiplexed subscriber location (split on ','):
  // <g>, then <g>x1 .. <g>xK, where g = --index-base + i. A publish to stream i goes to the
  // publisher location + <g>, and carries <own URI> in its body like every other kind.
  std::string NchanChannels(uint32_t idx) const {
    std::string g = std::to_string(o_.index_base + idx), c = g;
    for (int k = 1; k <= o_.extra_uris; ++k) c += "," + g + "x" + std::to_string(k);
    return c;
  }
  // Subscriptions the server holds per stream (for RSS per subscription).
  uint64_t SubscriptionsPerStream() const {
    return (o_.stream_uris == StreamUris::Both ? 2u : 1u) +
           uint64_t(o_.stream_uris == StreamUris::Shared ? 0 : o_.extra_uris);
  }
  ProcSample Sample() const { return o_.server_pid ? SampleProcessTree(o_.server_pid) : ProcSample{}; }
  void Report(bool ok);
  // Contract violations seen on the streams: any makes the run fail. (MCP listen streams must
  // carry no `id:` lines and only `event: message`; 2025 session streams carry ids since they
  // are resumable; nchan and the SDK hub may carry both.)
  uint64_t Violations() const {
    return framing_errors_ + dups_ + unknown_seq_ + publish_errors_ + dropped_ + failed_streams_ +
           (tally_ ? tally_->violations() : 0) + (o_.kind == Kind::Listen ? id_lines_ + other_events_ : 0) +
           (o_.kind == Kind::Session ? other_events_ : 0);
  }

  Options o_;
  uv_loop_t loop_{};
  uv_timer_t wake_{};
  uv_timer_t retry_timer_{};
  uv_timer_t tick_{};
  uv_timer_t slow_tick_{};
  bool retry_timer_on_ = false;
  Url metrics_;
  bool metrics_on_ = false;
  std::unique_ptr<HttpPool> metrics_pool_;
  Metrics m0_, m1_;
  uint32_t slow_n_ = 0, open_slow_ = 0;
  uint64_t slow_tick_last_ = 0;
  Url target_, pub_;
  std::vector<Endpoint> pub_eps_;                 // every --publish-url (comma-separated)
  std::unique_ptr<MultiPublisher> multi_;         // publish / targeted scenarios
  std::unique_ptr<DeliveryTally> tally_;          // receive / targeted scenarios
  std::unique_ptr<StdinCommands> commands_;       // receive / publish scenarios
  uint64_t shared_hash_ = 0;
  bool shared_is_dir_ = false;                    // --uri ends in '/'
  bool quit_ = false;
  std::string final_section_;                     // receive / publish / targeted: the report's section
  std::string mcp_path_;
  std::vector<sockaddr_in> sources_;
  uint32_t n_ = 0;
  std::unique_ptr<Stream[]> streams_;
  std::unique_ptr<HttpPool> publishers_;
  std::unique_ptr<HttpPool> control_;
  std::deque<uint32_t> queue_;
  std::vector<uint32_t> retry_;
  uint32_t inflight_ = 0;
  uint32_t open_ = 0;
  uint64_t global_deadline_ = 0;
  uint64_t start_ns_ = 0;
  bool fatal_ = false;
  std::string fatal_msg_;
  std::string first_error_;
  bool sustained_phase_ = false;

  // counters
  uint64_t failed_streams_ = 0, dropped_ = 0, framing_errors_ = 0, id_lines_ = 0, other_events_ = 0;
  uint64_t unexpected_ = 0, stale_ = 0, dups_ = 0, unknown_seq_ = 0, early_ = 0, completes_ = 0;
  uint64_t retries_ = 0, publish_errors_ = 0;

  // publishing state; sequence index i is published as seq = run_offset_ + i
  uint64_t run_offset_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t published_ = 0, acked_ = 0;
  std::vector<uint64_t> send_ns_, last_ns_;
  std::vector<uint32_t> count_;

  // measured-phase state
  uint64_t phase_base_ = 1;
  uint64_t final_seq_ = UINT64_MAX;
  uint64_t at_final_ = 0;
  uint64_t at_final_slow_ = 0;
  uint64_t received_ = 0;
  uint64_t coalesced_ = 0;
  uint64_t received_slow_ = 0;
  uint64_t coalesced_slow_ = 0;
  uint64_t slow_closed_ = 0;  // slow streams the server ended during the sustained phase
  uint64_t phase_last_ns_ = 0;
  bool hist_on_ = false;
  Histogram hist_;
  Histogram hist_fast_, hist_slow_;  // with slow readers: the two classes apart
  // Per stream, its connect leaving the queue -> confirmed (listen: the acknowledgement, the
  // stream's first notification; TCP, TLS and the request included; first connect and storm).
  Histogram confirm_hist_;

  // sustained publisher
  uint64_t sus_base_ = 0, sus_total_ = 0, sus_done_ = 0, sus_start_ = 0;

  // results
  double connect_s_ = -1;
  std::vector<double> rounds_ms_;
  double burst_dps_ = 0;
  struct {
    bool ran = false;
    uint64_t expected = 0, received = 0, coalesced = 0, lost = 0;
    double dps = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
    double publish_lag_ms = 0;
    double drain_s = 0;
    struct Class {
      uint32_t streams = 0;
      uint64_t expected = 0, received = 0, coalesced = 0, lost = 0, at_final = 0, closed = 0;
      double p50 = 0, p99 = 0, p999 = 0, max = 0;
    } fast, slow;
  } sus_;
  struct {
    bool ran = false;
    double reconnect_s = -1, confirm_s = -1;
    bool all_received = false;
  } storm_;
  struct {
    double pps = 0, cpu_us_per_publish = NAN, rss_bytes_per_sub = NAN, ctx_switches_per_publish = NAN;
    double rss_growth_kib = NAN;  // server RSS at the end of the drain - with every stream open (before the warm-up)
    uint64_t subscriptions = 0, lost = 0;
    double warmup_s = 0;
    uint64_t warmup_resent = 0;
  } tgt_;  // targeted: the figures docs/performance.md "Targeted publishes" reports
  ProcSample rss0_, rss1_;
  uint64_t cpu_ticks_ = 0, phase_deliveries_ = 0, self_cpu_us_ = 0;
  bool cpu_measured_ = false;
  // Burst: the server's CPU over rounds 2..K alone. The first delivery on a fresh connection
  // pays one-off costs (buffers grown, first segments), which a per-burst median such as the
  // raw-socket ceiling's leaves out; this figure leaves them out too, like for like.
  uint64_t warm_cpu_ticks_ = 0, warm_deliveries_ = 0;
  char rbuf_[64 * 1024];
  // --tls / --h2
  std::unique_ptr<TlsClientContext> tls_ctx_;
  std::string plain_, cipher_;  // TLS: decrypted bytes of one read, bytes to send
  std::unique_ptr<H2Conn[]> conns_;
  uint32_t nconns_ = 0;
  nghttp2_session_callbacks* h2_cbs_ = nullptr;
  uv_prepare_t h2_prepare_{};
  bool h2_prepare_on_ = false;
  std::vector<H2Conn*> h2_dirty_;
  uint64_t h2_now_ = 0;  // receive time of the read being parsed
  uint64_t h2_conn_failures_ = 0;
};

// ---------------------------------------------------------------- sink

bool StreamSink::OnMessage(const Msg& m) {
  if (!lg->OnMessage(st, m, now)) closed = true;
  return !closed;
}
bool StreamSink::OnFramingError(const char* what) {
  lg->OnFramingError(st, what);
  closed = true;
  return false;
}
void StreamSink::OnIdLine() { lg->OnIdLine(st); }
void StreamSink::OnEventType(std::string_view t) { lg->OnEventType(st, t); }

// ---------------------------------------------------------------- setup

bool Loadgen::Setup(std::string* err) {
  bool https = false;
  if (!ParseUrl(o_.target, &target_, err, &https)) return false;
  if (https) o_.tls = true;
  mcp_path_ = target_.path.empty() || target_.path == "/" ? "/mcp" : target_.path;
  std::string base = "http://" + target_.hostport;
  std::string pubs = o_.publish_url;
  bool own_uris = o_.stream_uris != StreamUris::Shared;
  if (pubs.empty()) {
    // nchan with own URIs: one channel per stream, so the URL is a prefix (the index is appended)
    pubs = base + (o_.kind == Kind::Nchan    ? (own_uris ? "/pub/s/" : "/pub/bench")
                   : o_.kind == Kind::SdkHub ? "/publish"
                                             : "/v1/publish");
  }
  if (o_.kind == Kind::Nchan && own_uris && !o_.sub_path_set) o_.sub_path = "/sub/multi/";
  // --publish-url may name several URLs (comma-separated): the publish and targeted
  // scenarios spread their publishes over them; the classic ones use the first.
  for (size_t at = 0; at <= pubs.size();) {
    size_t comma = pubs.find(',', at);
    if (comma == std::string::npos) comma = pubs.size();
    Url u;
    if (!ParseUrl(pubs.substr(at, comma - at), &u, err)) return false;
    if (u.path.empty()) u.path = "/";
    pub_eps_.push_back(Endpoint{u.addr, u.hostport, u.path});
    if (pub_eps_.size() == 1) pub_ = u;
    at = comma + 1;
  }
  bool controlled = o_.scenario == Scenario::Receive || o_.scenario == Scenario::Publish;
  if (o_.streams == 0 && o_.scenario != Scenario::Publish) {
    *err = "--streams 0 is only for --scenario publish";
    return false;
  }
  if (own_uris && o_.kind == Kind::Session) {
    *err = "--stream-uris own|both needs --kind listen, stdio, sdkhub (one listen with several URIs) or nchan";
    return false;
  }
  if (o_.kind == Kind::Nchan && o_.stream_uris == StreamUris::Both) {
    *err = "--kind nchan takes --stream-uris own (one multiplexed subscriber per stream), not both";
    return false;
  }
  if (o_.extra_uris > 0 && !own_uris) {
    *err = "--extra-uris needs --stream-uris own or both (the extras are per stream)";
    return false;
  }
  if (o_.batch > 1 && (o_.scenario != Scenario::Targeted || !o_.rate_max ||
                      (o_.kind != Kind::Listen && o_.kind != Kind::Session && o_.kind != Kind::Stdio))) {
    *err = "--batch is for --scenario targeted --rate max against mcpfan (nchan and the hub take one message per POST)";
    return false;
  }
  if (o_.rate_max && o_.scenario != Scenario::Targeted) {
    *err = "--rate max is for --scenario targeted";
    return false;
  }
  if (o_.scenario == Scenario::Targeted && o_.stream_uris == StreamUris::Shared) {
    *err = "--scenario targeted needs --stream-uris own or both";
    return false;
  }
  if (o_.scenario == Scenario::Receive && o_.kind != Kind::Listen && o_.kind != Kind::Stdio &&
      o_.kind != Kind::Session) {
    *err = "--scenario receive is for the mcpfan kinds (listen, session, stdio)";
    return false;
  }
  if (o_.task_listens && (o_.scenario != Scenario::Targeted || o_.stream_uris != StreamUris::Own ||
                          o_.extra_uris > 0 || (o_.kind != Kind::Listen && o_.kind != Kind::Stdio))) {
    *err = "--task-listens needs --scenario targeted --stream-uris own, no --extra-uris, and --kind listen or stdio "
           "(one task per stream)";
    return false;
  }
  if (o_.params_bytes < 0 || (o_.params_bytes > 0 && o_.scenario != Scenario::Targeted)) {
    *err = "--params-bytes is for --scenario targeted (a size in bytes)";
    return false;
  }
  // Receivers hash a delivery's URI as the raw bytes between its quotes: keep URIs free of
  // anything JSON would escape.
  for (const std::string* u : {&o_.uri, &o_.own_uri_base}) {
    for (char c : *u) {
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
        *err = "a URI with a quote, backslash or control character: " + *u;
        return false;
      }
    }
  }
  if (controlled || o_.scenario == Scenario::Targeted) o_.no_metrics = o_.no_metrics || controlled;
  if ((o_.tls || o_.h2) && o_.kind != Kind::Listen && o_.kind != Kind::Nchan) {
    *err = "--tls and --h2 are for --kind listen and nchan";
    return false;
  }
  if (o_.h2 && o_.slow_fraction > 0) {
    *err = "--slow-readers is not supported with --h2 (one connection carries many streams)";
    return false;
  }
  if (o_.streams_per_conn < 1) {
    *err = "--streams-per-conn must be at least 1";
    return false;
  }
  if (o_.tls && o_.publish_url.empty() && o_.scenario != Scenario::Receive) {
    *err = "--tls needs --publish-url: publishes go over plaintext HTTP/1.1 (mcpfan: its --publish-listen)";
    return false;
  }
  if (o_.tls) {
    tls_ctx_ = std::make_unique<TlsClientContext>();
    if (!tls_ctx_->Init(o_.h2, o_.ca_file, o_.insecure_tls, err)) return false;
  } else if (!o_.ca_file.empty() || o_.insecure_tls) {
    *err = "--ca-file and --insecure-tls need --tls (or an https:// --target)";
    return false;
  }
  if (o_.kind == Kind::Stdio && o_.unix_path.empty()) {
    *err = "--kind stdio needs --unix PATH";
    return false;
  }
  if (o_.unix_path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    *err = "--unix path too long";
    return false;
  }
  if (o_.slow_fraction > 0 && o_.scenario != Scenario::Sustained) {
    *err = "--slow-readers needs --scenario sustained";
    return false;
  }
  // /metrics: mcpfan's counters around the measured phase (mcpfan kinds by default).
  if (!o_.no_metrics) {
    std::string mu = o_.metrics_url;
    if (mu.empty() && (o_.kind == Kind::Listen || o_.kind == Kind::Session || o_.kind == Kind::Stdio))
      mu = (o_.tls ? "http://" + pub_.hostport : base) + "/metrics";  // TLS: the (plaintext) publish listener
    if (!mu.empty()) {
      if (!ParseUrl(mu, &metrics_, err)) return false;
      if (metrics_.path.empty()) metrics_.path = "/metrics";
      metrics_on_ = true;
    }
  }

  // File descriptors: raise the soft limit to the hard limit.
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  uint64_t need = uint64_t(o_.streams) + 1 + kControlConnections + 64;
  if (rl.rlim_cur < need) {
    *err = "--streams " + std::to_string(o_.streams) + " needs " + std::to_string(need) +
           " descriptors; RLIMIT_NOFILE is " + std::to_string(rl.rlim_cur);
    return false;
  }

  int k = o_.sources > 0 ? o_.sources : std::max(2, (o_.streams + 4999) / 5000);
  k = std::min(k, 250);
  for (int i = 0; i < k; ++i) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl((127u << 24) | uint32_t(2 + i));
    sources_.push_back(a);
  }

  timeval tv{};
  gettimeofday(&tv, nullptr);
  run_offset_ = (uint64_t(tv.tv_sec) * 1000 + uint64_t(tv.tv_usec) / 1000) * 1000;  // unique per run, < 2^53

  uv_loop_init(&loop_);
  uv_timer_init(&loop_, &wake_);
  uv_timer_init(&loop_, &retry_timer_);
  uv_timer_init(&loop_, &tick_);
  uv_timer_init(&loop_, &slow_tick_);
  retry_timer_.data = this;
  tick_.data = this;
  slow_tick_.data = this;
  n_ = uint32_t(o_.streams);
  streams_.reset(new Stream[n_]);
  for (uint32_t i = 0; i < n_; ++i) {
    streams_[i].lg = this;
    streams_[i].idx = i;
    // Slow readers spread evenly over the indices (and so over the source addresses):
    // stream i is slow when floor((i + 1) F) > floor(i F).
    streams_[i].slow = o_.slow_fraction > 0 &&
                       std::floor((double(i) + 1) * o_.slow_fraction) > std::floor(double(i) * o_.slow_fraction);
    if (streams_[i].slow) ++slow_n_;
    if (o_.stream_uris != StreamUris::Shared) streams_[i].own_hash = UriHash(OwnUri(i));
    // Deliveries published by another process are told apart by their ts and URI.
    if (o_.scenario == Scenario::Receive || o_.scenario == Scenario::Targeted)
      streams_[i].lines.set_extras(true, o_.task_listens ? kTaskIdMarker : kUriMarker);
  }
  shared_hash_ = UriHash(o_.uri);
  shared_is_dir_ = !o_.uri.empty() && o_.uri.back() == '/';
  if (o_.scenario == Scenario::Receive || o_.scenario == Scenario::Targeted)
    tally_ = std::make_unique<DeliveryTally>(n_);
  if (o_.scenario == Scenario::Publish || o_.scenario == Scenario::Targeted) {
    // targeted: a window per connection (P connections x W in flight); the publish
    // scenario (bench/cluster) writes every publish when due.
    multi_ = std::make_unique<MultiPublisher>(
        &loop_, pub_eps_, o_.pad_bytes, o_.scenario == Scenario::Targeted ? o_.pub_window : MultiPublisher::kUnbounded);
    if (o_.task_listens) multi_->set_tasks();
    multi_->set_params_bytes(o_.params_bytes);
  }
  publishers_ = std::make_unique<HttpPool>(&loop_, pub_.addr, 1, kPublishDepth);
  if (metrics_on_) metrics_pool_ = std::make_unique<HttpPool>(&loop_, metrics_.addr, 1, 1);
  if (o_.kind == Kind::Session) control_ = std::make_unique<HttpPool>(&loop_, target_.addr, kControlConnections, 1);
  if (o_.h2) {
    nconns_ = (n_ + uint32_t(o_.streams_per_conn) - 1) / uint32_t(o_.streams_per_conn);
    conns_.reset(new H2Conn[nconns_]);
    for (uint32_t i = 0; i < nconns_; ++i) {
      conns_[i].lg = this;
      conns_[i].idx = i;
    }
    nghttp2_session_callbacks_new(&h2_cbs_);
    nghttp2_session_callbacks_set_on_header_callback(h2_cbs_, &Loadgen::H2OnHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(h2_cbs_, &Loadgen::H2OnFrameRecv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(h2_cbs_, &Loadgen::H2OnData);
    nghttp2_session_callbacks_set_on_stream_close_callback(h2_cbs_, &Loadgen::H2OnStreamClose);
    uv_prepare_init(&loop_, &h2_prepare_);
    h2_prepare_.data = this;
  }
  return true;
}

void Loadgen::Teardown() {
  uv_timer_stop(&tick_);
  uv_timer_stop(&retry_timer_);
  uv_timer_stop(&slow_tick_);
  for (uint32_t i = 0; i < n_; ++i) {
    Stream* st = &streams_[i];
    if (st->handle_open && st->state != SState::Closing) {
      st->after_close = AfterClose::Nothing;
      st->state = SState::Closing;
      uv_close(st->handle(), &Loadgen::OnStreamClosed);
    }
  }
  publishers_->Close();
  if (multi_) multi_->Close();
  if (commands_) commands_->Close();
  if (control_) control_->Close();
  if (metrics_pool_) metrics_pool_->Close();
  for (uint32_t i = 0; i < nconns_; ++i) {
    H2Conn* c = &conns_[i];
    c->waiting.clear();
    if (c->state != H2Conn::St::Idle && c->state != H2Conn::St::Closing) {
      c->state = H2Conn::St::Closing;
      uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), &Loadgen::OnH2Closed);
    }
  }
  if (o_.h2) uv_close(reinterpret_cast<uv_handle_t*>(&h2_prepare_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&wake_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&retry_timer_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&tick_), nullptr);
  uv_close(reinterpret_cast<uv_handle_t*>(&slow_tick_), nullptr);
  // Nothing is left to start new work: this returns once every close callback has run.
  uv_run(&loop_, UV_RUN_DEFAULT);
  uv_loop_close(&loop_);
  for (uint32_t i = 0; i < nconns_; ++i) {
    if (conns_[i].sess) nghttp2_session_del(conns_[i].sess);
    conns_[i].sess = nullptr;
  }
  if (h2_cbs_) nghttp2_session_callbacks_del(h2_cbs_);
  h2_cbs_ = nullptr;
}

// ---------------------------------------------------------------- stream lifecycle

void Loadgen::Enqueue(Stream* st) {
  st->state = SState::Queued;
  queue_.push_back(st->idx);
  PumpConnects();
}

void Loadgen::PumpConnects() {
  while (inflight_ < uint32_t(o_.window) && !queue_.empty() && !fatal_) {
    Stream* st = &streams_[queue_.front()];
    queue_.pop_front();
    ++inflight_;
    st->attempts = 0;
    st->open_ns = NowNs();
    StartAttempt(st);
  }
}

void Loadgen::StartAttempt(Stream* st) {
  ++st->gen;
  st->carry.clear();
  st->last_seq = phase_base_ - 1;
  switch (o_.kind) {
    case Kind::Session:
      st->state = SState::SessionSetup;
      SessionStep(st, 0);
      return;
    case Kind::Stdio: ConnectPipe(st); return;
    default:
      if (o_.h2) return H2Open(st);
      ConnectTcp(st);
      return;
  }
}

void Loadgen::ConnectTcp(Stream* st) {
  int rc = uv_tcp_init_ex(&loop_, &st->h.tcp, AF_INET);
  if (rc != 0) return FailAttempt(st, std::string("socket: ") + uv_strerror(rc));
  st->handle_open = true;
  st->h.tcp.data = st;
  st->creq.data = st;
  st->state = SState::Connecting;
  uv_os_fd_t fd;
  if (uv_fileno(st->handle(), &fd) == 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    // Before connect, so the advertised window (and its scale) is set by it.
    if (st->slow) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o_.slow_rcvbuf, sizeof o_.slow_rcvbuf);
  }
  const sockaddr_in& src = sources_[st->idx % sources_.size()];
  rc = uv_tcp_bind(&st->h.tcp, reinterpret_cast<const sockaddr*>(&src), 0);
  if (rc == 0) uv_tcp_nodelay(&st->h.tcp, 1);
  if (rc == 0)
    rc = uv_tcp_connect(&st->creq, &st->h.tcp, reinterpret_cast<const sockaddr*>(&target_.addr),
                        &Loadgen::OnStreamConnect);
  if (rc != 0) FailAttempt(st, std::string("connect: ") + uv_strerror(rc));
}

void Loadgen::ConnectPipe(Stream* st) {
  uv_pipe_init(&loop_, &st->h.pipe, 0);
  st->handle_open = true;
  st->h.pipe.data = st;
  st->creq.data = st;
  st->state = SState::Connecting;
  uv_pipe_connect(&st->creq, &st->h.pipe, o_.unix_path.c_str(), &Loadgen::OnStreamConnect);
}

std::string Loadgen::ListenBody(uint32_t idx) const {
  std::string uris;  // --stream-uris: the shared URI, this stream's own, or both
  if (o_.stream_uris != StreamUris::Own) uris = "\"" + JsonEscape(o_.uri) + "\"";
  if (o_.stream_uris != StreamUris::Shared) {
    uris += (uris.empty() ? "\"" : ",\"") + JsonEscape(OwnUri(idx)) + "\"";
    for (int k = 1; k <= o_.extra_uris; ++k) uris += ",\"" + JsonEscape(ExtraUri(idx, k)) + "\"";
  }
  std::string head = R"({"jsonrpc":"2.0","id":"listen:)" + std::to_string(idx) +
                     R"(","method":"subscriptions/listen","params":{"_meta":)";
  if (o_.task_listens) {  // one task id, with the Tasks extension declared
    return head + std::string(kEnvelope2026Tasks) + R"(,"notifications":{"taskIds":[")" + OwnUri(idx) + R"("]}}})";
  }
  return head + std::string(kEnvelope2026) + R"(,"notifications":{"resourceSubscriptions":[)" + uris + R"(]}}})";
}

std::string Loadgen::ListenRequest(uint32_t idx) const {
  std::string body = ListenBody(idx);
  if (o_.kind == Kind::Stdio) return body + "\n";
  return "POST " + mcp_path_ + " HTTP/1.1\r\nHost: " + target_.hostport +
         "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n" +
         (o_.bearer.empty() ? std::string() : "Authorization: Bearer " + o_.bearer + "\r\n") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string Loadgen::SessionPost(const std::string& sid, std::string_view body) const {
  std::string r = "POST " + mcp_path_ + " HTTP/1.1\r\nHost: " + target_.hostport +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  if (!sid.empty()) r += "MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: " + sid + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

// Session kind: 0 initialize, 1 notifications/initialized, (then the GET stream), 2 resources/subscribe.
void Loadgen::SessionStep(Stream* st, int step) {
  uint32_t gen = st->gen;
  Job j;
  std::string req;
  if (step == 0) {
    req = SessionPost("", R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
                          R"("capabilities":{},"clientInfo":{"name":"mcpfan-load","version":"0.1.0"}}})");
  } else if (step == 1) {
    req = SessionPost(st->sid, R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  } else {
    req = SessionPost(st->sid, R"({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":")" +
                                   JsonEscape(o_.uri) + R"("}})");
  }
  j.build = [req = std::move(req)] { return req; };
  j.done = [this, st, gen, step](Reply& r) {
    if (st->gen != gen) return;  // a later attempt (or a storm) replaced this one
    std::string what = step == 0 ? "initialize" : step == 1 ? "notifications/initialized" : "resources/subscribe";
    auto fail = [&](const std::string& why) {
      FailAttempt(st, what + ": " +
                          (r.status ? "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error) +
                          (why.empty() ? "" : " (" + why + ")"));
    };
    if (step == 0) {
      if (st->state != SState::SessionSetup) return;
      if (r.status != 200 || r.head.session_id.empty()) return fail("want 200 with Mcp-Session-Id");
      st->sid = r.head.session_id;
      SessionStep(st, 1);
    } else if (step == 1) {
      if (st->state != SState::SessionSetup) return;
      if (r.status / 100 != 2) return fail("want 2xx");
      ConnectTcp(st);
    } else {
      if (st->state != SState::AwaitSubscribe) return;
      if (r.status != 200 || r.body.find(R"("result":{})") == std::string::npos) return fail("want 200 with result {}");
      Confirm(st);
    }
  };
  control_->Submit(std::move(j));
}

void Loadgen::OnStreamConnect(uv_connect_t* req, int status) {
  auto* st = static_cast<Stream*>(req->data);
  Loadgen* self = st->lg;
  if (st->state != SState::Connecting) return;  // closing
  if (status < 0) {
    self->FailAttempt(st, std::string("connect: ") + uv_strerror(status));
    return;
  }
  std::string request;
  switch (self->o_.kind) {
    case Kind::Listen:
    case Kind::SdkHub:
    case Kind::Stdio: request = self->ListenRequest(st->idx); break;
    case Kind::Session:
      request = "GET " + self->mcp_path_ + " HTTP/1.1\r\nHost: " + self->target_.hostport +
                "\r\nAccept: text/event-stream\r\nMcp-Session-Id: " + st->sid +
                "\r\nMCP-Protocol-Version: 2025-11-25\r\n\r\n";
      break;
    case Kind::Nchan:
      request = "GET " + self->o_.sub_path +
                (self->o_.stream_uris == StreamUris::Own ? self->NchanChannels(st->idx) : std::string()) +
                " HTTP/1.1\r\nHost: " + self->target_.hostport +
                "\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
      break;
  }
  if (self->o_.kind == Kind::Stdio) {
    st->state = SState::AwaitAck;
    st->lines.Reset(LineFramer::Mode::JsonLines);
    uv_os_fd_t fd;  // a Unix socket: its receive buffer hardly bounds the sender (see bench/compare/LOADGEN_CLI.md)
    if (st->slow && uv_fileno(st->handle(), &fd) == 0) {
      setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &self->o_.slow_rcvbuf, sizeof self->o_.slow_rcvbuf);
    }
  } else {
    st->state = SState::AwaitHead;
  }
  if (self->tls_ctx_) {  // --tls: the ClientHello now, the request once the handshake is done
    std::string out, err;
    st->tls = std::make_unique<TlsPipe>();
    if (!st->tls->Start(*self->tls_ctx_, &out, &err) || !st->tls->Write(request.data(), request.size(), &out, &err))
      return self->FailAttempt(st, "TLS: " + err);
    request.swap(out);
  }
  int rc = WriteOwned(st->stream(), std::move(request));
  if (rc == 0) rc = uv_read_start(st->stream(), &Loadgen::OnStreamAlloc, &Loadgen::OnStreamRead);
  if (rc != 0) self->FailAttempt(st, std::string("write: ") + uv_strerror(rc));
}

void Loadgen::OnStreamAlloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  auto* st = static_cast<Stream*>(h->data);
  Loadgen* self = st->lg;
  size_t len = sizeof self->rbuf_;
  if (st->slow && st->state == SState::Open) len = std::min(len, size_t(std::max(1.0, st->tokens)));
  *buf = uv_buf_init(self->rbuf_, unsigned(len));
}

void Loadgen::OnStreamRead(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  auto* st = static_cast<Stream*>(s->data);
  Loadgen* self = st->lg;
  if (nread == 0 || st->state == SState::Closing) return;
  if (nread < 0) {
    self->OnEnd(st, nread == UV_EOF ? "closed by the server" : std::string("read: ") + uv_strerror(int(nread)));
    return;
  }
  if (st->tls) {
    self->plain_.clear();
    self->cipher_.clear();
    bool eof = false;
    std::string err;
    bool ok = st->tls->Feed(buf->base, size_t(nread), &self->plain_, &self->cipher_, &eof, &err);
    if (!self->cipher_.empty()) WriteOwned(s, self->cipher_);
    if (!ok) return self->OnEnd(st, "TLS: " + err);
    if (!self->plain_.empty()) self->Feed(st, self->plain_.data(), self->plain_.size(), NowNs());
    if (eof && st->state != SState::Closing && st->state != SState::Idle && st->handle_open)
      return self->OnEnd(st, "TLS close_notify from the server");
  } else {
    self->Feed(st, buf->base, size_t(nread), NowNs());
  }
  if (st->slow && st->state == SState::Open) {
    st->tokens -= double(nread);
    if (st->tokens < 1 && !st->paused) {
      st->paused = true;
      uv_read_stop(s);  // until OnSlowTick refills the bucket
    }
  }
}

void Loadgen::OnSlowTick(uv_timer_t* t) {
  auto* self = static_cast<Loadgen*>(t->data);
  uint64_t now = NowNs();
  double dt = double(now - self->slow_tick_last_) / kSec;
  self->slow_tick_last_ = now;
  // A bucket holds at most 1 s worth (at least one 4 KiB read), so a paused reader does not
  // save up a burst.
  double cap = std::max(self->o_.slow_bps, 4096.0);
  for (uint32_t i = 0; i < self->n_; ++i) {
    Stream* st = &self->streams_[i];
    if (!st->slow || st->state != SState::Open) continue;
    st->tokens = std::min(cap, st->tokens + self->o_.slow_bps * dt);
    if (st->paused && st->tokens >= 1) {
      st->paused = false;
      uv_read_start(st->stream(), &Loadgen::OnStreamAlloc, &Loadgen::OnStreamRead);
    }
  }
}

void Loadgen::Feed(Stream* st, const char* p, size_t n, uint64_t now) {
  if (o_.kind == Kind::Stdio) {
    StreamSink sink{this, st, now};
    st->lines.Feed(p, n, sink);
    return;
  }
  if (st->state != SState::AwaitHead) {
    FeedBody(st, p, n, now);
    return;
  }
  std::string buf;  // head (and whatever followed it) when it arrived in pieces
  std::string_view data(p, n);
  if (!st->carry.empty()) {
    st->carry.append(p, n);
    buf.swap(st->carry);
    data = buf;
  }
  size_t he = HeadEnd(data);
  if (!he) {
    if (data.size() > 64 * 1024) return FailAttempt(st, "response head larger than 64 KiB");
    st->carry.assign(data);
    return;
  }
  HttpHead h;
  if (!ParseHead(data.substr(0, he), &h)) return FailAttempt(st, "malformed HTTP response head");
  std::string_view rest = data.substr(he);
  if (h.status != 200 || h.content_type != "text/event-stream") {
    return FailAttempt(
        st, "HTTP " + std::to_string(h.status) + " " + h.content_type + ": " + std::string(rest.substr(0, 200)));
  }
  if (h.chunked) {
    st->body.Reset(BodyDecoder::Mode::Chunked);
  } else if (h.content_length >= 0) {
    st->body.Reset(BodyDecoder::Mode::Length, uint64_t(h.content_length));
  } else {
    st->body.Reset(BodyDecoder::Mode::UntilClose);
  }
  st->lines.Reset(LineFramer::Mode::Sse);
  switch (o_.kind) {
    case Kind::Nchan: Confirm(st); break;
    case Kind::Session:
      st->state = SState::AwaitSubscribe;
      SessionStep(st, 2);
      break;
    default: st->state = SState::AwaitAck; break;
  }
  if (!rest.empty()) FeedBody(st, rest.data(), rest.size(), now);
}

void Loadgen::FeedBody(Stream* st, const char* p, size_t n, uint64_t now) {
  StreamSink sink{this, st, now};
  bool ok = st->body.Feed(p, n, [&](const char* d, size_t k) { return st->lines.Feed(d, k, sink); });
  if (sink.closed) return;
  if (!ok) {
    OnFramingError(st, "bad HTTP body framing (chunked encoding)");
    return;
  }
  if (st->body.done()) OnEnd(st, "the server ended the stream");
}

bool Loadgen::OnMessage(Stream* st, const Msg& m, uint64_t now) {
  switch (m.type) {
    case MsgType::Seq:
      if (st->state != SState::Open) {
        ++early_;
        return true;
      }
      if (Tallying()) {
        tally_->Record(st->idx, m.seq, m.ts_ns, now, UriOk(st, m));
        return true;
      }
      Deliver(st, m.seq, now);
      return true;
    case MsgType::Ack: {
      if (st->state != SState::AwaitAck) {
        ++unexpected_;
        return true;
      }
      char id[32];
      int len = std::snprintf(id, sizeof id, "\"listen:%u\"", st->idx);
      if (!memmem(m.text.data(), m.text.size(), id, size_t(len))) {
        OnFramingError(st, "acknowledgement without this listen's subscriptionId");
        return false;
      }
      st->lines.clear_ack_text();
      Confirm(st);
      return true;
    }
    case MsgType::Complete: ++completes_; return true;
    case MsgType::Other: ++unexpected_; return true;
    case MsgType::Invalid: OnFramingError(st, "not a JSON object"); return false;
  }
  return true;
}

void Loadgen::Deliver(Stream* st, uint64_t seq, uint64_t now) {
  if (seq < run_offset_ + phase_base_) {  // an earlier phase's (or run's) message replayed
    ++stale_;
    return;
  }
  uint64_t i = seq - run_offset_;
  if (i >= count_.size() || send_ns_[i] == 0) {
    ++unknown_seq_;
    return;
  }
  if (i <= st->last_seq) {
    ++dups_;
    return;
  }
  coalesced_ += i - st->last_seq - 1;
  if (st->slow) {
    coalesced_slow_ += i - st->last_seq - 1;
    ++received_slow_;
  }
  st->last_seq = i;
  ++received_;
  ++count_[i];
  last_ns_[i] = now;
  phase_last_ns_ = now;
  if (hist_on_) {
    uint64_t lat = now > send_ns_[i] ? now - send_ns_[i] : 0;
    hist_.Record(lat);
    if (slow_n_) (st->slow ? hist_slow_ : hist_fast_).Record(lat);
  }
  if (i == final_seq_) {
    ++at_final_;
    if (st->slow) ++at_final_slow_;
  }
}

bool Loadgen::OnFramingError(Stream* st, const char* what) {
  ++framing_errors_;
  std::string why = std::string("framing: ") + what;
  if (st->state == SState::Open) {
    OnEnd(st, why);
  } else {
    FailAttempt(st, why);
  }
  return false;
}

void Loadgen::Confirm(Stream* st) {
  if (st->open_ns) confirm_hist_.Record(NowNs() - st->open_ns);
  st->open_ns = 0;
  st->state = SState::Open;
  st->tokens = 0;
  st->paused = false;
  if (st->slow) ++open_slow_;
  st->attempts = 0;
  st->carry.clear();
  st->carry.shrink_to_fit();
  ++open_;
  --inflight_;
  PumpConnects();
}

void Loadgen::FailAttempt(Stream* st, const std::string& why) {
  if (st->state == SState::Closing || st->state == SState::Idle) return;
  if (first_error_.empty()) first_error_ = "stream " + std::to_string(st->idx) + ": " + why;
  ++st->attempts;
  ++st->gen;  // pending session callbacks of this attempt are void
  if (st->attempts >= kMaxAttempts || fatal_) {
    ++failed_streams_;
    --inflight_;
    CloseStream(st, AfterClose::Nothing);
    SetFatal("stream " + std::to_string(st->idx) + " could not be confirmed after " +
             std::to_string(int(st->attempts)) + " attempts: " + why);
    return;
  }
  ++retries_;
  st->retry_at = NowNs() + uint64_t(st->attempts) * 20 * kMs;
  CloseStream(st, AfterClose::Retry);
}

void Loadgen::CloseStream(Stream* st, AfterClose then) {
  if (st->state == SState::Open) {
    --open_;
    if (st->slow) --open_slow_;
  }
  st->after_close = then;
  if (o_.h2) {
    H2Detach(st);
    st->state = SState::Closing;
    AfterClosed(st);
    return;
  }
  if (st->handle_open) {
    if (st->state == SState::Closing) return;
    st->state = SState::Closing;
    uv_close(st->handle(), &Loadgen::OnStreamClosed);
    return;
  }
  AfterClosed(st);
}

void Loadgen::OnStreamClosed(uv_handle_t* h) {
  auto* st = static_cast<Stream*>(h->data);
  st->handle_open = false;
  st->lg->AfterClosed(st);
}

void Loadgen::AfterClosed(Stream* st) {
  st->state = SState::Idle;
  st->tls.reset();
  st->carry.clear();
  st->carry.shrink_to_fit();
  st->lines.Reset(LineFramer::Mode::Sse);
  switch (st->after_close) {
    case AfterClose::Nothing: break;
    case AfterClose::Retry:
      st->state = SState::Queued;
      retry_.push_back(st->idx);
      if (!retry_timer_on_) {
        retry_timer_on_ = true;
        uv_timer_start(&retry_timer_, &Loadgen::OnRetryTimer, 5, 5);
      }
      break;
    case AfterClose::Reconnect: Enqueue(st); break;
  }
}

void Loadgen::OnRetryTimer(uv_timer_t* t) {
  auto* self = static_cast<Loadgen*>(t->data);
  uint64_t now = NowNs();
  std::vector<uint32_t> later;
  std::vector<uint32_t> due;
  for (uint32_t i : self->retry_) (self->streams_[i].retry_at <= now ? due : later).push_back(i);
  self->retry_.swap(later);
  for (uint32_t i : due) {
    if (!self->fatal_) self->StartAttempt(&self->streams_[i]);
  }
  if (self->retry_.empty()) {
    self->retry_timer_on_ = false;
    uv_timer_stop(t);
  }
}

void Loadgen::OnEnd(Stream* st, const std::string& why) {
  if (st->state == SState::Open && st->slow && sustained_phase_) {
    // A server may end a reader that does not keep up (mcpfan past --max-pending-bytes):
    // counted, not a failure.
    ++slow_closed_;
    CloseStream(st, AfterClose::Nothing);
    return;
  }
  if (st->state == SState::Open) {
    ++dropped_;
    if (first_error_.empty()) first_error_ = "stream " + std::to_string(st->idx) + " dropped: " + why;
    CloseStream(st, AfterClose::Nothing);
    // A receiver reports a dropped stream with its phase (the driver decides); it goes on.
    if (Tallying()) tally_->StreamDropped();
    if (!sustained_phase_ && !Tallying()) SetFatal("stream " + std::to_string(st->idx) + " dropped: " + why);
    return;
  }
  FailAttempt(st, "before confirmation: " + why);
}

// ---------------------------------------------------------------- HTTP/2 (--h2)
//
// Stream i is HTTP/2 stream on connection i / K (K = --streams-per-conn). A connection is
// opened when its first stream wants it; its streams wait until the session is up (h2c: at
// once, prior knowledge; TLS: once the handshake chose ALPN h2). Requests and frames are
// queued in nghttp2 and written in one go per connection before the loop next blocks. The
// response's DATA goes through the same SSE framer and delivery checks as HTTP/1.1's body
// (HTTP/2 has no chunked encoding to undo). A stream the load generator ends is reset
// (RST_STREAM CANCEL); a connection that fails ends every stream on it.

void Loadgen::H2Open(Stream* st) {
  H2Conn* c = ConnOf(st);
  st->state = SState::Connecting;
  st->h2_sid = 0;
  if (c->state == H2Conn::St::Ready) return H2Submit(c, st);
  c->waiting.push_back(st->idx);
  if (c->state == H2Conn::St::Idle) H2Connect(c);
}

void Loadgen::H2Connect(H2Conn* c) {
  auto fail_waiting = [&](const std::string& why) {
    std::vector<uint32_t> w;
    w.swap(c->waiting);
    for (uint32_t i : w) {
      if (streams_[i].state == SState::Connecting) FailAttempt(&streams_[i], why);
    }
  };
  int rc = uv_tcp_init_ex(&loop_, &c->tcp, AF_INET);
  if (rc != 0) return fail_waiting(std::string("socket: ") + uv_strerror(rc));
  c->tcp.data = c;
  c->creq.data = c;
  c->state = H2Conn::St::Connecting;
  uv_os_fd_t fd;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(&c->tcp), &fd) == 0) {
    int one = 1;
    setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  }
  const sockaddr_in& src = sources_[c->idx % sources_.size()];
  rc = uv_tcp_bind(&c->tcp, reinterpret_cast<const sockaddr*>(&src), 0);
  if (rc == 0) uv_tcp_nodelay(&c->tcp, 1);
  if (rc == 0)
    rc = uv_tcp_connect(&c->creq, &c->tcp, reinterpret_cast<const sockaddr*>(&target_.addr), &Loadgen::OnH2Connect);
  if (rc != 0) H2Down(c, std::string("connect: ") + uv_strerror(rc));
}

void Loadgen::OnH2Connect(uv_connect_t* req, int status) {
  auto* c = static_cast<H2Conn*>(req->data);
  Loadgen* self = c->lg;
  if (c->state != H2Conn::St::Connecting) return;
  if (status < 0) return self->H2Down(c, std::string("connect: ") + uv_strerror(status));
  auto* s = reinterpret_cast<uv_stream_t*>(&c->tcp);
  int rc = uv_read_start(
      s,
      [](uv_handle_t* h, size_t, uv_buf_t* b) {
        Loadgen* lg = static_cast<H2Conn*>(h->data)->lg;
        *b = uv_buf_init(lg->rbuf_, sizeof lg->rbuf_);
      },
      &Loadgen::OnH2Read);
  if (rc != 0) return self->H2Down(c, std::string("read: ") + uv_strerror(rc));
  if (!self->tls_ctx_) {
    self->H2Start(c);  // h2c with prior knowledge: the preface goes first
    return;
  }
  std::string out, err;
  c->tls = std::make_unique<TlsPipe>();
  if (!c->tls->Start(*self->tls_ctx_, &out, &err)) return self->H2Down(c, "TLS: " + err);
  c->state = H2Conn::St::Handshaking;
  rc = WriteOwned(s, std::move(out));
  if (rc != 0) self->H2Down(c, std::string("write: ") + uv_strerror(rc));
}

bool Loadgen::H2Start(H2Conn* c) {
  if (nghttp2_session_client_new(&c->sess, h2_cbs_, c) != 0) {
    H2Down(c, "nghttp2_session_client_new failed");
    return false;
  }
  // No push; a large window, so that a burst to K streams never waits for WINDOW_UPDATEs
  // (nghttp2 sends them as the data is consumed).
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20}};
  nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, 2);
  nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 1 << 30);
  c->state = H2Conn::St::Ready;
  std::vector<uint32_t> w;
  w.swap(c->waiting);
  for (uint32_t i : w) {
    if (streams_[i].state == SState::Connecting) H2Submit(c, &streams_[i]);
  }
  H2MarkDirty(c);
  return true;
}

void Loadgen::H2Submit(H2Conn* c, Stream* st) {
  bool post = o_.kind != Kind::Nchan;
  std::string path =
      post ? mcp_path_ : o_.sub_path + (o_.stream_uris == StreamUris::Own ? NchanChannels(st->idx) : std::string());
  std::string scheme = o_.tls ? "https" : "http";
  std::string len;
  auto nv = [](std::string_view n, std::string_view v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                      NGHTTP2_NV_FLAG_NONE};
  };
  std::vector<nghttp2_nv> h = {nv(":method", post ? "POST" : "GET"), nv(":scheme", scheme),
                               nv(":authority", target_.hostport), nv(":path", path)};
  nghttp2_data_provider body{};
  if (post) {
    st->h2body = ListenBody(st->idx);
    st->h2off = 0;
    len = std::to_string(st->h2body.size());
    h.push_back(nv("content-type", "application/json"));
    h.push_back(nv("accept", "application/json, text/event-stream"));
    h.push_back(nv("mcp-protocol-version", "2026-07-28"));
    h.push_back(nv("mcp-method", "subscriptions/listen"));
    if (!o_.bearer.empty()) {
      st->h2auth = "Bearer " + o_.bearer;
      h.push_back(nv("authorization", st->h2auth));
    }
    h.push_back(nv("content-length", len));
    body.source.ptr = st;
    body.read_callback = &Loadgen::H2ReadBody;
  } else {
    h.push_back(nv("accept", "text/event-stream"));
    h.push_back(nv("cache-control", "no-cache"));
  }
  int32_t sid = nghttp2_submit_request(c->sess, nullptr, h.data(), h.size(), post ? &body : nullptr, st);
  if (sid < 0) return FailAttempt(st, std::string("nghttp2_submit_request: ") + nghttp2_strerror(sid));
  st->h2_sid = sid;
  st->h2_status = 0;
  st->h2_sse = false;
  st->state = SState::AwaitHead;
  H2MarkDirty(c);
}

ssize_t Loadgen::H2ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                            nghttp2_data_source* src, void*) {
  auto* st = static_cast<Stream*>(src->ptr);
  size_t n = std::min(len, st->h2body.size() - std::min(st->h2off, st->h2body.size()));
  std::memcpy(buf, st->h2body.data() + st->h2off, n);
  st->h2off += n;
  if (st->h2off >= st->h2body.size()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    std::string().swap(st->h2body);
    st->h2off = 0;
  }
  return ssize_t(n);
}

void Loadgen::H2Head(Stream* st) {
  if (st->h2_status != 200 || !st->h2_sse)
    return FailAttempt(st, "HTTP/2 " + std::to_string(st->h2_status) + (st->h2_sse ? "" : ", not text/event-stream"));
  st->lines.Reset(LineFramer::Mode::Sse);
  if (o_.kind == Kind::Nchan) {
    Confirm(st);
  } else {
    st->state = SState::AwaitAck;
  }
}

int Loadgen::H2OnHeader(nghttp2_session* s, const nghttp2_frame* f, const uint8_t* name, size_t namelen,
                        const uint8_t* value, size_t valuelen, uint8_t, void*) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_RESPONSE) return 0;
  auto* st = static_cast<Stream*>(nghttp2_session_get_stream_user_data(s, f->hd.stream_id));
  if (!st || st->h2_sid != f->hd.stream_id) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") {
    st->h2_status = uint16_t(std::atoi(std::string(v).c_str()));
  } else if (n == "content-type") {
    st->h2_sse = v.starts_with("text/event-stream");
  }
  return 0;
}

int Loadgen::H2OnFrameRecv(nghttp2_session* s, const nghttp2_frame* f, void* user) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_RESPONSE) return 0;
  auto* st = static_cast<Stream*>(nghttp2_session_get_stream_user_data(s, f->hd.stream_id));
  if (!st || st->h2_sid != f->hd.stream_id || st->state != SState::AwaitHead) return 0;
  static_cast<H2Conn*>(user)->lg->H2Head(st);
  return 0;
}

int Loadgen::H2OnData(nghttp2_session* s, uint8_t, int32_t sid, const uint8_t* data, size_t len, void* user) {
  auto* st = static_cast<Stream*>(nghttp2_session_get_stream_user_data(s, sid));
  if (!st || st->h2_sid != sid || st->state == SState::AwaitHead) return 0;
  Loadgen* lg = static_cast<H2Conn*>(user)->lg;
  StreamSink sink{lg, st, lg->h2_now_};
  st->lines.Feed(reinterpret_cast<const char*>(data), len, sink);
  return 0;
}

int Loadgen::H2OnStreamClose(nghttp2_session* s, int32_t sid, uint32_t code, void* user) {
  auto* st = static_cast<Stream*>(nghttp2_session_get_stream_user_data(s, sid));
  if (!st || st->h2_sid != sid) return 0;
  st->h2_sid = 0;  // closed: nothing to reset
  static_cast<H2Conn*>(user)->lg->OnEnd(
      st, code ? std::string("HTTP/2 stream reset: ") + nghttp2_http2_strerror(code) : "the server ended the stream");
  return 0;
}

// The stream leaves its connection: reset when open, dropped from the waiting list when not yet.
void Loadgen::H2Detach(Stream* st) {
  H2Conn* c = ConnOf(st);
  if (st->h2_sid && c->sess) {
    nghttp2_session_set_stream_user_data(c->sess, st->h2_sid, nullptr);
    nghttp2_submit_rst_stream(c->sess, NGHTTP2_FLAG_NONE, st->h2_sid, NGHTTP2_CANCEL);
    H2MarkDirty(c);
  }
  st->h2_sid = 0;
  std::erase(c->waiting, st->idx);
  std::string().swap(st->h2body);
}

void Loadgen::H2Down(H2Conn* c, const std::string& why) {
  if (c->state == H2Conn::St::Idle || c->state == H2Conn::St::Closing) return;
  ++h2_conn_failures_;
  bool had_handle = true;
  c->state = H2Conn::St::Closing;
  std::vector<uint32_t> w;
  w.swap(c->waiting);
  uint32_t k = uint32_t(o_.streams_per_conn), first = c->idx * k, last = std::min(n_, first + k);
  for (uint32_t i = first; i < last; ++i) {
    Stream* st = &streams_[i];
    if (st->h2_sid || st->state == SState::Connecting || st->state == SState::AwaitHead) {
      st->h2_sid = 0;
      OnEnd(st, "HTTP/2 connection " + std::to_string(c->idx) + ": " + why);
    }
  }
  if (c->sess) nghttp2_session_del(c->sess);
  c->sess = nullptr;
  c->tls.reset();
  if (had_handle) uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), &Loadgen::OnH2Closed);
}

void Loadgen::OnH2Closed(uv_handle_t* h) {
  auto* c = static_cast<H2Conn*>(h->data);
  c->state = H2Conn::St::Idle;
  c->dirty = false;
  Loadgen* self = c->lg;
  if (!c->waiting.empty() && !self->fatal_ && !self->quit_) self->H2Connect(c);
}

void Loadgen::OnH2Read(uv_stream_t* s, ssize_t nread, const uv_buf_t* buf) {
  auto* c = static_cast<H2Conn*>(s->data);
  Loadgen* self = c->lg;
  if (nread == 0 || c->state == H2Conn::St::Closing || c->state == H2Conn::St::Idle) return;
  if (nread < 0) {
    return self->H2Down(c, nread == UV_EOF ? "closed by the server" : std::string("read: ") + uv_strerror(int(nread)));
  }
  self->h2_now_ = NowNs();
  const char* p = buf->base;
  size_t n = size_t(nread);
  bool eof = false;
  if (c->tls) {
    self->plain_.clear();
    self->cipher_.clear();
    std::string err;
    bool was_done = c->tls->handshake_done();
    bool ok = c->tls->Feed(p, n, &self->plain_, &self->cipher_, &eof, &err);
    if (!self->cipher_.empty()) WriteOwned(s, self->cipher_);
    if (!ok) return self->H2Down(c, "TLS: " + err);
    if (!was_done && c->tls->handshake_done()) {
      std::string alpn = c->tls->Alpn();
      if (alpn != "h2") return self->H2Down(c, "ALPN: the server chose '" + alpn + "', not h2");
      if (!self->H2Start(c)) return;
    }
    p = self->plain_.data();
    n = self->plain_.size();
  }
  if (n > 0 && c->sess) {
    ssize_t r = nghttp2_session_mem_recv(c->sess, reinterpret_cast<const uint8_t*>(p), n);
    if (r < 0) return self->H2Down(c, std::string("nghttp2: ") + nghttp2_strerror(int(r)));
  }
  if (eof) return self->H2Down(c, "TLS close_notify from the server");
  if (c->sess && !nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess))
    return self->H2Down(c, "session over (GOAWAY)");
  self->H2MarkDirty(c);
}

void Loadgen::H2MarkDirty(H2Conn* c) {
  if (c->dirty) return;
  c->dirty = true;
  h2_dirty_.push_back(c);
  if (!h2_prepare_on_) {
    h2_prepare_on_ = true;
    uv_prepare_start(&h2_prepare_, &Loadgen::OnH2Prepare);
  }
}

void Loadgen::OnH2Prepare(uv_prepare_t* p) {
  auto* self = static_cast<Loadgen*>(p->data);
  // Sending may make more to send (a stream closed by a reset sent, reopened at once): this
  // handle, restarted from its own callback, would only run after the loop has blocked.
  for (int round = 0; round < 8 && !self->h2_dirty_.empty(); ++round) {
    std::vector<H2Conn*> d;
    d.swap(self->h2_dirty_);
    for (H2Conn* c : d) {
      c->dirty = false;
      if (c->state == H2Conn::St::Ready) self->H2Send(c);
    }
  }
  if (self->h2_dirty_.empty()) {
    self->h2_prepare_on_ = false;
    uv_prepare_stop(p);
  }
}

void Loadgen::H2Send(H2Conn* c) {
  std::string out, err;
  for (;;) {
    const uint8_t* d = nullptr;
    ssize_t n = nghttp2_session_mem_send(c->sess, &d);
    if (n < 0) return H2Down(c, std::string("nghttp2: ") + nghttp2_strerror(int(n)));
    if (n == 0) break;
    if (c->tls) {
      if (!c->tls->Write(reinterpret_cast<const char*>(d), size_t(n), &out, &err)) return H2Down(c, "TLS: " + err);
    } else {
      out.append(reinterpret_cast<const char*>(d), size_t(n));
    }
  }
  if (out.empty()) return;
  int rc = WriteOwned(reinterpret_cast<uv_stream_t*>(&c->tcp), std::move(out));
  if (rc != 0) H2Down(c, std::string("write: ") + uv_strerror(rc));
}

// ---------------------------------------------------------------- publishing

void Loadgen::EnsureSeq(uint64_t i) {
  if (i >= count_.size()) {
    size_t n = std::max<size_t>(i + 1, count_.size() * 2);
    count_.resize(n, 0);
    send_ns_.resize(n, 0);
    last_ns_.resize(n, 0);
  }
}

std::string Loadgen::PublishRequest(uint64_t seq, uint64_t ts) const {
  std::string body = R"({"method":"notifications/resources/updated","params":{"uri":")" + JsonEscape(o_.uri) +
                     R"(","_meta":{"bench/seq":)" + std::to_string(seq) + R"(,"bench/ts_ns":)" + std::to_string(ts);
  if (o_.pad_bytes > 0) body += R"(,"bench/pad":")" + std::string(size_t(o_.pad_bytes), 'x') + "\"";
  body += "}}}";
  return "POST " + pub_.path + " HTTP/1.1\r\nHost: " + pub_.hostport +
         "\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

void Loadgen::Publish(uint64_t i) {
  EnsureSeq(i);
  ++published_;
  Job j;
  j.build = [this, i] {
    // A resend (the server closed a keep-alive connection with this publish pipelined on
    // it) keeps the first send time: latency counts from when the publish was issued.
    if (send_ns_[i] == 0) send_ns_[i] = NowNs();
    return PublishRequest(run_offset_ + i, send_ns_[i]);
  };
  j.done = [this, i](Reply& r) {
    ++acked_;
    if (r.status / 100 != 2) {
      ++publish_errors_;
      SetFatal("publish seq index " + std::to_string(i) + ": " +
               (r.status ? "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error));
    }
  };
  publishers_->Submit(std::move(j));
}

// ---------------------------------------------------------------- phases

void Loadgen::SetFatal(const std::string& msg) {
  if (!fatal_) {
    fatal_ = true;
    fatal_msg_ = msg;
  }
}

bool Loadgen::RunUntil(const std::function<bool()>& done, uint64_t deadline, const std::string& what,
                       bool fatal_on_timeout) {
  deadline = std::min(deadline, global_deadline_);
  uint64_t armed = 0;
  for (;;) {
    if (done()) return true;
    if (fatal_) return false;
    uint64_t now = NowNs();
    if (now >= deadline) {
      if (deadline == global_deadline_) {
        SetFatal("--timeout-s " + Num(o_.timeout_s, 0) + " reached during " + what);
      } else if (fatal_on_timeout) {
        SetFatal(what + ": timed out");
      }
      return false;
    }
    if (armed != deadline || !uv_is_active(reinterpret_cast<uv_handle_t*>(&wake_))) {
      armed = deadline;
      uv_timer_start(&wake_, [](uv_timer_t*) {}, (deadline - now + kMs - 1) / kMs, 0);
    }
    uv_run(&loop_, UV_RUN_ONCE);
  }
}

void Loadgen::ResetPhase(uint64_t base) {
  phase_base_ = base;
  for (uint32_t i = 0; i < n_; ++i) streams_[i].last_seq = base - 1;
  received_ = 0;
  coalesced_ = 0;
  at_final_ = 0;
  received_slow_ = 0;
  coalesced_slow_ = 0;
  at_final_slow_ = 0;
  slow_closed_ = 0;
  phase_last_ns_ = 0;
}

bool Loadgen::ConnectAll() {
  uint64_t t0 = NowNs();
  for (uint32_t i = 0; i < n_; ++i) {
    streams_[i].state = SState::Queued;
    queue_.push_back(i);
  }
  PumpConnects();
  bool ok = RunUntil([this] { return open_ == n_; }, global_deadline_, "connect");
  if (ok) connect_s_ = double(NowNs() - t0) / kSec;
  return ok;
}

bool Loadgen::RunBurst() {
  uint64_t rounds = uint64_t(std::max(1, o_.rounds));
  ResetPhase(next_seq_);
  ProcSample c0 = Sample();
  ProcSample cw;  // after the first round
  uint64_t self0 = SelfCpuUs();
  double total_s = 0;
  for (uint64_t r = 0; r < rounds; ++r) {
    uint64_t i = next_seq_++;
    Publish(i);
    bool ok = RunUntil([&] { return count_[i] >= n_ && acked_ == published_; }, NowNs() + 30 * kSec,
                       "burst round " + std::to_string(r + 1));
    if (!ok) {
      if (fatal_msg_.find("timed out") != std::string::npos) {
        fatal_msg_ += ": " + std::to_string(count_[i]) + " of " + std::to_string(n_) + " streams received it";
      }
      return false;
    }
    double ms = double(last_ns_[i] - send_ns_[i]) / kMs;
    rounds_ms_.push_back(ms);
    total_s += ms / 1000;
    if (r == 0) cw = Sample();
  }
  ProcSample c1 = Sample();
  self_cpu_us_ = SelfCpuUs() - self0;
  phase_deliveries_ = uint64_t(n_) * rounds;
  if (c0.ok && c1.ok) {
    cpu_ticks_ = c1.cpu_ticks - c0.cpu_ticks;
    cpu_measured_ = true;
  }
  if (rounds >= 2 && cw.ok && c1.ok) {
    warm_cpu_ticks_ = c1.cpu_ticks - cw.cpu_ticks;
    warm_deliveries_ = uint64_t(n_) * (rounds - 1);
  }
  burst_dps_ = total_s > 0 ? double(phase_deliveries_) / total_s : 0;
  return true;
}

void Loadgen::OnTick(uv_timer_t* t) {
  auto* self = static_cast<Loadgen*>(t->data);
  uint64_t el = NowNs() - self->sus_start_;
  uint64_t due = std::min<uint64_t>(self->sus_total_, uint64_t(double(el) / kSec * self->o_.rate) + 1);
  while (self->sus_done_ < due) self->Publish(self->sus_base_ + self->sus_done_++);
  if (self->sus_done_ >= self->sus_total_) uv_timer_stop(t);
}

bool Loadgen::RunSustained() {
  sus_.ran = true;
  sus_total_ = std::max<uint64_t>(1, uint64_t(std::llround(o_.rate * o_.duration)));
  sus_base_ = next_seq_;
  next_seq_ += sus_total_;
  EnsureSeq(next_seq_);
  ResetPhase(sus_base_);
  final_seq_ = sus_base_ + sus_total_ - 1;
  hist_.Reset();
  hist_fast_.Reset();
  hist_slow_.Reset();
  hist_on_ = true;
  sustained_phase_ = true;
  if (slow_n_) {
    slow_tick_last_ = NowNs();
    uv_timer_start(&slow_tick_, &Loadgen::OnSlowTick, kSlowTickMs, kSlowTickMs);
  }
  ProcSample c0 = Sample();
  uint64_t self0 = SelfCpuUs();
  sus_done_ = 0;
  sus_start_ = NowNs();
  uv_timer_start(&tick_, &Loadgen::OnTick, 0, 1);
  bool ok = RunUntil([this] { return sus_done_ >= sus_total_; }, sus_start_ + uint64_t((o_.duration + 10) * kSec),
                     "sustained publishing");
  uv_timer_stop(&tick_);
  uint64_t t_published = NowNs();
  if (ok) {
    // Drain: every stream that is still open must end up with the final publish. Bounded:
    // stop when deliveries stall for 5 s, and stay 2 s inside --timeout-s for the report.
    // Slow readers are not waited for: what the server handed to the kernel for them can
    // take minutes to read at their rate (reported as "behind", not lost).
    uint64_t drain_deadline = global_deadline_ > 2 * kSec + t_published ? global_deadline_ - 2 * kSec : t_published;
    uint64_t seen = received_, progress_at = NowNs();
    for (;;) {
      bool done = RunUntil([this] { return at_final_ - at_final_slow_ >= open_ - open_slow_ && acked_ == published_; },
                           std::min(drain_deadline, NowNs() + kSec), "sustained drain", /*fatal_on_timeout=*/false);
      uint64_t now = NowNs();
      if (received_ != seen) {
        seen = received_;
        progress_at = now;
      }
      if (done || fatal_ || now >= drain_deadline || now - progress_at >= 5 * kSec) break;
    }
  }
  sus_.drain_s = double(NowNs() - t_published) / kSec;
  hist_on_ = false;
  sustained_phase_ = false;
  uv_timer_stop(&slow_tick_);
  ProcSample c1 = Sample();
  self_cpu_us_ = SelfCpuUs() - self0;
  // Accounting covers what was published (all of it, unless the run was cut short).
  uint64_t last = sus_base_ + sus_done_ - 1;
  uint64_t lost = 0, behind_slow = 0;
  for (uint32_t s = 0; s < n_; ++s)
    (streams_[s].slow ? behind_slow : lost) += last - std::min(last, streams_[s].last_seq);
  sus_.expected = sus_done_ * n_;
  sus_.received = received_;
  sus_.coalesced = coalesced_;
  sus_.lost = lost;  // fast streams only: a slow reader still behind is not a loss
  if (slow_n_) {
    auto fill = [](auto& c, const Histogram& h) {
      c.p50 = double(h.Quantile(0.50)) / kMs;
      c.p99 = double(h.Quantile(0.99)) / kMs;
      c.p999 = double(h.Quantile(0.999)) / kMs;
      c.max = double(h.max()) / kMs;
    };
    sus_.fast.streams = n_ - slow_n_;
    sus_.fast.expected = sus_done_ * sus_.fast.streams;
    sus_.fast.received = received_ - received_slow_;
    sus_.fast.coalesced = coalesced_ - coalesced_slow_;
    sus_.fast.lost = lost;
    sus_.fast.at_final = at_final_ - at_final_slow_;
    fill(sus_.fast, hist_fast_);
    sus_.slow.streams = slow_n_;
    sus_.slow.expected = sus_done_ * slow_n_;
    sus_.slow.received = received_slow_;
    sus_.slow.coalesced = coalesced_slow_;
    sus_.slow.lost = behind_slow;
    sus_.slow.at_final = at_final_slow_;
    sus_.slow.closed = slow_closed_;
    fill(sus_.slow, hist_slow_);
  }
  uint64_t first_send = send_ns_[sus_base_];
  double span = phase_last_ns_ > first_send ? double(phase_last_ns_ - first_send) / kSec : 0;
  sus_.dps = span > 0 ? double(received_) / span : 0;
  sus_.p50 = double(hist_.Quantile(0.50)) / kMs;
  sus_.p99 = double(hist_.Quantile(0.99)) / kMs;
  sus_.p999 = double(hist_.Quantile(0.999)) / kMs;
  sus_.max = double(hist_.max()) / kMs;
  double planned_last = double(sus_start_) + double(sus_total_ - 1) / o_.rate * kSec;
  if (sus_done_ == sus_total_ && send_ns_[final_seq_] > 0)
    sus_.publish_lag_ms = (double(send_ns_[final_seq_]) - planned_last) / kMs;
  phase_deliveries_ = received_;
  if (c0.ok && c1.ok) {
    cpu_ticks_ = c1.cpu_ticks - c0.cpu_ticks;
    cpu_measured_ = true;
  }
  return ok && !fatal_;
}

bool Loadgen::RunStorm() {
  storm_.ran = true;
  ProcSample c0 = Sample();
  uint64_t self0 = SelfCpuUs();
  uint64_t i = next_seq_++;
  EnsureSeq(i);
  ResetPhase(i);
  uint64_t t0 = NowNs();
  for (uint32_t s = 0; s < n_; ++s) CloseStream(&streams_[s], AfterClose::Reconnect);
  bool ok = RunUntil([this] { return open_ == n_; }, global_deadline_, "storm reconnect");
  if (ok) {
    storm_.confirm_s = double(NowNs() - t0) / kSec;
    Publish(i);
    ok = RunUntil([&] { return count_[i] >= n_ && acked_ == published_; }, NowNs() + 30 * kSec, "storm publish");
    if (ok) storm_.reconnect_s = double(last_ns_[i] - t0) / kSec;
  }
  storm_.all_received = ok;
  ProcSample c1 = Sample();
  self_cpu_us_ = SelfCpuUs() - self0;
  phase_deliveries_ = count_[i];
  if (c0.ok && c1.ok) {
    cpu_ticks_ = c1.cpu_ticks - c0.cpu_ticks;
    cpu_measured_ = true;
  }
  return ok;
}

// ---------------------------------------------------------------- several processes

namespace {
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  for (std::string t; in >> t;) w.push_back(t);
  return w;
}
}  // namespace

// Receive: open the streams, say READY, then count whatever arrives, phase by phase:
//   phase NAME [perseq]  -> "OK phase NAME"     (resets the tally; perseq keeps per-seq stats)
//   report               -> "REPORT {tally}"    (the phase so far; see DeliveryTally::ToJson)
//   quit (or stdin's end)-> the final report, exit
bool Loadgen::RunReceive() {
  if (!ConnectAll()) return false;
  rss1_ = Sample();
  tally_->BeginPhase("connect", false);
  commands_ = std::make_unique<StdinCommands>(&loop_, [this](std::string line) {
    auto w = Words(line);
    if (w.empty()) return;
    if (w[0] == "quit") {
      quit_ = true;
    } else if (w[0] == "phase" && w.size() >= 2) {
      tally_->BeginPhase(w[1], w.size() >= 3 && w[2] == "perseq");
      StdinCommands::Emit("OK phase " + w[1]);
    } else if (w[0] == "report") {
      std::string t = tally_->ToJson();
      t.pop_back();  // the tally's object, plus what only the process knows
      StdinCommands::Emit("REPORT " + t + ",\"open_streams\":" + std::to_string(open_) +
                          ",\"pid\":" + std::to_string(getpid()) + "}");
    } else {
      StdinCommands::Emit("ERR unknown command: " + line);
    }
  });
  if (!commands_->Start()) {
    SetFatal("cannot read commands from stdin");
    return false;
  }
  StdinCommands::Emit("READY {\"streams\":" + std::to_string(n_) + ",\"connect_s\":" + Num(connect_s_) + ",\"pid\":" +
                      std::to_string(getpid()) + ",\"index_base\":" + std::to_string(o_.index_base) + "}");
  bool ok = RunUntil([this] { return quit_; }, global_deadline_, "receive (waiting for commands)");
  final_section_ = "\"receive\":" + tally_->ToJson();
  return ok;
}

// Publish: no streams; publishes over every --publish-url on command:
//   one VIA URI                          -> "SENT {seq, ts_ns, status, error}" when answered
//   run RATE COUNT VIA shared URI        -> "DONE {run stats}" when every publish was answered
//   run RATE COUNT VIA each BASE         -> the same, publish i of the run to BASE<i> (distinct URIs:
//                                           never coalesced by the server, unlike one URI)
//   run RATE COUNT VIA own BASE FIRST N  -> the same, each publish to BASE<random in FIRST..FIRST+N-1>
//   quit
// VIA: an index into --publish-url's list, "random" or "rotate". A non-2xx answer is reported,
// not fatal (an outage may refuse publishes: that is a result).
bool Loadgen::RunPublish() {
  commands_ = std::make_unique<StdinCommands>(&loop_, [this](std::string line) { OnPublishCommand(line); });
  if (!commands_->Start()) {
    SetFatal("cannot read commands from stdin");
    return false;
  }
  StdinCommands::Emit("READY {\"urls\":" + std::to_string(pub_eps_.size()) + ",\"seq_base\":" +
                      std::to_string(multi_->seq_base()) + ",\"pid\":" + std::to_string(getpid()) + "}");
  return RunUntil([this] { return quit_; }, global_deadline_, "publish (waiting for commands)");
}

void Loadgen::OnPublishCommand(const std::string& line) {
  auto w = Words(line);
  if (w.empty()) return;
  auto via_of = [&](const std::string& v, int* out) {
    if (v == "random") *out = MultiPublisher::kViaRandom;
    else if (v == "rotate") *out = MultiPublisher::kViaRotate;
    else {
      char* end = nullptr;
      long k = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || k < 0 || size_t(k) >= pub_eps_.size()) return false;
      *out = int(k);
    }
    return true;
  };
  if (w[0] == "quit") {
    quit_ = true;
  } else if (w[0] == "one" && w.size() == 3) {
    int via = 0;
    if (!via_of(w[1], &via) || via < 0) return StdinCommands::Emit("ERR one: VIA must be an index: " + line);
    multi_->PublishOne(size_t(via), w[2], [](uint64_t seq, uint64_t ts, int status, const std::string& e) {
      StdinCommands::Emit("SENT {\"seq\":" + std::to_string(seq) + ",\"ts_ns\":" + std::to_string(ts) + ",\"status\":" +
                          std::to_string(status) + ",\"error\":\"" + JsonEscape(e) + "\"}");
    });
  } else if (w[0] == "run" && w.size() >= 6 && !multi_->running()) {
    MultiPublisher::RunSpec spec;
    spec.rate = std::atof(w[1].c_str());
    spec.count = std::strtoull(w[2].c_str(), nullptr, 10);
    bool ok = spec.rate > 0 && via_of(w[3], &spec.via);
    if (w[4] == "shared" && w.size() == 6) {
      spec.uri = w[5];
    } else if (w[4] == "each" && w.size() == 6) {
      spec.each = true;
      spec.uri = w[5];
    } else if (w[4] == "own" && w.size() == 8) {
      spec.own = true;
      spec.own_base = w[5];
      spec.own_first = std::strtoull(w[6].c_str(), nullptr, 10);
      spec.own_n = std::strtoull(w[7].c_str(), nullptr, 10);
      ok = ok && spec.own_n > 0;
    } else {
      ok = false;
    }
    if (!ok) return StdinCommands::Emit("ERR run: RATE COUNT VIA shared URI | each BASE | own BASE FIRST N: " + line);
    spec.seed = multi_->seq_base() ^ std::hash<std::string>{}(line);
    multi_->StartRun(spec, [this, rate = spec.rate] {
      const auto& r = multi_->run_stats();
      std::string per;
      for (size_t k = 0; k < r.per_endpoint.size(); ++k) per += (k ? "," : "") + std::to_string(r.per_endpoint[k]);
      StdinCommands::Emit(
          "DONE {\"rate\":" + Num(rate) + ",\"published\":" + std::to_string(r.published) +
          ",\"acked\":" + std::to_string(r.acked) + ",\"errors\":" + std::to_string(r.errors) +
          ",\"first_seq\":" + std::to_string(r.first_seq) + ",\"last_seq\":" + std::to_string(r.last_seq) +
          ",\"first_ts_ns\":" + std::to_string(r.first_ts_ns) + ",\"last_ts_ns\":" + std::to_string(r.last_ts_ns) +
          ",\"publish_lag_ms\":" + Num(r.publish_lag_ms) + ",\"per_url\":[" + per + "],\"first_error\":\"" +
          JsonEscape(r.first_error) + "\"}");
    });
  } else {
    StdinCommands::Emit("ERR unknown or malformed command (or a run in progress): " + line);
  }
}

// Targeted, in one process (docs/performance.md "Targeted publishes"): N streams, each with its own URI (and
// --extra-uris never-published ones); publishes each addressed to one random stream's URI,
// spread over the --publish-url's (P connections, at most --window in flight on each): --rate
// publishes/s for --duration s, or --rate max: as fast as the server answers, for --duration s.
// Nothing may be lost, duplicated or misdelivered.
// Before the measured phase: one publish to every stream, at the maximum rate over the same
// connections, re-sent to the streams that have not received theirs after a pause, until every
// stream got one (bounded: 120 s; the SDK hub at 10,000 streams takes ~30 s). A server may confirm a stream before its
// subscriptions are in place everywhere: nginx+nchan answers a multiplexed subscriber's headers while the channels
// owned by the other worker are still being subscribed over IPC, and publishes in the first
// milliseconds can miss them (seen at 10,000 streams x 11 channels: 3 of 48,000 publishes lost,
// all written within 2.5 ms of the start). The warm-up proves every stream is reachable, so the
// measured phase counts losses, not start-up. The re-sends are reported (warmup_resent).
bool Loadgen::WarmUpTargeted() {
  tally_->BeginPhase("warmup", false);
  uint64_t t0 = NowNs(), deadline = t0 + 120 * kSec;
  std::vector<uint64_t> todo(n_);
  for (uint32_t i = 0; i < n_; ++i) todo[i] = o_.index_base + i;
  for (int pass = 0; !todo.empty(); ++pass) {
    if (pass > 0) tgt_.warmup_resent += todo.size();
    MultiPublisher::RunSpec spec;
    spec.rate = 0;  // as fast as the server answers
    spec.count = todo.size();
    spec.duration_ns = 120 * kSec;
    spec.via = MultiPublisher::kViaRandom;
    spec.own = true;
    spec.own_base = OwnBase();
    spec.own_first = o_.index_base;
    spec.own_n = n_;
    spec.indices = todo;
    spec.path_per_target = o_.kind == Kind::Nchan;
    spec.seed = multi_->seq_base() + uint64_t(pass);
    bool done = false;
    multi_->StartRun(spec, [&done] { done = true; });
    if (!RunUntil([&] { return done; }, deadline, "targeted warm-up")) return false;
    if (multi_->run_stats().errors) {
      SetFatal("targeted warm-up: " + std::to_string(multi_->run_stats().errors) + " publishes refused, first: " +
               multi_->run_stats().first_error);
      return false;
    }
    auto missing = [&] {
      std::vector<uint64_t> m;
      for (uint64_t g : todo) {
        if (!tally_->ReceivedAny(uint32_t(g - o_.index_base))) m.push_back(g);
      }
      return m;
    };
    // Wait for the deliveries (up to 1 s), then re-send to the streams still without one.
    // (received() < N means some stream still has none: the O(N) scan only runs after that)
    RunUntil([&] { return tally_->received() >= n_ && missing().empty(); }, std::min(deadline, NowNs() + kSec),
             "targeted warm-up deliveries",
             /*fatal_on_timeout=*/false);
    todo = missing();
    if (!todo.empty() && NowNs() >= deadline) {
      SetFatal("targeted warm-up: " + std::to_string(todo.size()) + " streams got no publish within 120 s");
      return false;
    }
  }
  tgt_.warmup_s = double(NowNs() - t0) / kSec;
  return !fatal_;
}

bool Loadgen::RunTargeted() {
  if (!WarmUpTargeted()) return false;
  // A warm-up delivery that arrives late (a re-sent stream got both) is stale, not received.
  tally_->BeginPhase("targeted", false, multi_->next_seq());
  ProcSample c0 = Sample();
  uint64_t self0 = SelfCpuUs();
  MultiPublisher::RunSpec spec;
  spec.rate = o_.rate_max ? 0 : o_.rate;
  spec.count = o_.rate_max ? 0 : std::max<uint64_t>(1, uint64_t(std::llround(o_.rate * o_.duration)));
  spec.duration_ns = uint64_t(o_.duration * kSec);
  spec.via = MultiPublisher::kViaRandom;
  spec.own = true;
  spec.own_base = OwnBase();
  spec.own_first = o_.index_base;
  spec.own_n = n_;
  spec.path_per_target = o_.kind == Kind::Nchan;  // one publisher location per channel
  spec.batch = o_.batch;
  spec.keep_sent = true;                          // to name the lost ones, if any
  spec.seed = multi_->seq_base();
  bool done = false;
  uint64_t t0 = NowNs();
  multi_->StartRun(spec, [&done] { done = true; });
  bool ok = RunUntil([&] { return done; }, t0 + uint64_t((o_.duration + 30) * kSec), "targeted publishing");
  // Drain: until every publish arrived, or 5 s without progress.
  uint64_t seen = tally_->received(), progress_at = NowNs();
  while (ok && tally_->received() + tally_->violations() < multi_->run_stats().published) {
    RunUntil([&] { return tally_->received() + tally_->violations() >= multi_->run_stats().published; },
             NowNs() + 200 * kMs, "targeted drain", /*fatal_on_timeout=*/false);
    if (tally_->received() != seen) {
      seen = tally_->received();
      progress_at = NowNs();
    }
    if (fatal_ || NowNs() - progress_at >= 5 * kSec) break;
  }
  ProcSample c1 = Sample();
  self_cpu_us_ = SelfCpuUs() - self0;
  phase_deliveries_ = tally_->received();
  if (c0.ok && c1.ok) {
    cpu_ticks_ = c1.cpu_ticks - c0.cpu_ticks;
    cpu_measured_ = true;
  }
  const auto& r = multi_->run_stats();
  if (c1.ok && rss1_.ok) tgt_.rss_growth_kib = double(c1.rss_kib) - double(rss1_.rss_kib);
  if (c0.ok && c1.ok && r.published)
    tgt_.ctx_switches_per_publish = double(c1.ctx_switches - c0.ctx_switches) / double(r.published);
  uint64_t lost = r.published > tally_->received() ? r.published - tally_->received() : 0;
  if (r.errors) SetFatal("targeted: " + std::to_string(r.errors) + " publishes refused, first: " + r.first_error);
  // Publishes/s: answered publishes over the time from the start of the run to the last answer,
  // at least --duration (a fixed rate's last publish is due 1/rate before the end: without
  // that floor a run that kept up would report slightly more than its rate).
  double span_s = std::max(o_.duration, r.last_ack_ns > t0 ? double(r.last_ack_ns - t0) / kSec : 0.0);
  tgt_.pps = span_s > 0 ? double(r.acked) / span_s : 0;
  tgt_.cpu_us_per_publish = cpu_measured_ && r.published ? TicksToMicros(cpu_ticks_) / double(r.published) : NAN;
  tgt_.subscriptions = uint64_t(n_) * SubscriptionsPerStream();
  tgt_.rss_bytes_per_sub = rss0_.ok && rss1_.ok && tgt_.subscriptions
                               ? (double(rss1_.rss_kib) - double(rss0_.rss_kib)) * 1024 / double(tgt_.subscriptions)
                               : NAN;
  tgt_.lost = lost;
  // The first lost publishes (by seq): when they were written, relative to the first publish,
  // and to which stream. A loss only at the start points at subscriptions not yet in place
  // when the server confirmed the stream; a loss anywhere is a loss.
  std::string lost_list;
  if (lost) {
    int shown = 0;
    for (const auto& p : r.sent) {
      uint32_t stream = uint32_t(p.index - o_.index_base);
      if (tally_->Received(stream, p.seq)) continue;
      if (shown++ == 10) break;
      lost_list += std::string(lost_list.empty() ? "" : ",") + "[" + std::to_string(p.seq) + "," +
                   Num(double(p.ts_ns > t0 ? p.ts_ns - t0 : 0) / kMs, 1) + "," + std::to_string(stream) + "]";
    }
  }
  const Histogram& h = tally_->latency();
  std::string per;
  for (size_t k = 0; k < r.per_endpoint.size(); ++k) per += (k ? "," : "") + std::to_string(r.per_endpoint[k]);
  final_section_ =
      "\"targeted\":{\"rate\":" + (o_.rate_max ? std::string("\"max\"") : Num(o_.rate)) +
      ",\"duration_s\":" + Num(o_.duration) + ",\"publishers\":" + std::to_string(pub_eps_.size()) +
      ",\"window\":" + std::to_string(o_.pub_window) + ",\"batch\":" + std::to_string(o_.batch) +
      ",\"extra_uris\":" + std::to_string(o_.extra_uris) + ",\"subscriptions\":" + std::to_string(tgt_.subscriptions) +
      ",\"published\":" + std::to_string(r.published) + ",\"acked\":" + std::to_string(r.acked) +
      ",\"unsent\":" + std::to_string(r.unsent) + ",\"publish_errors\":" + std::to_string(r.errors) +
      ",\"publishes_per_s\":" + Num(tgt_.pps, 1) + ",\"cpu_us_per_publish\":" + Num(tgt_.cpu_us_per_publish) +
      ",\"ctx_switches_per_publish\":" + Num(tgt_.ctx_switches_per_publish) +
      ",\"rss_bytes_per_subscription\":" + Num(tgt_.rss_bytes_per_sub, 1) +
      ",\"rss_growth_kib\":" + Num(tgt_.rss_growth_kib, 0) + ",\"task_listens\":" +
      (o_.task_listens ? "true" : "false") + ",\"params_bytes\":" + std::to_string(o_.params_bytes) +
      ",\"lost\":" + std::to_string(lost) +
      ",\"duplicates\":" + std::to_string(tally_->duplicates()) +
      ",\"misdelivered\":" + std::to_string(tally_->misdelivered()) +
      ",\"latency_ms\":{\"p50\":" + Num(double(h.Quantile(0.50)) / kMs) +
      ",\"p99\":" + Num(double(h.Quantile(0.99)) / kMs) + ",\"p999\":" + Num(double(h.Quantile(0.999)) / kMs) +
      ",\"max\":" + Num(double(h.max()) / kMs) + "},\"publish_lag_ms\":" + Num(r.publish_lag_ms) + ",\"per_url\":[" +
      per + "],\"lost_first\":[" + lost_list + "],\"warmup_s\":" + Num(tgt_.warmup_s) +
      ",\"warmup_resent\":" + std::to_string(tgt_.warmup_resent) + ",\"tally\":" + tally_->ToJson() + "}";
  return ok && !fatal_ && lost == 0 && tally_->violations() == 0;
}

// ---------------------------------------------------------------- server metrics

// GET /metrics (Prometheus text) and pick mcpfan's counters; bounded to 3 s, never fatal.
Loadgen::Metrics Loadgen::FetchMetrics() {
  if (!metrics_on_ || fatal_) return {};
  // Shared with the callback: an answer arriving after the 3 s bound must not touch this frame.
  auto st = std::make_shared<std::pair<bool, Metrics>>();
  Job j;
  j.build = [this] {
    return "GET " + metrics_.path + " HTTP/1.1\r\nHost: " + metrics_.hostport + "\r\nAccept: text/plain\r\n\r\n";
  };
  j.done = [st](Reply& r) {
    st->first = true;
    Metrics& m = st->second;
    if (r.status != 200) return;
    auto pick = [&](std::string_view name, double* out) {
      size_t at = 0;
      while ((at = r.body.find(name, at)) != std::string::npos) {
        bool line_start = at == 0 || r.body[at - 1] == '\n';
        size_t after = at + name.size();
        if (line_start && after < r.body.size() && r.body[after] == ' ') {
          *out = std::strtod(r.body.c_str() + after + 1, nullptr);
          return true;
        }
        at = after;
      }
      return false;
    };
    m.ok = pick("mcpfan_deliveries_total", &m.deliveries);
    pick("mcpfan_published_total", &m.published);
    pick("mcpfan_coalesced_total", &m.coalesced);
    pick("mcpfan_slow_consumer_closes_total", &m.slow_closes);
    pick("mcpfan_stream_writes_total", &m.writes);
    pick("mcpfan_listen_streams_open", &m.streams);
    pick("mcpfan_task_states", &m.task_states);
    pick("mcpfan_task_states_bytes", &m.task_states_bytes);
  };
  metrics_pool_->Submit(std::move(j));
  RunUntil([&] { return st->first; }, NowNs() + 3 * kSec, "GET /metrics", /*fatal_on_timeout=*/false);
  return st->first ? st->second : Metrics{};
}

// ---------------------------------------------------------------- report

void Loadgen::Report(bool ok) {
  const char* kinds[] = {"listen", "session", "stdio", "nchan", "sdkhub"};
  const char* scenarios[] = {"burst", "sustained", "storm", "receive", "publish", "targeted"};
  std::ostringstream h;  // human summary
  h << "mcpfan-load: kind=" << kinds[int(o_.kind)] << " scenario=" << scenarios[int(o_.scenario)] << " streams=" << n_;
  if (o_.kind != Kind::Stdio)
    h << " sources=" << sources_.size() << " (127.0.0.2-127.0.0." << (sources_.size() + 1) << ")";
  h << " window=" << o_.window << " transport=" << Transport();
  if (o_.h2) h << " (" << nconns_ << " connections x " << o_.streams_per_conn << " streams)";
  h << "\n";
  if (connect_s_ >= 0)
    h << "  connect: " << n_ << " streams confirmed in " << Num(connect_s_) << " s (" << retries_
      << " retried handshakes)\n";
  std::string confirm;
  if (confirm_hist_.total()) {
    auto ms = [&](double q) { return Num(double(confirm_hist_.Quantile(q)) / kMs); };
    h << "  confirm (connect -> acknowledged, per stream): p50 " << ms(0.5) << " ms, p99 " << ms(0.99) << " ms, max "
      << Num(double(confirm_hist_.max()) / kMs) << " ms\n";
    confirm = R"(,"confirm_ms":{"p50":)" + ms(0.5) + R"(,"p99":)" + ms(0.99) + R"(,"max":)" +
              Num(double(confirm_hist_.max()) / kMs) + "}";
  }
  std::string section;
  if (o_.scenario == Scenario::Burst && !rounds_ms_.empty()) {
    double med = Median(rounds_ms_), mx = *std::max_element(rounds_ms_.begin(), rounds_ms_.end());
    h << "  burst: " << rounds_ms_.size() << " rounds, publish -> last of " << n_ << " deliveries: median " << Num(med)
      << " ms, max " << Num(mx) << " ms; " << Num(burst_dps_, 0) << " deliveries/s\n";
    section = R"("burst":{"rounds":)" + std::to_string(rounds_ms_.size()) + R"(,"last_delivery_ms":{"median":)" +
              Num(med) + R"(,"max":)" + Num(mx) + R"(},"deliveries_per_s":)" + Num(burst_dps_, 0) + R"(,"rounds_ms":[)";
    for (size_t r = 0; r < rounds_ms_.size(); ++r) section += (r ? "," : "") + Num(rounds_ms_[r]);
    section += "]}";
  } else if (o_.scenario == Scenario::Sustained && sus_.ran) {
    h << "  sustained: " << Num(o_.rate, 1) << " publishes/s for " << Num(o_.duration, 1) << " s; expected "
      << sus_.expected << ", received " << sus_.received << ", coalesced " << sus_.coalesced << ", lost " << sus_.lost
      << "; " << Num(sus_.dps, 0) << " deliveries/s\n    latency ms: p50 " << Num(sus_.p50) << ", p99 " << Num(sus_.p99)
      << ", p99.9 " << Num(sus_.p999) << ", max " << Num(sus_.max) << "; last publish sent " << Num(sus_.publish_lag_ms)
      << " ms after its schedule; drained " << Num(sus_.drain_s) << " s after it\n";
    auto human = [&](const char* name, const auto& c) {
      h << "    " << name << " streams (" << c.streams << "): received " << c.received << " of " << c.expected
        << ", coalesced " << c.coalesced << ", " << (&c == &sus_.slow ? "behind " : "lost ") << c.lost
        << ", at the final publish " << c.at_final;
      if (&c == &sus_.slow) h << ", ended by the server " << c.closed;
      h << "; latency ms p50 " << Num(c.p50) << ", p99 " << Num(c.p99) << ", p99.9 " << Num(c.p999) << ", max "
        << Num(c.max) << "\n";
    };
    if (slow_n_) {
      h << "    slow readers: " << slow_n_ << " of " << n_ << " streams read at most " << Num(o_.slow_bps, 0)
        << " B/s with SO_RCVBUF " << o_.slow_rcvbuf << "\n";
      human("fast", sus_.fast);
      human("slow", sus_.slow);
    }
    section = R"("sustained":{"rate":)" + Num(o_.rate) + R"(,"duration_s":)" + Num(o_.duration) + R"(,"expected":)" +
              std::to_string(sus_.expected) + R"(,"received":)" + std::to_string(sus_.received) + R"(,"coalesced":)" +
              std::to_string(sus_.coalesced) + R"(,"lost":)" + std::to_string(sus_.lost) + R"(,"latency_ms":{"p50":)" +
              Num(sus_.p50) + R"(,"p99":)" + Num(sus_.p99) + R"(,"p999":)" + Num(sus_.p999) + R"(,"max":)" +
              Num(sus_.max) + R"(},"deliveries_per_s":)" + Num(sus_.dps, 0) + R"(,"publish_lag_ms":)" +
              Num(sus_.publish_lag_ms) + R"(,"drain_s":)" + Num(sus_.drain_s);
    auto cls = [&](const char* name, const auto& c) {
      return std::string(",\"") + name + R"(":{"streams":)" + std::to_string(c.streams) + R"(,"expected":)" +
             std::to_string(c.expected) + R"(,"received":)" + std::to_string(c.received) + R"(,"coalesced":)" +
             std::to_string(c.coalesced) + (&c == &sus_.slow ? R"(,"behind":)" : R"(,"lost":)") +
             std::to_string(c.lost) + R"(,"at_final":)" + std::to_string(c.at_final) +
             (&c == &sus_.slow ? R"(,"closed_by_server":)" + std::to_string(c.closed) : std::string()) +
             R"(,"latency_ms":{"p50":)" + Num(c.p50) + R"(,"p99":)" + Num(c.p99) + R"(,"p999":)" + Num(c.p999) +
             R"(,"max":)" + Num(c.max) + "}}";
    };
    if (slow_n_) {
      section += R"(,"slow_readers":{"fraction":)" + Num(o_.slow_fraction, 4) + R"(,"read_bytes_per_s":)" +
                 Num(o_.slow_bps, 0) + R"(,"rcvbuf":)" + std::to_string(o_.slow_rcvbuf) + "}";
      section += cls("fast", sus_.fast);
      section += cls("slow", sus_.slow);
    }
    section += "}";
  } else if (o_.scenario == Scenario::Storm && storm_.ran) {
    h << "  storm: " << n_ << " streams dropped at once; all re-confirmed after " << Num(storm_.confirm_s)
      << " s, a publish reached all after " << Num(storm_.reconnect_s) << " s"
      << (storm_.all_received ? "" : " (NOT all received)") << "\n";
    section = R"("storm":{"reconnect_s":)" + (storm_.reconnect_s >= 0 ? Num(storm_.reconnect_s) : "null") +
              R"(,"all_received":)" + (storm_.all_received ? "true" : "false") + R"(,"confirm_s":)" +
              (storm_.confirm_s >= 0 ? Num(storm_.confirm_s) : "null") + "}";
  }
  if (!final_section_.empty()) {
    section = final_section_;
    if (tally_) {
      h << "  " << (o_.scenario == Scenario::Targeted ? "targeted" : "receive") << ": " << tally_->received()
        << " deliveries counted in the last phase, " << tally_->violations() << " duplicates or misdelivered\n";
    }
    if (o_.scenario == Scenario::Targeted) {
      const auto& r = multi_->run_stats();
      const Histogram& lat = tally_->latency();
      h << "    " << r.published << " publishes at " << (o_.rate_max ? std::string("max") : Num(o_.rate, 0) + "/s")
        << " over " << pub_eps_.size() << " connection(s), window " << o_.pub_window << ": " << Num(tgt_.pps, 0)
        << " publishes/s answered"
        << (r.unsent ? " (" + std::to_string(r.unsent) + " due but never sent: every window stayed full)"
                     : std::string())
        << "; lost " << tgt_.lost << ", duplicates " << tally_->duplicates() << ", misdelivered "
        << tally_->misdelivered() << "\n    latency ms: p50 " << Num(double(lat.Quantile(0.5)) / kMs) << ", p99 "
        << Num(double(lat.Quantile(0.99)) / kMs) << ", max " << Num(double(lat.max()) / kMs) << "; "
        << tgt_.subscriptions << " subscriptions (" << SubscriptionsPerStream() << " per stream); server CPU "
        << Num(tgt_.cpu_us_per_publish, 2) << " us/publish (" << Num(tgt_.ctx_switches_per_publish, 2)
        << " context switches), RSS " << Num(tgt_.rss_bytes_per_sub, 0) << " B/subscription, +"
        << Num(tgt_.rss_growth_kib, 0) << " KiB over the run" << (o_.task_listens ? " (task listens)" : "") << "\n";
    }
  }
  std::string server;
  if (o_.server_pid) {
    double rss = rss0_.ok && rss1_.ok && n_ ? (double(rss1_.rss_kib) - double(rss0_.rss_kib)) / n_ : NAN;
    double pss =
        rss0_.ok && rss1_.ok && n_ && rss1_.pss_kib ? (double(rss1_.pss_kib) - double(rss0_.pss_kib)) / n_ : NAN;
    double cpu = cpu_measured_ && phase_deliveries_ ? TicksToMicros(cpu_ticks_) / double(phase_deliveries_) : NAN;
    h << "  server pid " << o_.server_pid << " (" << rss1_.processes << " process" << (rss1_.processes == 1 ? "" : "es")
      << "): RSS " << rss0_.rss_kib << " -> " << rss1_.rss_kib << " KiB = " << Num(rss, 2) << " KiB/stream (PSS "
      << Num(pss, 2) << "); CPU " << Num(TicksToMicros(cpu_ticks_) / 1000, 0) << " ms for " << phase_deliveries_
      << " deliveries = " << Num(cpu, 2) << " us/delivery"
      << (o_.scenario == Scenario::Storm ? " (the storm's CPU, reconnects included)" : "") << "\n";
    double warm = warm_deliveries_ ? TicksToMicros(warm_cpu_ticks_) / double(warm_deliveries_) : NAN;
    if (warm_deliveries_)
      h << "    rounds 2.." << o_.rounds << " alone (warm connections): " << Num(warm, 2) << " us/delivery\n";
    server = R"("server":{"rss_kib_per_stream":)" + Num(rss, 3) + R"(,"cpu_us_per_delivery":)" + Num(cpu, 3) +
             R"(,"cpu_us_per_delivery_warm":)" + Num(warm, 3) +
             R"(,"pss_kib_per_stream":)" + Num(pss, 3) + R"(,"processes":)" + std::to_string(rss1_.processes) + "}";
  }
  std::string smetrics;
  if (metrics_on_) {
    if (m0_.ok && m1_.ok) {
      double del = m1_.deliveries - m0_.deliveries, wr = m1_.writes - m0_.writes;
      h << "  server /metrics over the measured phase: published " << Num(m1_.published - m0_.published, 0)
        << ", deliveries queued " << Num(del, 0) << ", coalesced " << Num(m1_.coalesced - m0_.coalesced, 0)
        << ", closed for backpressure " << Num(m1_.slow_closes - m0_.slow_closes, 0) << ", stream writes " << Num(wr, 0)
        << " (" << Num(del > 0 ? wr / del : NAN, 3) << " per delivery)\n";
      smetrics = R"("server_metrics":{"published":)" + Num(m1_.published - m0_.published, 0) + R"(,"deliveries":)" +
                 Num(del, 0) + R"(,"coalesced":)" + Num(m1_.coalesced - m0_.coalesced, 0) +
                 R"(,"slow_consumer_closes":)" + Num(m1_.slow_closes - m0_.slow_closes, 0) + R"(,"stream_writes":)" +
                 Num(wr, 0) + R"(,"writes_per_delivery":)" + Num(del > 0 ? wr / del : NAN, 4) +
                 R"(,"listen_streams_open_after":)" + Num(m1_.streams, 0) + R"(,"task_states_after":)" +
                 Num(m1_.task_states, 0) + R"(,"task_states_bytes_after":)" + Num(m1_.task_states_bytes, 0) + "}";
    } else {
      h << "  server /metrics: not available (" << metrics_.hostport << metrics_.path << ")\n";
      smetrics = R"("server_metrics":null)";
    }
  }
  double self_per = phase_deliveries_ ? double(self_cpu_us_) / double(phase_deliveries_) : NAN;
  if (phase_deliveries_)
    h << "  load generator: " << Num(double(self_cpu_us_) / 1000, 0)
      << " ms CPU in the measured phase = " << Num(self_per, 2) << " us/delivery\n";
  uint64_t violations = Violations();
  h << "  checks: framing errors " << framing_errors_ << ", id: lines " << id_lines_ << ", other event types "
    << other_events_ << ", duplicates/reordered " << dups_ << ", unknown seq " << unknown_seq_
    << ", stale (earlier phase) " << stale_ << ", unexpected messages " << unexpected_
    << ", deliveries before confirmation " << early_ << ", listen results (server ended a listen) " << completes_
    << ", dropped streams " << dropped_ << ", failed streams " << failed_streams_ << ", publish errors "
    << publish_errors_ << "\n";
  if (!ok)
    h << "  FAILED: " << (fatal_msg_.empty() ? (first_error_.empty() ? "see checks above" : first_error_) : fatal_msg_)
      << "\n";
  if (!first_error_.empty() && ok) h << "  first error (recovered): " << first_error_ << "\n";

  std::string j = R"({"kind":")" + std::string(kinds[int(o_.kind)]) + R"(","scenario":")" +
                  scenarios[int(o_.scenario)] + R"(","streams":)" + std::to_string(n_) + R"(,"connect_s":)" +
                  (connect_s_ >= 0 ? Num(connect_s_) : "null") + confirm;
  if (!section.empty()) j += "," + section;
  if (!server.empty()) j += "," + server;
  if (!smetrics.empty()) j += "," + smetrics;
  j += R"(,"loadgen":{"cpu_us_per_delivery":)" + Num(self_per, 3) + R"(,"sources":)" + std::to_string(sources_.size()) +
       R"(,"window":)" + std::to_string(o_.window) + R"(,"transport":")" + Transport() + R"(","connections":)" +
       std::to_string(o_.h2 ? nconns_ : n_) +
       (o_.h2 ? R"(,"h2_connection_failures":)" + std::to_string(h2_conn_failures_) : "") + "}";
  j += R"(,"checks":{"framing_errors":)" + std::to_string(framing_errors_) + R"(,"id_lines":)" +
       std::to_string(id_lines_) + R"(,"other_event_types":)" + std::to_string(other_events_) + R"(,"duplicates":)" +
       std::to_string(dups_) + R"(,"unknown_seq":)" + std::to_string(unknown_seq_) + R"(,"stale":)" +
       std::to_string(stale_) + R"(,"unexpected":)" + std::to_string(unexpected_) + R"(,"early":)" +
       std::to_string(early_) + R"(,"listen_results":)" + std::to_string(completes_) + R"(,"dropped_streams":)" +
       std::to_string(dropped_) + R"(,"failed_streams":)" + std::to_string(failed_streams_) +
       R"(,"retried_handshakes":)" + std::to_string(retries_) + R"(,"publish_errors":)" +
       std::to_string(publish_errors_) + R"(,"violations":)" + std::to_string(violations) + "}";
  j += R"(,"ok":)" + std::string(ok ? "true" : "false");
  if (!ok) j += R"(,"error":")" + JsonEscape(fatal_msg_.empty() ? first_error_ : fatal_msg_) + "\"";
  j += "}";
  std::cout << h.str() << j << std::endl;
  if (!o_.json_file.empty()) {
    std::ofstream f(o_.json_file, std::ios::app);
    f << j << "\n";
    if (!f) std::cerr << "mcpfan-load: cannot append to " << o_.json_file << "\n";
  }
}

int Loadgen::Run() {
  std::string err;
  if (!Setup(&err)) {
    std::cerr << "mcpfan-load: " << err << "\n";
    return 2;
  }
  start_ns_ = NowNs();
  global_deadline_ = start_ns_ + uint64_t(o_.timeout_s * kSec);
  rss0_ = Sample();
  if (o_.server_pid && !rss0_.ok) {
    std::cerr << "mcpfan-load: cannot read /proc/" << o_.server_pid << "\n";
    Teardown();
    return 2;
  }
  bool ok = true;
  if (o_.scenario == Scenario::Receive) {
    ok = RunReceive();
  } else if (o_.scenario == Scenario::Publish) {
    ok = RunPublish();
  } else {
    ok = ConnectAll();
    rss1_ = Sample();
  }
  if (ok && o_.scenario != Scenario::Receive && o_.scenario != Scenario::Publish) {
    m0_ = FetchMetrics();
    switch (o_.scenario) {
      case Scenario::Burst: ok = RunBurst(); break;
      case Scenario::Sustained: ok = RunSustained(); break;
      case Scenario::Storm: ok = RunStorm(); break;
      case Scenario::Targeted: ok = RunTargeted(); break;
      default: break;
    }
    m1_ = FetchMetrics();
  }
  if (sus_.ran && sus_.lost) ok = false;
  if (Violations()) ok = false;
  if (fatal_) ok = false;
  Report(ok);
  Teardown();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace mcpload

int main(int argc, char** argv) {
  using mcpload::Kind;
  using mcpload::Scenario;
  mcpload::Options o;
  CLI::App app{"mcpfan-load: opens N subscriber streams and measures fan-out (bench/compare/LOADGEN_CLI.md)"};
  app.add_option("--kind", o.kind_s, "listen|session|stdio|nchan|sdkhub")
      ->required()
      ->check(CLI::IsMember({"listen", "session", "stdio", "nchan", "sdkhub"}));
  app.add_option("--target", o.target, "server base URL, http://127.0.0.1:PORT")->required();
  app.add_option("--unix", o.unix_path, "stdio kind: the server's --unix socket");
  auto* sub_path = app.add_option("--sub-path", o.sub_path,
                                  "nchan kind: subscriber location (with --stream-uris own: the prefix of a "
                                  "multiplexed one, default /sub/multi/)")
                       ->capture_default_str();
  app.add_option("--publish-url", o.publish_url,
                 "default <target>/v1/publish (nchan: <target>/pub/bench, sdkhub: <target>/publish)");
  app.add_option("--streams", o.streams, "subscriber streams to open (0: --scenario publish only)")
      ->required()
      ->check(CLI::Range(0, 1000000));
  app.add_option("--scenario", o.scenario_s, "burst|sustained|storm|receive|publish|targeted")
      ->required()
      ->check(CLI::IsMember({"burst", "sustained", "storm", "receive", "publish", "targeted"}));
  app.add_option("--stream-uris", o.stream_uris_s,
                 "what each stream subscribes to: shared (--uri), own (<--own-uri-base><index>) or both")
      ->capture_default_str()
      ->check(CLI::IsMember({"shared", "own", "both"}));
  app.add_option("--own-uri-base", o.own_uri_base, "stream i's own URI is this + (--index-base + i)")
      ->capture_default_str();
  app.add_option("--index-base", o.index_base,
                 "global index of this process's first stream (own URIs across processes)")
      ->capture_default_str();
  app.add_option("--rounds", o.rounds, "burst: publishes, one at a time")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--rate", o.rate_s, "sustained, targeted: publishes per second (default 100); targeted: or max")
      ->check([](const std::string& v) -> std::string {
        if (v == "max") return {};
        char* end = nullptr;
        double r = std::strtod(v.c_str(), &end);
        return end && !*end && r >= 0.1 && r <= 1e6 ? std::string() : "a rate in 0.1..1000000, or max";
      });
  app.add_option("--batch", o.batch, "targeted at --rate max (mcpfan kinds): notifications per POST, one JSON array")
      ->check(CLI::Range(1, 4096));
  app.add_option("--window", o.pub_window,
                 "targeted: publishes in flight per publisher connection (one per --publish-url)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--extra-uris", o.extra_uris, "own URIs: K more never-published URIs per stream (nchan: channels)")
      ->capture_default_str()->check(CLI::Range(0, 254));
  app.add_option("--duration", o.duration, "sustained: seconds")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 86400.0));
  app.add_option("--uri", o.uri, "resource URI subscribed to and published")->capture_default_str();
  app.add_option("--sources", o.sources, "loopback source addresses 127.0.0.2.. (default: max(2, N/5000))")
      ->check(CLI::Range(1, 250));
  app.add_option("--server-pid", o.server_pid,
                 "report server RSS per stream and CPU per delivery from /proc (PID and its children)");
  app.add_option("--json", o.json_file, "also append the result JSON line to FILE");
  app.add_option("--timeout-s", o.timeout_s, "hard bound on the whole run")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  app.add_option("--connect-window", o.window, "handshakes in flight at once (connect and storm)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--slow-readers", o.slow_fraction, "sustained: fraction of the streams that read slowly (0..1)")
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--slow-read-bytes-per-s", o.slow_bps, "a slow stream reads at most this many bytes per second")
      ->capture_default_str()->check(CLI::Range(1.0, 1e9));
  app.add_option("--slow-rcvbuf", o.slow_rcvbuf,
                 "SO_RCVBUF of a slow stream's socket, set before connect (the kernel doubles it)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 30));
  app.add_option(
      "--metrics-url", o.metrics_url,
      "server counters to read before/after the measured phase (default for listen/session/stdio: <target>/metrics)");
  app.add_flag("--no-metrics", o.no_metrics, "do not read the server's /metrics");
  app.add_flag("--task-listens", o.task_listens,
               "targeted: stream i's listen watches task-<--index-base + i> (taskIds, the Tasks extension declared) "
               "and publishes are notifications/tasks (status working) to one random stream's task");
  app.add_option("--params-bytes", o.params_bytes,
                 "targeted: pad every publish's params to this many bytes as sent (a task's statusMessage, else a "
                 "\"bench/pad\" in _meta)");
  app.add_option("--pad-bytes", o.pad_bytes, "add a \"bench/pad\" string of this many bytes to every publish's _meta")
      ->capture_default_str()->check(CLI::Range(0, 1 << 20));
  app.add_flag("--tls", o.tls,
               "listen, nchan: TLS on the subscriber connections (as an https:// --target); SNI localhost");
  app.add_option("--bearer", o.bearer, "listen kind: send every listen with Authorization: Bearer TOKEN");
  app.add_option("--ca-file", o.ca_file, "--tls: the CA certificate (PEM) to verify the server with (name localhost)");
  app.add_flag("--insecure-tls", o.insecure_tls, "--tls: do not verify the server's certificate");
  app.add_flag("--h2", o.h2,
               "listen, nchan: HTTP/2 streams multiplexed on ceil(N/K) connections (ALPN h2 with --tls, else h2c "
               "with prior knowledge)");
  app.add_option("--streams-per-conn", o.streams_per_conn, "--h2: streams per connection (K; the last one given)")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->check(CLI::Range(1, 1000000));
  CLI11_PARSE(app, argc, argv);
  o.sub_path_set = sub_path->count() > 0;
  if (o.rate_s == "max") {
    o.rate_max = true;
  } else if (!o.rate_s.empty()) {
    o.rate = std::strtod(o.rate_s.c_str(), nullptr);
  }
  const char* kinds[] = {"listen", "session", "stdio", "nchan", "sdkhub"};
  for (int k = 0; k < 5; ++k) {
    if (o.kind_s == kinds[k]) o.kind = Kind(k);
  }
  const char* scenarios[] = {"burst", "sustained", "storm", "receive", "publish", "targeted"};
  for (int k = 0; k < 6; ++k) {
    if (o.scenario_s == scenarios[k]) o.scenario = Scenario(k);
  }
  o.stream_uris = o.stream_uris_s == "own"    ? mcpload::StreamUris::Own
                  : o.stream_uris_s == "both" ? mcpload::StreamUris::Both
                                              : mcpload::StreamUris::Shared;
  signal(SIGPIPE, SIG_IGN);
  auto lg = std::make_unique<mcpload::Loadgen>(std::move(o));
  return lg->Run();
}

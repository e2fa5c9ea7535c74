#include "h2_client.h"

#include <algorithm>
#include <cctype>

namespace itest {

namespace {

ssize_t read_body(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                  nghttp2_data_source* source, void*) {
  auto* body = static_cast<std::string*>(source->ptr);
  std::size_t n = std::min(length, body->size());
  std::copy_n(body->data(), n, buf);
  body->erase(0, n);
  if (body->empty()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

H2Client::H2Client() : H2Client(Options{}) {}

H2Client::H2Client(Options o) : opt_(o) {}

H2Client::~H2Client() {
  if (session_) nghttp2_session_del(session_);
}

int H2Client::on_header(nghttp2_session*, const nghttp2_frame* f, const std::uint8_t* name, std::size_t namelen,
                        const std::uint8_t* value, std::size_t valuelen, std::uint8_t, void* user) {
  auto* c = static_cast<H2Client*>(user);
  if (f->hd.type != NGHTTP2_HEADERS) return 0;
  Stream& s = c->streams_[f->hd.stream_id];
  std::string n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status")
    s.status = std::stoi(v);
  else
    s.headers.push_back({n, v});
  return 0;
}

int H2Client::on_data(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data, std::size_t len,
                      void* user) {
  auto* c = static_cast<H2Client*>(user);
  Stream& s = c->streams_[id];
  std::string_view chunk(reinterpret_cast<const char*>(data), len);
  s.data.append(chunk);
  s.sse.Feed(chunk);
  while (!s.sse.events.empty()) {
    s.events.push_back(std::move(s.sse.events.front()));
    s.sse.events.pop_front();
  }
  return 0;
}

int H2Client::on_close(nghttp2_session*, std::int32_t id, std::uint32_t code, void* user) {
  auto* c = static_cast<H2Client*>(user);
  Stream& s = c->streams_[id];
  s.closed = true;
  s.rst_code = code;
  return 0;
}

int H2Client::on_frame(nghttp2_session*, const nghttp2_frame* f, void* user) {
  auto* c = static_cast<H2Client*>(user);
  if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) c->settings_seen_ = true;
  return 0;
}

::testing::AssertionResult H2Client::Connect(int port, Ms timeout) {
  std::string err;
  if (!conn_.Connect(port, timeout, &err)) return ::testing::AssertionFailure() << "connect: " << err;
  nghttp2_session_callbacks* cbs = nullptr;
  nghttp2_session_callbacks_new(&cbs);
  nghttp2_session_callbacks_set_send_callback(
      cbs, [](nghttp2_session*, const std::uint8_t* data, std::size_t len, int, void* user) -> ssize_t {
        static_cast<H2Client*>(user)->out_.append(reinterpret_cast<const char*>(data), len);
        return static_cast<ssize_t>(len);
      });
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_close);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  if (opt_.manual_window) nghttp2_option_set_no_auto_window_update(opt, 1);
  // nghttp2 estimates a block by its decoded size: a bomb is tiny on the wire, not to it.
  nghttp2_option_set_max_send_header_block_length(opt, 16u << 20);
  int rv = nghttp2_session_client_new2(&session_, cbs, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cbs);
  if (rv != 0) return ::testing::AssertionFailure() << "nghttp2_session_client_new2: " << nghttp2_strerror(rv);
  nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, opt_.initial_window}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, iv, 1);
  if (!RunUntil([&] { return settings_seen_; }, timeout)) {
    return ::testing::AssertionFailure() << "no SETTINGS from the server (peer closed: " << conn_.eof() << ")";
  }
  return ::testing::AssertionSuccess();
}

std::int32_t H2Client::Request(std::string_view method, std::string_view path, const std::vector<Header>& headers,
                               std::string_view body) {
  std::vector<std::string> keep;
  keep.reserve(2 * headers.size() + 8);
  std::vector<nghttp2_nv> nva;
  auto add = [&](std::string n, std::string v) {
    keep.push_back(std::move(n));
    keep.push_back(std::move(v));
    std::string& nn = keep[keep.size() - 2];
    std::string& vv = keep.back();
    nva.push_back({reinterpret_cast<std::uint8_t*>(nn.data()), reinterpret_cast<std::uint8_t*>(vv.data()), nn.size(),
                   vv.size(), NGHTTP2_NV_FLAG_NONE});
  };
  add(":method", std::string(method));
  add(":scheme", "http");
  add(":authority", "127.0.0.1");
  add(":path", std::string(path));
  for (const Header& h : headers) add(lower(h.name), h.value);
  if (body.empty()) return nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
  std::string& held = bodies_.emplace_back(body);  // a list: its address stays while nghttp2 reads it
  nghttp2_data_provider prd{};
  prd.source.ptr = &held;
  prd.read_callback = read_body;
  std::int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &prd, nullptr);
  return id;
}

std::int32_t H2Client::Listen(std::string_view id_json, std::string_view notifications_json) {
  std::string fields = R"("notifications":)";
  fields.append(notifications_json);
  return Request("POST", "/mcp", McpHeaders(kV2026, "subscriptions/listen"),
                 RpcBody(id_json, "subscriptions/listen", fields, kV2026));
}

void H2Client::ScanFrames(std::string_view bytes) {
  raw_.append(bytes);
  std::size_t at = 0;
  while (raw_.size() - at >= 9) {
    auto u = [&](std::size_t i) { return static_cast<std::uint8_t>(raw_[at + i]); };
    std::size_t len = (std::size_t{u(0)} << 16) | (std::size_t{u(1)} << 8) | u(2);
    if (raw_.size() - at < 9 + len) break;
    if (u(3) == NGHTTP2_RST_STREAM && len == 4) {
      std::int32_t id = static_cast<std::int32_t>(((u(5) & 0x7f) << 24) | (u(6) << 16) | (u(7) << 8) | u(8));
      raw_resets_[id] =
          (std::uint32_t{u(9)} << 24) | (std::uint32_t{u(10)} << 16) | (std::uint32_t{u(11)} << 8) | u(12);
    }
    if (u(3) == NGHTTP2_GOAWAY && len >= 8) {
      goaway_ = true;
      goaway_code_ = (std::uint32_t{u(13)} << 24) | (std::uint32_t{u(14)} << 16) | (std::uint32_t{u(15)} << 8) | u(16);
      goaway_reason_ = raw_.substr(at + 17, len - 8);
    }
    at += 9 + len;
  }
  raw_.erase(0, at);
}

bool H2Client::Flush() {
  if (session_failed_) return true;
  int rv = nghttp2_session_send(session_);
  if (write_shut_) {  // what it would send now (acks, window updates) has nowhere to go
    out_.clear();
    return rv == 0;
  }
  if (rv != 0) return false;
  if (out_.empty()) return true;
  bool ok = conn_.Send(out_, kIo);
  out_.clear();
  return ok;
}

std::string H2Client::Frame(std::uint8_t type, std::uint8_t flags, std::int32_t stream, std::string_view payload) {
  std::string f;
  std::size_t n = payload.size();
  f += static_cast<char>((n >> 16) & 0xff);
  f += static_cast<char>((n >> 8) & 0xff);
  f += static_cast<char>(n & 0xff);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  for (int shift : {24, 16, 8, 0}) f += static_cast<char>((stream >> shift) & (shift == 24 ? 0x7f : 0xff));
  f.append(payload);
  return f;
}

std::string H2Client::GetBlock(std::string_view path) {
  // :method GET (static 2), :scheme http (6), then literals without indexing (RFC 7541 §6.2.2)
  // for :path (name index 4) and :authority (1): the decoder's table is left as it was.
  std::string b("\x82\x86", 2);
  b += '\x04';
  b += static_cast<char>(path.size());
  b.append(path);
  b += '\x01';
  b += '\x09';
  b += "127.0.0.1";
  return b;
}

bool H2Client::ShutdownWrite() {
  if (!Flush()) return false;
  conn_.ShutdownWrite();
  write_shut_ = true;
  return true;
}

bool H2Client::SendRaw(std::string_view bytes) {
  if (!Flush()) return false;
  return conn_.Send(bytes, kIo);
}

bool H2Client::RunUntil(const std::function<bool()>& done, Ms timeout) {
  Deadline end = After(timeout);
  for (int rounds = 0; rounds < 1'000'000; ++rounds) {
    if (!Flush()) return done();
    if (done()) return true;
    if (Clock::now() >= end || conn_.eof()) return done();
    int n = conn_.ReadSome(std::min(end, After(Ms(50))));
    if (n == -2) return done();
    if (n > 0 || !conn_.in().empty()) {
      std::string& in = conn_.in();
      ScanFrames(in);
      // After raw frames of ours the session may refuse what answers them (SETTINGS acks it
      // never asked for): from then on only the scan reads.
      if (!session_failed_ &&
          nghttp2_session_mem_recv(session_, reinterpret_cast<const std::uint8_t*>(in.data()), in.size()) < 0) {
        session_failed_ = true;
      }
      in.clear();
    }
  }
  return done();
}

void H2Client::Reset(std::int32_t id) {
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
  Flush();
}

void H2Client::Consume(std::int32_t id, std::size_t bytes) {
  nghttp2_session_consume(session_, id, bytes);
  Flush();
}

std::uint32_t H2Client::max_concurrent_streams() const {
  return nghttp2_session_get_remote_settings(session_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

}  // namespace itest

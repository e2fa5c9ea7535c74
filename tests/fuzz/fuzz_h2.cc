// libFuzzer target: the HTTP/2 frame layer (transports/src/http2/: Http2Conn, H2Stream, nghttp2
// behind them) and the routes behind its streams. Each input goes to the in-process server
// without authentication (fuzz_support.cc) on a fresh loopback TCP connection: the client
// preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" (so the HTTP/1.1 connection hands the socket to an
// Http2Conn), then the input's bytes as they are (frames, or anything), in pieces split at
// "@@SPLIT@@"; then the client half-closes and reads until the server closes.
//
// Findings: any sanitizer report in the server's worker thread; a server that stops reading or
// does not close within 2 s of the client's FIN (a hang); and what the server sent back not
// being a well-formed HTTP/2 conversation:
// - whole frames of the types a server sends (DATA, HEADERS, RST_STREAM, SETTINGS, PING,
//   GOAWAY, WINDOW_UPDATE, CONTINUATION), each on the right kind of stream and with the right
//   length, none longer than the largest SETTINGS_MAX_FRAME_SIZE the input could have set
//   (16384 otherwise); only a reset connection may end mid-frame;
// - the first frame is SETTINGS (not an ack);
// - every header block (HEADERS + CONTINUATION, in order, one HPACK inflater for the
//   connection) decodes, has a :status of three digits first, lower-case field names that are
//   tokens and values without control bytes; no 500;
// - no HEADERS or DATA on a stream after its END_STREAM or its RST_STREAM, no DATA before HEADERS;
// - a complete application/json body (the stream's DATA) is a JSON object, and has the length
//   content-length gave; it is empty only for a HEAD request, and a HEAD request's answer has no
//   body (the input's own header blocks are decoded to know which streams are HEAD); every
//   complete SSE line of a text/event-stream is event/data/comment, each data line a JSON object;
// - a GOAWAY's (and RST_STREAM's) error code is one RFC 9113 defines (at most 0xd);
// - a connection that ends with a FIN has sent a GOAWAY (RFC 9113 §6.8), answers no stream above
//   its last stream id after it, and a later GOAWAY does not raise that id.
// Leaks: the servers are stopped at exit, so LeakSanitizer's exit check sees what they kept.
#include <nghttp2/nghttp2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.h"
#include "fuzz_support.h"
#include "http/field_syntax.h"

namespace fz = mcpfan::fuzz;

namespace {

constexpr std::size_t kHeaderLen = 9;
constexpr std::uint32_t kDefaultMaxFrame = 16384;

struct FrameHead {
  std::uint32_t length;
  std::uint8_t type, flags;
  std::uint32_t stream;
  bool reserved;  // the stream id's reserved bit
};

std::uint32_t be(std::string_view s, std::size_t at, std::size_t n) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

FrameHead head_at(std::string_view s, std::size_t at) {
  std::uint32_t id = be(s, at + 5, 4);
  return FrameHead{be(s, at, 3), static_cast<std::uint8_t>(s[at + 3]), static_cast<std::uint8_t>(s[at + 4]),
                   id & 0x7fffffffu, (id & 0x80000000u) != 0};
}

// What the input asked, read as the server's nghttp2 reads it for as long as it reads as frames.
struct InputView {
  // The largest SETTINGS_MAX_FRAME_SIZE any SETTINGS frame of the input could have set.
  std::uint32_t max_frame = kDefaultMaxFrame;
  // Streams whose first header block decoded (through one HPACK inflater, as the server's), and
  // which of them are HEAD requests. Once a block fails to decode the server ends the connection
  // and answers nothing after it: later streams are not judged by these.
  std::set<std::uint32_t> decoded, head;
};

// A padded or prioritized frame's payload without its padding and priority fields; nullopt if short.
std::optional<std::string_view> fragment(std::uint8_t flags, std::string_view p, bool headers) {
  std::size_t pad = 0;
  if (flags & NGHTTP2_FLAG_PADDED) {
    if (p.empty()) return std::nullopt;
    pad = static_cast<unsigned char>(p[0]);
    p.remove_prefix(1);
  }
  std::size_t priority = headers && (flags & NGHTTP2_FLAG_PRIORITY) ? 5 : 0;
  if (p.size() < priority + pad) return std::nullopt;
  return p.substr(priority, p.size() - priority - pad);
}

InputView read_input(std::string_view in) {
  InputView v;
  nghttp2_hd_inflater* inflater = nullptr;
  nghttp2_hd_inflate_new(&inflater);
  bool broken = false;  // a header block did not decode (or a frame around one was malformed)
  std::string block;
  std::uint32_t block_stream = 0;
  bool in_block = false;
  std::set<std::uint32_t> seen;  // streams with a header block (the first one is the request's)
  auto end_block = [&] {
    in_block = false;
    bool first = seen.insert(block_stream).second;
    const auto* at = reinterpret_cast<const std::uint8_t*>(block.data());
    std::size_t left = block.size();
    bool head = false;
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      ssize_t n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, at, left, 1);
      if (n < 0) {
        broken = true;
        return;
      }
      at += n;
      left -= static_cast<std::size_t>(n);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) &&
          std::string_view(reinterpret_cast<const char*>(nv.name), nv.namelen) == ":method") {
        head = head || std::string_view(reinterpret_cast<const char*>(nv.value), nv.valuelen) == "HEAD";
      }
      if (flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater);
        break;
      }
      if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && left == 0) break;
    }
    if (!first) return;
    v.decoded.insert(block_stream);
    if (head) v.head.insert(block_stream);
  };
  for (std::size_t at = 0; in.size() - at >= kHeaderLen;) {
    FrameHead h = head_at(in, at);
    if (in.size() - at - kHeaderLen < h.length) break;
    std::string_view p = in.substr(at + kHeaderLen, h.length);
    at += kHeaderLen + h.length;
    if (h.type == NGHTTP2_SETTINGS && !(h.flags & NGHTTP2_FLAG_ACK)) {
      for (std::size_t e = 0; e + 6 <= p.size(); e += 6) {
        if (be(p, e, 2) == NGHTTP2_SETTINGS_MAX_FRAME_SIZE) v.max_frame = std::max(v.max_frame, be(p, e + 2, 4));
      }
    }
    if (broken) continue;
    if (in_block && (h.type != NGHTTP2_CONTINUATION || h.stream != block_stream)) broken = true;
    if (h.type == NGHTTP2_HEADERS || h.type == NGHTTP2_PUSH_PROMISE) {
      auto f = fragment(h.flags, p, h.type == NGHTTP2_HEADERS);
      if (!f || h.type == NGHTTP2_PUSH_PROMISE) {
        broken = true;
        continue;
      }
      block.assign(*f);
      block_stream = h.stream;
      in_block = true;
    } else if (h.type == NGHTTP2_CONTINUATION) {
      if (!in_block) {
        broken = true;
        continue;
      }
      block.append(p);
    } else {
      continue;
    }
    if (h.flags & NGHTTP2_FLAG_END_HEADERS) end_block();
  }
  nghttp2_hd_inflate_del(inflater);
  return v;
}

const char* type_name(std::uint8_t t) {
  static const char* const kNames[] = {"DATA",         "HEADERS", "PRIORITY", "RST_STREAM",    "SETTINGS",
                                       "PUSH_PROMISE", "PING",    "GOAWAY",   "WINDOW_UPDATE", "CONTINUATION"};
  return t < std::size(kNames) ? kNames[t] : "UNKNOWN";
}

// The server's frames, one per line, for a failure's message.
std::string describe(std::string_view out) {
  std::string d;
  std::size_t at = 0;
  for (int n = 0; out.size() - at >= kHeaderLen && n < 40; ++n) {
    FrameHead h = head_at(out, at);
    std::size_t have = std::min<std::size_t>(h.length, out.size() - at - kHeaderLen);
    d += "\n  " + std::string(type_name(h.type)) + " stream=" + std::to_string(h.stream) +
         " flags=" + std::to_string(h.flags) + " len=" + std::to_string(h.length) + " " +
         fz::printable(out.substr(at + kHeaderLen, have), 120);
    at += kHeaderLen + have;
  }
  if (at < out.size()) d += "\n  ...(" + std::to_string(out.size() - at) + " more bytes)";
  return d;
}

struct StreamState {
  bool headers = false;  // a response head came
  bool ended = false;    // END_STREAM
  bool reset = false;    // RST_STREAM
  std::string content_type;
  std::string content_length;
  std::string body;
};

class Checker {
 public:
  Checker(std::string_view input, std::string_view out) : input_(input), out_(out), asked_(read_input(input)) {
    nghttp2_hd_inflate_new(&inflater_);
  }
  ~Checker() { nghttp2_hd_inflate_del(inflater_); }
  Checker(const Checker&) = delete;
  Checker& operator=(const Checker&) = delete;

  void run(bool clean_eof) {
    const std::uint32_t max_len = asked_.max_frame;
    std::size_t at = 0;
    bool first = true;
    while (out_.size() - at >= kHeaderLen) {
      FrameHead h = head_at(out_, at);
      check(h.length <= max_len, "a %s frame of %u bytes, over SETTINGS_MAX_FRAME_SIZE %u", type_name(h.type), h.length,
            max_len);
      if (out_.size() - at - kHeaderLen < h.length) break;  // cut: judged below
      std::string_view payload = out_.substr(at + kHeaderLen, h.length);
      if (first) {
        check(h.type == NGHTTP2_SETTINGS && !(h.flags & NGHTTP2_FLAG_ACK),
              "the server's first frame is %s, not SETTINGS", type_name(h.type));
        first = false;
      }
      frame(h, payload);
      at += kHeaderLen + h.length;
    }
    // A connection that ended with a FIN sent whole frames; a reset may cut the last one. And it
    // said GOAWAY (RFC 9113 §6.8: so the peer knows what was processed): after the client's FIN
    // the server writes what it answered and GOAWAY, then closes.
    check(!clean_eof || at == out_.size(), "the server's bytes end inside a frame (%zu of %zu bytes are whole frames)",
          at, out_.size());
    check(!clean_eof || goaway_, "the server closed without a GOAWAY");
    check(!clean_eof || !in_block_, "a header block never ended (no END_HEADERS) before the FIN");
  }

 private:
  // FUZZ_CHECK with the server's frames and the input in the message.
  void check(bool ok, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    if (ok) return;
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fz::check_failed(__FILE__, __LINE__, "h2", "%s\nserver frames:%s\ninput: %s", what, describe(out_).c_str(),
                     fz::printable(input_, 600).c_str());
  }

  void frame(const FrameHead& h, std::string_view p) {
    check(!h.reserved, "a frame with the reserved bit of its stream id set");
    check(!in_block_ || h.type == NGHTTP2_CONTINUATION, "a %s frame inside a header block (CONTINUATION expected)",
          type_name(h.type));
    switch (h.type) {
      case NGHTTP2_DATA:
        return data(h, p);
      case NGHTTP2_HEADERS:
        return headers(h, p);
      case NGHTTP2_CONTINUATION:
        check(in_block_ && h.stream == block_stream_, "a CONTINUATION on stream %u outside a header block", h.stream);
        block_.append(p);
        if (h.flags & NGHTTP2_FLAG_END_HEADERS) end_block();
        return;
      case NGHTTP2_RST_STREAM:
        check(h.stream != 0 && h.stream % 2 == 1 && p.size() == 4, "a RST_STREAM on stream %u of %zu bytes", h.stream,
              p.size());
        check(be(p, 0, 4) <= NGHTTP2_HTTP_1_1_REQUIRED, "RST_STREAM with error code %u", be(p, 0, 4));
        streams_[h.stream].reset = true;
        return;
      case NGHTTP2_SETTINGS:
        check(h.stream == 0, "SETTINGS on stream %u", h.stream);
        check((h.flags & NGHTTP2_FLAG_ACK) ? p.empty() : p.size() % 6 == 0, "SETTINGS (flags %u) of %zu bytes", h.flags,
              p.size());
        return;
      case NGHTTP2_PING:
        check(h.stream == 0 && p.size() == 8, "PING on stream %u of %zu bytes", h.stream, p.size());
        return;
      case NGHTTP2_GOAWAY:
        check(h.stream == 0 && p.size() >= 8, "GOAWAY on stream %u of %zu bytes", h.stream, p.size());
        check(be(p, 4, 4) <= NGHTTP2_HTTP_1_1_REQUIRED, "GOAWAY with error code %u (reason: %s)", be(p, 4, 4),
              fz::printable(p.substr(8)).c_str());
        check(!goaway_ || (be(p, 0, 4) & 0x7fffffffu) <= last_stream_, "a GOAWAY raising its last stream id to %u",
              be(p, 0, 4) & 0x7fffffffu);
        goaway_ = true;
        last_stream_ = be(p, 0, 4) & 0x7fffffffu;
        return;
      case NGHTTP2_WINDOW_UPDATE:
        check(p.size() == 4 && (be(p, 0, 4) & 0x7fffffffu) != 0, "WINDOW_UPDATE of %zu bytes, or of 0", p.size());
        return;
      default:
        check(false, "a frame of type %u, which a server never sends", h.type);
    }
  }

  // A padded frame's payload without its padding (and for HEADERS, without the priority fields).
  std::string_view unpad(const FrameHead& h, std::string_view p) {
    auto f = fragment(h.flags, p, h.type == NGHTTP2_HEADERS);
    check(f.has_value(), "a %s frame shorter than its padding and priority", type_name(h.type));
    return *f;
  }

  StreamState& open_stream(const FrameHead& h) {
    check(h.stream != 0 && h.stream % 2 == 1, "a %s frame on stream %u (not one a client opened)", type_name(h.type),
          h.stream);
    StreamState& s = streams_[h.stream];
    check(!s.ended && !s.reset, "a %s frame on stream %u after its %s", type_name(h.type), h.stream,
          s.ended ? "END_STREAM" : "RST_STREAM");
    return s;
  }

  void data(const FrameHead& h, std::string_view p) {
    StreamState& s = open_stream(h);
    check(s.headers, "DATA on stream %u before any HEADERS", h.stream);
    s.body.append(unpad(h, p));
    if (h.flags & NGHTTP2_FLAG_END_STREAM) end_stream(h.stream, s);
  }

  void headers(const FrameHead& h, std::string_view p) {
    StreamState& s = open_stream(h);
    check(!s.headers, "a second HEADERS on stream %u (the server sends no trailers)", h.stream);
    check(!goaway_ || h.stream <= last_stream_, "a response on stream %u after a GOAWAY naming %u the last", h.stream,
          last_stream_);
    s.headers = true;
    block_.assign(unpad(h, p));
    block_stream_ = h.stream;
    block_ends_stream_ = (h.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    in_block_ = true;
    if (h.flags & NGHTTP2_FLAG_END_HEADERS) end_block();
  }

  void end_block() {
    in_block_ = false;
    StreamState& s = streams_[block_stream_];
    const auto* in = reinterpret_cast<const std::uint8_t*>(block_.data());
    std::size_t left = block_.size();
    std::string status;
    std::size_t fields = 0;
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
      check(n >= 0, "the header block of stream %u does not decode: %s", block_stream_,
            nghttp2_strerror(static_cast<int>(n)));
      in += n;
      left -= static_cast<std::size_t>(n);
      if (flags & NGHTTP2_HD_INFLATE_EMIT) {
        std::string_view name(reinterpret_cast<const char*>(nv.name), nv.namelen);
        std::string_view value(reinterpret_cast<const char*>(nv.value), nv.valuelen);
        field(s, name, value, fields++, status);
      }
      if (flags & NGHTTP2_HD_INFLATE_FINAL) {
        nghttp2_hd_inflate_end_headers(inflater_);
        break;
      }
      if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && left == 0) break;
    }
    check(!status.empty(), "a response head on stream %u without :status", block_stream_);
    check(status != "500", "the server answered 500 on stream %u: an exception left a request handler", block_stream_);
    if (block_ends_stream_) end_stream(block_stream_, s);
  }

  void field(StreamState& s, std::string_view name, std::string_view value, std::size_t index, std::string& status) {
    if (name == ":status") {
      check(index == 0 && status.empty(), "a :status that is not the head's first field (stream %u)", block_stream_);
      check(value.size() == 3 && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }),
            "a :status of \"%s\"", fz::printable(value).c_str());
      check(value[0] >= '2', "an interim %s answer (stream %u)", fz::printable(value).c_str(), block_stream_);
      status = value;
      return;
    }
    check(!name.empty() && name[0] != ':', "a pseudo-header %s in a response", fz::printable(name).c_str());
    check(mcpfan::detail::is_token(name) &&
              std::none_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; }),
          "a response field name that is not a lower-case token: \"%s\"", fz::printable(name).c_str());
    check(mcpfan::detail::is_clean_field_value(value), "a response field value with a control byte: %s: %s",
          fz::printable(name).c_str(), fz::printable(value).c_str());
    check(name != "connection" && name != "transfer-encoding" && name != "keep-alive" && name != "upgrade",
          "a connection-specific field in an HTTP/2 response: %s", fz::printable(name).c_str());
    if (name == "content-type") s.content_type = value;
    if (name == "content-length") s.content_length = value;
  }

  void end_stream(std::uint32_t id, StreamState& s) {
    s.ended = true;
    auto starts = [](std::string_view v, std::string_view p) { return v.substr(0, p.size()) == p; };
    if (!s.content_length.empty() && !s.body.empty()) {
      check(s.content_length == std::to_string(s.body.size()), "stream %u: content-length %s, and %zu body bytes", id,
            s.content_length.c_str(), s.body.size());
    }
    // A HEAD request's answer has a GET's head and no body (RFC 9110 §9.3.2); any other JSON answer has one.
    const bool known = asked_.decoded.count(id) != 0;
    const bool head = asked_.head.count(id) != 0;
    check(!known || !head || s.body.empty(), "stream %u: %zu body bytes answer a HEAD request", id, s.body.size());
    check(!known || head || !starts(s.content_type, "application/json") || !s.body.empty(),
          "stream %u: an application/json answer without a body", id);
    if (starts(s.content_type, "application/json") && !s.body.empty()) {
      fz::check_json_message(s.body, "an application/json body");
    } else if (starts(s.content_type, "text/event-stream")) {
      fz::check_sse_body(s.body);
    }
    s.body = std::string();
  }

 public:
  /** Streams still open when the server closed: an SSE stream's complete lines are checked. */
  void finish() {
    for (auto& [id, s] : streams_) {
      (void)id;
      if (!s.ended && s.content_type.substr(0, 17) == "text/event-stream") fz::check_sse_body(s.body);
    }
  }

 private:
  std::string_view input_, out_;
  InputView asked_;
  nghttp2_hd_inflater* inflater_ = nullptr;
  std::map<std::uint32_t, StreamState> streams_;
  std::string block_;
  std::uint32_t block_stream_ = 0;
  bool block_ends_stream_ = false;
  bool in_block_ = false;
  bool goaway_ = false;
  std::uint32_t last_stream_ = 0;  // the last GOAWAY's last stream id
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)fz::server();  // start it before the first input (and before libFuzzer's timers)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  auto pieces = fz::split_input(input);
  std::string first = std::string(fz::kH2Preface) + std::string(pieces[0]);  // one write: no pause inside the preface
  pieces[0] = first;
  int fd = fz::connect_http(false);
  auto rx = fz::exchange(fd, pieces, "HTTP/2");
  ::close(fd);
  std::string joined;
  for (std::size_t i = 1; i < pieces.size(); ++i) joined.append(pieces[i]);
  joined.insert(0, first.substr(fz::kH2Preface.size()));
  static const bool verbose = std::getenv("MCPFAN_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "---- the server's frames:%s\n---- end ----\n", describe(rx.bytes).c_str());
  Checker c(joined, rx.bytes);
  c.run(rx.clean_eof);
  c.finish();
  return 0;
}

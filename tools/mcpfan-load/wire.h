// Wire parsing for mcpfan-load: HTTP response heads, chunked bodies, SSE events and
// stdio (one JSON message per line) framing.
//
// The hot path (one SSE event or one line per delivery, 10,000+ per publish) never parses
// JSON: a message is classified by memmem() for the `"bench/seq":` marker the publisher
// put in params._meta, and only its digits are read. Framing is still validated: chunk
// sizes and CRLFs, SSE field names, one `data:` line per event, and every message must be
// a `{...}` object text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace mcpload {

constexpr std::string_view kSeqMarker = "\"bench/seq\":";
constexpr std::string_view kTsMarker = "\"bench/ts_ns\":";
constexpr std::string_view kUriMarker = "\"uri\":\"";
constexpr std::string_view kTaskIdMarker = "\"taskId\":\"";  // the key of a notifications/tasks (--task-listens)
constexpr std::string_view kAckMethod = "notifications/subscriptions/acknowledged";
constexpr size_t kMaxLine = 1 << 20;  // a longer SSE line / stdio line is a framing error

enum class MsgType : uint8_t { Seq, Ack, Complete, Other, Invalid };

struct Msg {
  MsgType type = MsgType::Other;
  uint64_t seq = 0;
  // Only with extras (Classify's second argument): what a receiver needs when the publish
  // was made by another process. ts_ns: the publisher's "bench/ts_ns" (CLOCK_MONOTONIC,
  // shared by the processes of one box), 0 when absent. uri_hash: UriHash of the raw bytes
  // of params.uri (as sent, JSON escapes not undone), 0 when absent; uri_dir_hash: the same
  // for the URI cut after its last '/', so that a shared URI ending in '/' (a sub-resource
  // subscription) accepts the URIs one level below it.
  uint64_t ts_ns = 0;
  uint64_t uri_hash = 0;
  uint64_t uri_dir_hash = 0;  // UriHash of the URI up to and including its last '/' (a "directory" subscription)
  std::string_view text;  // the message; valid only during the callback
};

// FNV-1a, 64 bit. A stream compares the hash of a delivery's URI with the hashes of its own
// subscriptions (a misdelivery check that keeps no copy of the message's bytes); a false
// "match" needs a 64-bit collision.
inline uint64_t UriHash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h ? h : 1;  // 0 means "no URI"
}

// Where `marker` ends in d, or null when d does not contain it.
inline const char* After(std::string_view d, std::string_view marker) {
  const void* hit = memmem(d.data(), d.size(), marker.data(), marker.size());
  return hit ? static_cast<const char*>(hit) + marker.size() : nullptr;
}

// The unsigned decimal at p (spaces skipped, at most 19 digits) into *out; how many digits.
inline int DecimalAt(const char* p, const char* end, uint64_t* out) {
  while (p < end && *p == ' ') ++p;
  uint64_t v = 0;
  int digits = 0;
  for (; p < end && *p >= '0' && *p <= '9' && digits < 19; ++p, ++digits) v = v * 10 + uint64_t(*p - '0');
  *out = v;
  return digits;
}

// The unsigned decimal right after `marker` in d; false when absent.
inline bool NumberAfter(std::string_view d, std::string_view marker, uint64_t* out) {
  const char* p = After(d, marker);
  return p && DecimalAt(p, d.data() + d.size(), out) > 0;
}

// The raw bytes of the first "uri":"..." string in d (or of another key's string: `marker`,
// such as kTaskIdMarker), up to the next quote; the URIs and task ids the load generator uses
// need no escapes.
inline std::string_view UriIn(std::string_view d, std::string_view marker = kUriMarker) {
  const char* p = After(d, marker);
  if (!p) return {};
  const char* end = d.data() + d.size();
  const char* q = static_cast<const char*>(memchr(p, '"', size_t(end - p)));
  return q ? std::string_view(p, size_t(q - p)) : std::string_view();
}

// Classifies one JSON-RPC message text without parsing it. With `extras`, a Seq message
// also gets ts_ns and uri_hash (two more memmem calls; off for the classic scenarios); the
// "URI" is the string after `key` (kUriMarker, or kTaskIdMarker for task notifications).
inline Msg Classify(std::string_view d, bool extras = false, std::string_view key = kUriMarker) {
  Msg m;
  m.text = d;
  if (d.size() < 2 || d.front() != '{' || d.back() != '}') {
    m.type = MsgType::Invalid;
    return m;
  }
  if (const char* p = After(d, kSeqMarker)) {
    const int digits = DecimalAt(p, d.data() + d.size(), &m.seq);
    m.type = digits ? MsgType::Seq : MsgType::Invalid;
    if (extras && digits) {
      NumberAfter(d, kTsMarker, &m.ts_ns);
      std::string_view u = UriIn(d, key);
      if (!u.empty()) {
        m.uri_hash = UriHash(u);
        size_t slash = u.rfind('/');
        if (slash != std::string_view::npos) m.uri_dir_hash = UriHash(u.substr(0, slash + 1));
      }
    }
    return m;
  }
  if (memmem(d.data(), d.size(), kAckMethod.data(), kAckMethod.size())) {
    m.type = MsgType::Ack;
  } else if (memmem(d.data(), d.size(), "\"resultType\"", 12)) {
    m.type = MsgType::Complete;  // the final result of a listen the server ended
  }
  return m;
}

// ------------------------------------------------------------------ HTTP response head

struct HttpHead {
  int status = 0;
  bool chunked = false;
  bool close = false;             // Connection: close
  int64_t content_length = -1;
  std::string content_type;       // media type only, lower case ("text/event-stream")
  std::string session_id;         // Mcp-Session-Id
};

// Offset just past the "\r\n\r\n" ending a head in `data`, or 0 when it is not complete.
inline size_t HeadEnd(std::string_view data) {
  const void* hit = memmem(data.data(), data.size(), "\r\n\r\n", 4);
  return hit ? size_t(static_cast<const char*>(hit) - data.data()) + 4 : 0;
}

// Parses a response head (through the blank line). False when malformed.
bool ParseHead(std::string_view head, HttpHead* out);

// ------------------------------------------------------------------ body decoding

// Turns a response body (chunked, Content-Length or read-until-close) into data slices.
class BodyDecoder {
 public:
  enum class Mode : uint8_t { UntilClose, Length, Chunked };

  void Reset(Mode m, uint64_t length = 0) {
    digits_ = 0;
    remaining_ = 0;
    if (m == Mode::Chunked) {
      st_ = St::Size;
    } else if (m == Mode::Length) {
      st_ = length ? St::Length : St::Done;
      remaining_ = length;
    } else {
      st_ = St::UntilClose;
    }
  }
  bool done() const { return st_ == St::Done; }
  bool failed() const { return st_ == St::Error; }

  // Calls sink(const char*, size_t) -> bool for each body slice. Returns false on a framing
  // error (or when the sink returned false). Without `consumed`, bytes after the end of the
  // body are an error; with it, decoding stops at the end of the body and *consumed says
  // how many bytes belonged to it (the rest starts the next, pipelined, response).
  template <class Sink>
  bool Feed(const char* p, size_t n, Sink&& sink, size_t* consumed = nullptr);

 private:
  enum class St : uint8_t {
    UntilClose,
    Length,
    Size,
    Ext,
    SizeLf,
    Data,
    DataCr,
    DataLf,
    TrailerStart,
    TrailerLine,
    TrailerLf,
    Done,
    Error
  };
  bool Fail() {
    st_ = St::Error;
    return false;
  }
  static int Hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  St st_ = St::UntilClose;
  uint8_t digits_ = 0;
  uint64_t remaining_ = 0;
};

template <class Sink>
bool BodyDecoder::Feed(const char* p, size_t n, Sink&& sink, size_t* consumed) {
  const char* const start = p;
  const char* end = p + n;
  if (consumed) *consumed = n;
  while (p < end) {
    switch (st_) {
      case St::UntilClose:
        return sink(p, size_t(end - p)) || Fail();
      case St::Length:
      case St::Data: {
        size_t k = size_t(end - p) < remaining_ ? size_t(end - p) : size_t(remaining_);
        if (!sink(p, k)) return Fail();
        p += k;
        remaining_ -= k;
        if (remaining_ == 0) st_ = st_ == St::Length ? St::Done : St::DataCr;
        break;
      }
      case St::Size: {
        char c = *p++;
        int v = Hex(c);
        if (v >= 0) {
          if (++digits_ > 15) return Fail();
          remaining_ = remaining_ * 16 + uint64_t(v);
        } else if (digits_ && c == '\r') {
          st_ = St::SizeLf;
        } else if (digits_ && c == ';') {
          st_ = St::Ext;
        } else {
          return Fail();
        }
        break;
      }
      case St::Ext:
        if (*p++ == '\r') st_ = St::SizeLf;
        break;
      case St::SizeLf:
        if (*p++ != '\n') return Fail();
        st_ = remaining_ ? St::Data : St::TrailerStart;
        break;
      case St::DataCr:
        if (*p++ != '\r') return Fail();
        st_ = St::DataLf;
        break;
      case St::DataLf:
        if (*p++ != '\n') return Fail();
        st_ = St::Size;
        digits_ = 0;
        remaining_ = 0;
        break;
      case St::TrailerStart:
        st_ = *p++ == '\r' ? St::TrailerLf : St::TrailerLine;
        break;
      case St::TrailerLine:
        if (*p++ == '\n') st_ = St::TrailerStart;
        break;
      case St::TrailerLf:
        if (*p++ != '\n') return Fail();
        st_ = St::Done;
        break;
      case St::Done:
        if (consumed) {
          *consumed = size_t(p - start);
          return true;
        }
        return Fail();
      case St::Error:
        return false;
    }
  }
  return true;
}

// ------------------------------------------------------------------ lines: SSE and stdio

// Handler interface (duck-typed):
//   bool OnMessage(const Msg&)          -- a complete message; false stops feeding
//   bool OnFramingError(const char*)    -- false stops feeding
//   void OnIdLine()                     -- an SSE `id:` field was seen
//   void OnEventType(std::string_view)  -- an SSE `event:` field other than "message"
class LineFramer {
 public:
  enum class Mode : uint8_t { Sse, JsonLines };

  void Reset(Mode m) {
    mode_ = m;
    extras_ = extras_default_;
    carry_.clear();
    carry_.shrink_to_fit();
    has_data_ = false;
  }

  template <class H>
  bool Feed(const char* p, size_t n, H& h) {
    const char* end = p + n;
    if (!carry_.empty()) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', n));
      if (!nl) {
        if (carry_.size() + n > kMaxLine) return h.OnFramingError("line longer than 1 MiB");
        carry_.append(p, n);
        return true;
      }
      carry_.append(p, size_t(nl - p));
      std::string line;
      line.swap(carry_);
      if (!Line(line, h)) return false;
      p = nl + 1;
    }
    while (p < end) {
      const char* nl = static_cast<const char*>(memchr(p, '\n', size_t(end - p)));
      if (!nl) {
        if (size_t(end - p) > kMaxLine) return h.OnFramingError("line longer than 1 MiB");
        carry_.assign(p, size_t(end - p));
        break;
      }
      if (!Line(std::string_view(p, size_t(nl - p)), h)) return false;
      p = nl + 1;
    }
    return true;
  }

 private:
  template <class H>
  bool Line(std::string_view l, H& h) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (mode_ == Mode::JsonLines) {
      if (l.empty()) return h.OnFramingError("empty line on a stdio stream");
      Msg m = Classify(l, extras_, key_);
      if (m.type == MsgType::Invalid) return h.OnFramingError("a stdio line that is not a JSON object");
      return h.OnMessage(m);
    }
    if (l.empty()) {  // end of event
      if (!has_data_) return true;
      has_data_ = false;
      return h.OnMessage(msg_);
    }
    if (l.front() == ':') return true;  // comment (keepalive)
    if (l.starts_with("data:")) {
      l.remove_prefix(5);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      if (has_data_) return h.OnFramingError("two data lines in one SSE event");
      if (l.empty()) return true;  // a 2025 session's priming event (`id:` + empty data): no message
      msg_ = Classify(l, extras_, key_);
      if (msg_.type == MsgType::Invalid) return h.OnFramingError("SSE data that is not a JSON object");
      msg_.text = {};  // the line's bytes may not outlive this call
      if (msg_.type == MsgType::Ack) {  // kept so the handler can check its subscription id
        ack_text_.assign(l);
        msg_.text = ack_text_;
      }
      has_data_ = true;
      return true;
    }
    if (l.starts_with("event:")) {
      l.remove_prefix(6);
      if (!l.empty() && l.front() == ' ') l.remove_prefix(1);
      if (l != "message") h.OnEventType(l);
      return true;
    }
    if (l.starts_with("id:")) {
      h.OnIdLine();
      return true;
    }
    if (l.starts_with("retry:")) return true;
    return h.OnFramingError("unknown SSE field");
  }

 public:
  // Frees the copy of the acknowledgement once the handler has checked it.
  void clear_ack_text() {
    ack_text_.clear();
    ack_text_.shrink_to_fit();
  }
  // Classify with extras (ts_ns, uri_hash) from now on, and after every Reset; `key` names the
  // string hashed as the URI (kTaskIdMarker: a task notification's taskId). A static string.
  void set_extras(bool on, std::string_view key = kUriMarker) {
    extras_ = extras_default_ = on;
    key_ = key;
  }

 private:
  Mode mode_ = Mode::Sse;
  bool has_data_ = false;
  bool extras_ = false, extras_default_ = false;
  std::string_view key_ = kUriMarker;
  Msg msg_;
  std::string carry_;
  std::string ack_text_;
};

}  // namespace mcpload

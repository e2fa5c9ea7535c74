// SSE stream reading: HTTP head, chunked framing, `event:`/`data:` lines.
#include <algorithm>
#include <cctype>

#include "fd_io.h"
#include "harness.h"

namespace itest {

// ---------------------------------------------------------------- SseParser

void SseParser::Feed(std::string_view text) {
  partial_.append(text);
  size_t pos = 0;
  for (;;) {
    size_t nl = partial_.find('\n', pos);
    if (nl == std::string::npos) break;
    std::string_view line(partial_.data() + pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line);
    pos = nl + 1;
  }
  partial_.erase(0, pos);
}

void SseParser::Line(std::string_view line) {
  if (line.empty()) {  // dispatch
    if (have_data_) events.push_back(std::move(cur_));
    cur_ = SseEvent{};
    have_data_ = false;
    return;
  }
  if (line.front() == ':') {
    line.remove_prefix(1);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    comments.emplace_back(line);
    return;
  }
  size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view{} : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (have_data_) cur_.data.push_back('\n');
    cur_.data.append(value);
    have_data_ = true;
  } else if (field == "event") {
    cur_.event = std::string(value);
  } else if (field == "id") {
    id_lines.emplace_back(line);
    cur_.id = std::string(value);
  }
  // `retry` and unknown fields are ignored, as the SSE spec says.
}

// ---------------------------------------------------------------- SseStream

bool SseStream::is_sse() const {
  return head_done_ && head_.status == 200 && head_.ContentTypeIs("text/event-stream");
}

bool SseStream::Start(int port, std::string_view request, std::string* err) {
  return conn_.Connect(port, kIo, err) && conn_.Send(request, kIo, err);
}

bool SseStream::Open(int port, std::string_view request, Ms timeout, std::string* err) {
  Deadline end = After(timeout);
  if (!Start(port, request, err)) return false;
  while (!head_done_) {
    if (!protocol_error_.empty()) break;
    int r = conn_.ReadSome(end);
    Pump();
    if (r <= 0 && !head_done_) {
      if (err) {
        *err = r == -1 ? "timed out waiting for the response head"
                       : "connection closed before a response head";
      }
      return false;
    }
  }
  if (!protocol_error_.empty()) {
    if (err) *err = protocol_error_;
    return false;
  }
  if (!is_sse()) return conn_.ReadBody(head_, end, err);
  return true;
}

void SseStream::Pump() {
  while (!head_done_) {
    std::string perr;
    if (!ParseResponseHead(conn_.in(), head_, &perr)) {
      if (!perr.empty()) protocol_error_ = perr;
      return;
    }
    if (head_.status >= 200) head_done_ = true;
  }
  if (!is_sse() || ended_) return;
  if (head_.chunked) {
    chunks_.Feed(conn_.in(), decoded_);
    if (chunks_.failed() && protocol_error_.empty()) protocol_error_ = chunks_.error();
    if (chunks_.done()) ended_ = true;
    sse_.Feed(decoded_);
    decoded_.clear();
  } else {
    sse_.Feed(conn_.in());
    conn_.in().clear();
    if (conn_.eof()) ended_ = true;
  }
}

bool SseStream::ReadAvailable() {
  bool alive = conn_.ReadAvailable();
  Pump();
  return alive;
}

bool SseStream::ReadFor(Deadline deadline) {
  int r = conn_.ReadSome(deadline);
  Pump();
  return r > 0;
}

std::optional<SseEvent> SseStream::Next(Ms timeout) {
  Deadline end = After(timeout);
  for (;;) {
    if (!sse_.events.empty()) {
      SseEvent e = std::move(sse_.events.front());
      sse_.events.pop_front();
      if (!e.id.empty()) last_event_id_ = e.id;
      return e;
    }
    if (ended_ || conn_.eof() || !protocol_error_.empty() || Clock::now() >= end) return std::nullopt;
    ReadFor(end);
  }
}

std::optional<Json> SseStream::NextMessage(Ms timeout, std::string* err) {
  auto ev = Next(timeout);
  // A session stream's priming event (an id, empty data) is no message: skip it.
  while (allow_ids_ && ev && ev->data.empty()) ev = Next(timeout);
  if (!allow_ids_ && !sse_.id_lines.empty()) {  // listens must never carry ids (no resumption)
    if (err) *err = "SSE id field on the stream: '" + sse_.id_lines.front() + "'";
    return std::nullopt;
  }
  if (!ev) {
    if (err) {
      *err = !protocol_error_.empty() ? "stream framing error: " + protocol_error_
             : ended_                 ? "stream ended"
             : conn_.eof()            ? "connection closed"
                                      : "no event within " + std::to_string(timeout.count()) + " ms";
    }
    return std::nullopt;
  }
  if (ev->event != "message") {
    if (err) *err = "event type is '" + ev->event + "', want 'message'; data: " + ev->data;
    return std::nullopt;
  }
  Json j(ev->data);
  if (!j.ok()) {
    if (err) *err = "event data is not JSON (" + j.error() + "): " + ev->data;
    return std::nullopt;
  }
  return j;
}

bool SseStream::WaitEnd(Ms timeout) {
  Deadline end = After(timeout);
  while (!(ended_ && conn_.eof())) {
    if (!protocol_error_.empty()) return false;
    int r = conn_.ReadSome(end);
    Pump();
    if (r < 0) return false;
    if (r == 0 && !ended_) return false;  // closed without the chunked terminator
  }
  return true;
}

bool SseStream::WaitComments(size_t n, Ms timeout) {
  Deadline end = After(timeout);
  while (sse_.comments.size() < n) {
    if (ended_ || conn_.eof() || Clock::now() >= end) return false;
    ReadFor(end);
  }
  return true;
}

size_t PumpAll(const std::vector<SseStream*>& streams,
               const std::function<bool(SseStream&)>& done, Ms timeout) {
  PollEach(
      streams.size(),
      [&](size_t i) {
        SseStream& s = *streams[i];
        s.Pump();
        bool waiting = !(done(s) || s.eof() || s.ended() || !s.conn().open());
        return waiting ? s.conn().fd() : -1;
      },
      [&](size_t i) { streams[i]->ReadAvailable(); }, After(timeout));
  return size_t(std::count_if(streams.begin(), streams.end(), [&](SseStream* s) { return done(*s); }));
}

// ---------------------------------------------------------------- JSON-RPC calls

RpcReply McpCall(int port, const std::string& request, Ms timeout) {
  RpcReply out;
  SseStream s;
  if (!s.Open(port, request, timeout, &out.err)) {
    out.http = s.head();
    return out;
  }
  out.http = s.head();
  if (s.is_sse()) {
    out.via_sse = true;
    auto m = s.NextMessage(timeout, &out.err);
    if (m) out.msg = *m;
    return out;
  }
  out.msg = Json(out.http.body);
  if (!out.msg.ok()) out.err = "response body is not JSON (" + out.msg.error() + "): " + out.http.body.substr(0, 500);
  return out;
}

namespace {
std::string LowerStr(std::string_view s) {
  std::string o(s);
  for (char& c : o) c = char(std::tolower(static_cast<unsigned char>(c)));
  return o;
}
}  // namespace

::testing::AssertionResult IsRpcError(const RpcReply& r, int http_status, int64_t code,
                                      std::string_view id_json,
                                      std::vector<std::string_view> message_words) {
  auto fail = [&]() {
    return ::testing::AssertionFailure() << "[HTTP " << r.http.status << " "
                                         << r.http.Get("content-type").value_or("<no content-type>")
                                         << (r.via_sse ? " via SSE" : "") << "] body: "
                                         << (r.msg.ok() ? r.msg.text() : r.http.body.substr(0, 500))
                                         << "\n  ";
  };
  if (!r.err.empty() && !r.msg.ok()) return fail() << "transport/parse error: " << r.err;
  if (r.http.status != http_status) return fail() << "want HTTP " << http_status;
  if (r.via_sse || !r.http.ContentTypeIs("application/json")) {
    return fail() << "want Content-Type application/json";
  }
  if (r.msg.GetString({"jsonrpc"}) != std::optional<std::string>("2.0")) return fail() << "want jsonrpc \"2.0\"";
  if (r.msg.Has({"result"})) return fail() << "an error reply must not have a result";
  // id_json may list alternatives as "a|b" (e.g. "1|null": echoed or null).
  bool id_ok = false;
  std::string id_why;
  for (size_t start = 0; start <= id_json.size();) {
    size_t bar = id_json.find('|', start);
    std::string_view alt = id_json.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start);
    auto m = JsonMatches(r.msg.Get({"id"}), alt);
    if (m) id_ok = true;
    id_why = m.message();
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  if (!id_ok) return fail() << "id: want " << id_json << "; " << id_why;
  auto c = r.msg.GetInt({"error", "code"});
  if (!c || *c != code) return fail() << "want error.code " << code;
  auto msg = r.msg.GetString({"error", "message"});
  if (!msg || msg->empty()) return fail() << "want a non-empty error.message";
  if (!message_words.empty()) {
    std::string lower = LowerStr(*msg);
    bool any = std::any_of(message_words.begin(), message_words.end(), [&](std::string_view w) {
      return lower.find(LowerStr(w)) != std::string::npos;
    });
    if (!any) {
      auto f = fail() << "error.message should name the problem (one of:";
      for (auto w : message_words) f << " '" << w << "'";
      return f << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace itest

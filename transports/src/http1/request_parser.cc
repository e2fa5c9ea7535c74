#include "http1/request_parser.h"

#include <climits>
#include <cstdio>

#include "http/field_syntax.h"

namespace mcpfan::detail {

namespace {

// A field name for an error message: at most 48 bytes, anything not printable as \xNN, so
// that what a client sent cannot break the answer it gets.
std::string printable(std::string_view s) {
  std::string out;
  for (char ch : s.substr(0, 48)) {
    auto u = static_cast<unsigned char>(ch);
    if (u >= 0x21 && u < 0x7f && ch != '"' && ch != '\\') {
      out += ch;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", u);
      out += hex;
    }
  }
  if (s.size() > 48) out += "...";
  return out;
}

std::string_view trim_ows(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

}  // namespace

const http_parser_settings RequestParser::kSettings = [] {
  http_parser_settings s{};
  s.on_message_begin = &RequestParser::on_message_begin;
  s.on_url = &RequestParser::on_url;
  s.on_header_field = &RequestParser::on_header_field;
  s.on_header_value = &RequestParser::on_header_value;
  s.on_headers_complete = &RequestParser::on_headers_complete;
  s.on_body = &RequestParser::on_body;
  s.on_message_complete = &RequestParser::on_message_complete;
  return s;
}();

RequestParser::RequestParser(Events& events, RequestLimits limits, bool keep_fields)
    : events_(events), limits_(limits), keep_fields_(keep_fields) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
}

RequestParser::Status RequestParser::execute(const char* data, std::size_t len, std::size_t& consumed) {
  buf_end_ = data + len;
  consumed = http_parser_execute(&parser_, &kSettings, data, len);
  if (failed_) return Status::Failed;
  auto err = HTTP_PARSER_ERRNO(&parser_);
  if (err == HPE_PAUSED) return Status::Paused;
  if (err != HPE_OK) {
    if (!rejected_) {
      rejected_ = true;
      // Not framed: a HEAD only when its head was read whole. A rule of ours broken earlier in
      // the head names the problem better than http_parser's error.
      rejection_ = {
          deferred_ ? deferred_->status : 400, std::nullopt,
          deferred_ ? deferred_->message : std::string("malformed HTTP request: ") + http_errno_description(err),
          in_trailers_ && parser_.method == HTTP_HEAD};
    }
    return Status::Rejected;
  }
  return Status::Ok;
}

void RequestParser::pause() noexcept {
  // http_parser asserts when paused after an error; a rejected request has stopped it anyway.
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_OK) http_parser_pause(&parser_, 1);
}

void RequestParser::resume() noexcept {
  if (HTTP_PARSER_ERRNO(&parser_) == HPE_PAUSED) http_parser_pause(&parser_, 0);
}

bool RequestParser::keep_alive() const noexcept { return http_should_keep_alive(&parser_) != 0; }

void RequestParser::release_memory() {
  req_.clear();
  req_.body.shrink_to_fit();
  req_.fields.shrink_to_fit();
  field_.clear();
  field_.shrink_to_fit();
  value_.clear();
  value_.shrink_to_fit();
}

template <class F>
int RequestParser::step(http_parser* p, F&& f) noexcept {
  auto* self = static_cast<RequestParser*>(p->data);
  try {
    return f(self);
  } catch (...) {
    // Unwinding through http_parser (C, built without unwind tables) would terminate the
    // process: the parser stops instead, and the owner closes the connection.
    self->failed_ = true;
    return -1;
  }
}

int RequestParser::reject(int status, std::optional<Limit> limit, std::string message) {
  rejected_ = true;
  rejection_ = {status, limit, std::move(message), in_trailers_ && parser_.method == HTTP_HEAD};
  return -1;
}

int RequestParser::defer(int status, std::string message) {
  if (!deferred_) deferred_ = Deferred{status, std::move(message)};
  field_.clear();
  value_.clear();
  return 0;
}

int RequestParser::count_head_bytes(std::size_t len) {
  req_.header_bytes += len;
  if (req_.header_bytes <= limits_.max_header_bytes) return 0;
  return reject(431, Limit::HeaderBytes,
                "request headers longer than " + std::to_string(limits_.max_header_bytes) + " bytes");
}

int RequestParser::commit_field() {
  std::string_view name = field_;
  if (!is_token(name)) {
    return defer(
        400, "header field name \"" + printable(name) +
                 "\" is not a token (RFC 9110 §5.1): no whitespace before the colon, no separators or control bytes");
  }
  std::string_view v = trim_ows(value_);
  if (!is_clean_field_value(v)) {
    return defer(400, "the value of header field " + std::string(name) + " holds a control byte (CR, LF, NUL or DEL)");
  }
  std::string* dst = req_.named_field(name);
  if (dst == &req_.host && !req_.host.empty()) return defer(400, "more than one Host header field (RFC 9112 §3.2)");
  if (dst) {
    if (!dst->empty()) *dst += ", ";  // a repeated field combines as a list
    *dst += v;
  }
  if (keep_fields_) req_.fields.push_back({field_, std::string(v)});
  field_.clear();
  value_.clear();
  return 0;
}

int RequestParser::on_message_begin(http_parser* p) {
  return step(p, [&](RequestParser* self) -> int {
    self->req_.clear();
    self->field_.clear();
    self->value_.clear();
    self->in_value_ = false;
    self->value_at_end_ = false;
    self->in_trailers_ = false;
    self->deferred_.reset();
    self->events_.request_begun();
    return 0;
  });
}

int RequestParser::on_url(http_parser* p, const char* at, std::size_t len) {
  return step(p, [&](RequestParser* self) -> int {
    self->req_.url.append(at, len);
    if (self->req_.url.size() <= self->limits_.max_url_length) return 0;
    return self->reject(414, Limit::UrlLength,
                        "request target longer than " + std::to_string(self->limits_.max_url_length) + " bytes");
  });
}

int RequestParser::on_header_field(http_parser* p, const char* at, std::size_t len) {
  return step(p, [&](RequestParser* self) -> int {
    if (self->count_head_bytes(len) != 0) return -1;
    if (self->in_trailers_) return 0;  // read, counted, dropped
    if (self->in_value_) {
      self->in_value_ = false;
      if (self->commit_field() != 0) return -1;
    }
    self->field_.append(at, len);
    return 0;
  });
}

int RequestParser::on_header_value(http_parser* p, const char* at, std::size_t len) {
  return step(p, [&](RequestParser* self) -> int {
    if (self->count_head_bytes(len) != 0) return -1;
    if (self->in_trailers_) return 0;
    // http_parser ends a value's callback at its line's end or at the end of the bytes it was
    // given. A second value callback in a row after one that ended at a line's end is an
    // obs-fold continuation, which this build of http_parser joins silently.
    if (self->in_value_ && !self->value_at_end_) {
      return self->defer(
          400,
          "obsolete line folding (a header field value continued on the next line) is not accepted (RFC 9112 §5.2)");
    }
    self->in_value_ = true;
    self->value_at_end_ = at + len == self->buf_end_;
    self->value_.append(at, len);
    return 0;
  });
}

int RequestParser::on_headers_complete(http_parser* p) {
  return step(p, [&](RequestParser* self) -> int {
    if (self->in_value_ || !self->field_.empty()) {
      self->in_value_ = false;
      if (self->commit_field() != 0) return -1;
    }
    self->in_trailers_ = true;  // whatever fields follow (after a chunked body) are trailers
    self->req_.method = p->method;
    if (self->deferred_) return self->reject(self->deferred_->status, std::nullopt, self->deferred_->message);
    // A tunnel is not served: after a CONNECT, http_parser would read the tunnelled bytes as
    // the next request, which is not what the client meant by them.
    if (p->method == HTTP_CONNECT)
      return self->reject(405, std::nullopt, "CONNECT is not served here (mcpfan is not a tunnel)");
    // request-target (RFC 9112 §3.2) is visible ASCII; this build of http_parser also takes
    // bytes above 0x7F and HTAB, which a strict upstream refuses (found by forward_diff.mjs).
    for (char ch : self->req_.url) {
      auto u = static_cast<unsigned char>(ch);
      if (u <= 0x20 || u >= 0x7f) {
        return self->reject(
            400, std::nullopt,
            "the request target holds a byte that is not visible ASCII (RFC 9112 §3.2; percent-encode it)");
      }
    }
    // http_parser sets content_length to ULLONG_MAX when the field is absent.
    if (p->content_length != ULLONG_MAX && p->content_length > self->limits_.max_body) {
      return self->reject(413, Limit::BodyBytes,
                          "request body larger than " + std::to_string(self->limits_.max_body) + " bytes");
    }
    if (!self->req_.expect.empty() && !ieq(self->req_.expect, "100-continue")) {
      return self->reject(417, std::nullopt, "unsupported Expect header");
    }
    self->events_.head_parsed(self->req_);
    return 0;
  });
}

int RequestParser::on_body(http_parser* p, const char* at, std::size_t len) {
  return step(p, [&](RequestParser* self) -> int {
    if (self->req_.body.size() + len > self->limits_.max_body) {
      return self->reject(413, Limit::BodyBytes,
                          "request body larger than " + std::to_string(self->limits_.max_body) + " bytes");
    }
    self->req_.body.append(at, len);
    return 0;
  });
}

int RequestParser::on_message_complete(http_parser* p) {
  return step(p, [&](RequestParser* self) -> int {
    self->in_trailers_ = false;  // nothing of this request is read any more: an error now is not its
    self->deferred_.reset();
    self->events_.request_complete(self->req_);
    // One request at a time: the owner answers it (or hands it on) before the next is read.
    self->pause();
    return 0;
  });
}

}  // namespace mcpfan::detail

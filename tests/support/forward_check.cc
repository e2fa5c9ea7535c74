#include "support/forward_check.h"

#include <http_parser.h>

#include "http/field_syntax.h"
#include "http/upstream_request.h"

namespace mcpfan::testing {

using detail::Field;
using detail::HttpRequest;

const detail::proxy::UpstreamTarget& check_target() {
  static const detail::proxy::UpstreamTarget t{"127.0.0.1", 8000, "/mcp", "127.0.0.1:8000"};
  return t;
}

namespace {

class Recorder final : public detail::RequestParser::Events {
 public:
  explicit Recorder(ForwardedCase& out) : out_(out) {}
  void request_begun() override {}
  void head_parsed(HttpRequest&) override {}
  void request_complete(HttpRequest& req) override {
    ForwardedCase::One one;
    one.parsed = req;
    one.forwarded = detail::upstream_request(req, check_target());
    one.method = http_method_str(static_cast<http_method>(req.method));
    one.target = check_target().path;
    if (std::size_t q = req.url.find('?'); q != std::string::npos) one.target.append(req.url, q);
    one.fields.push_back({"Host", check_target().authority});
    for (const Field& f : req.fields) {
      if (detail::forwardable_field(f.name, req.connection)) one.fields.push_back(f);
    }
    if (!req.body.empty() || req.method == HTTP_POST || req.method == HTTP_PUT || req.method == HTTP_PATCH) {
      one.fields.push_back({"Content-Length", std::to_string(req.body.size())});
    }
    out_.requests.push_back(std::move(one));
  }

 private:
  ForwardedCase& out_;
};

std::string describe(const ForwardedCase::One& one) { return one.method + " " + one.parsed.url; }

}  // namespace

ForwardedCase parse_and_forward(std::string_view bytes, std::size_t piece) {
  if (piece == 0) piece = bytes.size() == 0 ? 1 : bytes.size();
  std::vector<std::string_view> reads;
  for (std::size_t off = 0; off < bytes.size(); off += piece) reads.push_back(bytes.substr(off, piece));
  return parse_and_forward(reads);
}

ForwardedCase parse_and_forward(const std::vector<std::string_view>& reads) {
  ForwardedCase out;
  Recorder rec(out);
  detail::RequestLimits limits;  // the server's defaults
  detail::RequestParser parser(rec, limits, /*keep_fields=*/true);
  std::string buf;  // what the parser has not consumed yet, as a connection carries it into its next read
  std::size_t next = 0;
  for (int guard = 0; guard < 1'000'000 && (next < reads.size() || !buf.empty()); ++guard) {
    if (next < reads.size()) buf.append(reads[next++]);
    if (buf.empty()) continue;  // a connection has no empty reads (a zero-length execute would mean EOF)
    std::size_t used = 0;
    auto st = parser.execute(buf.data(), buf.size(), used);
    buf.erase(0, used);
    if (st == detail::RequestParser::Status::Paused) {
      parser.resume();
      continue;
    }
    if (st == detail::RequestParser::Status::Rejected) {
      out.rejection = parser.rejection();
      break;
    }
    if (st == detail::RequestParser::Status::Failed) {
      out.failed = true;
      break;
    }
    if (used == 0 && next >= reads.size()) break;  // an unfinished request: more bytes would come
  }
  return out;
}

std::optional<std::string> compare_cases(const ForwardedCase& a, const ForwardedCase& b) {
  if (a.failed != b.failed) return std::string("one parse threw, the other did not");
  if (a.rejection.has_value() != b.rejection.has_value())
    return std::string("one parse rejected the input, the other did not");
  if (a.rejection && a.rejection->status != b.rejection->status) {
    return "rejected with " + std::to_string(a.rejection->status) + " vs " + std::to_string(b.rejection->status);
  }
  if (a.requests.size() != b.requests.size()) {
    return std::to_string(a.requests.size()) + " vs " + std::to_string(b.requests.size()) + " requests";
  }
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    if (a.requests[i].forwarded.bytes != b.requests[i].forwarded.bytes) {
      return "request " + std::to_string(i) + " (" + describe(a.requests[i]) + ") is forwarded differently";
    }
  }
  return std::nullopt;
}

std::optional<std::string> read_strict(std::string_view& in, StrictRequest& out) {
  auto line = [&](std::string_view& l) -> bool {
    std::size_t crlf = in.find("\r\n");
    if (crlf == std::string_view::npos) return false;
    l = in.substr(0, crlf);
    in.remove_prefix(crlf + 2);
    return true;
  };
  auto clean = [](std::string_view s) {  // no bare CR or LF anywhere in a line
    return s.find('\r') == std::string_view::npos && s.find('\n') == std::string_view::npos;
  };
  std::string_view l;
  if (!line(l) || !clean(l)) return "no request line ending in CRLF";
  std::size_t sp1 = l.find(' '), sp2 = l.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2) return "a request line without method, target and version";
  out.method = std::string(l.substr(0, sp1));
  out.target = std::string(l.substr(sp1 + 1, sp2 - sp1 - 1));
  if (!detail::is_token(out.method)) return "the method is not a token";
  if (out.target.empty() || out.target[0] != '/') return "the target is not origin-form";
  for (char ch : out.target) {
    auto u = static_cast<unsigned char>(ch);
    if (u <= 0x20 || u >= 0x7f) return "the target holds a byte outside visible ASCII";
  }
  if (l.substr(sp2 + 1) != "HTTP/1.1") return "the version is not HTTP/1.1";
  std::optional<std::size_t> length;
  for (int guard = 0; guard < 100'000; ++guard) {
    if (!line(l) || !clean(l)) return "a field line not ending in CRLF";
    if (l.empty()) break;
    if (l[0] == ' ' || l[0] == '\t') return "obs-fold";
    std::size_t colon = l.find(':');
    if (colon == std::string_view::npos) return "a field line without a colon";
    std::string_view name = l.substr(0, colon), value = l.substr(colon + 1);
    if (!detail::is_token(name)) return "the field name \"" + std::string(name) + "\" is not a token";
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (!detail::is_clean_field_value(value)) return "the value of " + std::string(name) + " holds a control byte";
    if (detail::ieq(name, "transfer-encoding")) return "a Transfer-Encoding field (mcpfan frames with Content-Length)";
    if (detail::ieq(name, "content-length")) {
      if (length) return "two Content-Length fields";
      if (value.empty() || value.find_first_not_of("0123456789") != std::string_view::npos || value.size() > 15) {
        return "a Content-Length that is not a number";
      }
      length = std::stoull(std::string(value));
    }
    out.fields.push_back({std::string(name), std::string(value)});
  }
  std::size_t n = length.value_or(0);
  if (in.size() < n) return "a body shorter than its Content-Length";
  out.body = std::string(in.substr(0, n));
  in.remove_prefix(n);
  return std::nullopt;
}

std::optional<std::string> strict_mismatch(const ForwardedCase::One& one) {
  std::string_view in = one.forwarded.bytes;
  StrictRequest got;
  if (auto err = read_strict(in, got)) return describe(one) + ": the forwarded bytes are not strict HTTP/1.1: " + *err;
  if (!in.empty()) return describe(one) + ": bytes after the forwarded request";
  if (got.method != one.method) return describe(one) + ": method read as " + got.method;
  if (got.target != one.target) return describe(one) + ": target read as " + got.target + ", not " + one.target;
  if (got.body != one.parsed.body) return describe(one) + ": the body differs";
  if (got.fields.size() != one.fields.size()) {
    return describe(one) + ": " + std::to_string(got.fields.size()) + " fields read, " +
           std::to_string(one.fields.size()) + " expected";
  }
  for (std::size_t i = 0; i < got.fields.size(); ++i) {
    if (got.fields[i].name != one.fields[i].name || got.fields[i].value != one.fields[i].value) {
      return describe(one) + ": field " + std::to_string(i) + " read as " + got.fields[i].name + ": " +
             got.fields[i].value + ", expected " + one.fields[i].name + ": " + one.fields[i].value;
    }
  }
  return std::nullopt;
}

}  // namespace mcpfan::testing

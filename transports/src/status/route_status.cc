#include <openssl/evp.h>
#include <openssl/sha.h>

#include <chrono>

#include "http/exchange.h"
#include "http/router.h"
#include "mcp/messages.h"
#include "server/loop_context.h"
#include "status/status.h"

// GET /status and GET /status.json. The page carries its script and style inline and the
// Content-Security-Policy allows exactly those two (by their SHA-256) and fetches to this
// origin: nothing else loads, runs or leaves.
namespace mcpfan::detail {

namespace {

constexpr std::string_view kPagePath = "/status";
constexpr std::string_view kJsonPath = "/status.json";

/** CSP source expression 'sha256-<base64>' of the text between `open` and `close` in the page. */
std::string inline_hash(std::string_view open, std::string_view close) {
  std::size_t b = kStatusPage.find(open);
  std::size_t e = b == std::string_view::npos ? b : kStatusPage.find(close, b + open.size());
  if (e == std::string_view::npos) return "'none'";  // a page without it: allow none
  std::string_view text = kStatusPage.substr(b + open.size(), e - b - open.size());
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char b64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  int n = EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<const char*>(b64), static_cast<std::size_t>(n)) + "'";
}

/** The page's headers, computed once (the page is fixed at build time). */
const std::vector<Field>& page_headers() {
  static const std::vector<Field> headers = {
      {"Cache-Control", "no-cache"},
      {"Content-Security-Policy", "default-src 'none'; script-src " + inline_hash("<script>", "</script>") +
                                      "; style-src " + inline_hash("<style>", "</style>") +
                                      "; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; "
                                      "frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
  };
  return headers;
}

std::int64_t ms_since_epoch(auto now) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
}

}  // namespace

bool is_status_path(std::string_view path) noexcept { return path == kPagePath || path == kJsonPath; }

void route_status(Exchange& c, const HttpRequest& req, std::string_view path) {
  auto method = static_cast<http_method>(req.method);
  if (method != HTTP_GET && method != HTTP_HEAD) {
    c.respond(405, "application/json", json_error_body("method not allowed; use GET, HEAD"), {{"Allow", "GET, HEAD"}});
    return;
  }
  if (!may_read_metrics(c, req)) {
    c.respond(403, "application/json",
              json_error_body(std::string(path) + " is served to loopback peers and to publisher keys for \"*\""));
    return;
  }
  if (path == kPagePath) {
    c.respond(200, "text/html; charset=utf-8", std::string(kStatusPage), page_headers());
    return;
  }
  std::string body = render_status_json(c.context().stats_snapshot(), ms_since_epoch(std::chrono::system_clock::now()),
                                        ms_since_epoch(std::chrono::steady_clock::now()));
  c.respond(200, "application/json", body, {{"Cache-Control", "no-store"}, {"X-Content-Type-Options", "nosniff"}});
}

}  // namespace mcpfan::detail

#pragma once
// GET /status (a self-contained HTML page: its script polls /status.json and draws the
// rates) and GET /status.json (the StatsSnapshot of /metrics as JSON, with the time it was
// taken). Same access rule as /metrics (may_read_metrics). Loop-affine: called by the router.
#include <cstdint>
#include <string>
#include <string_view>

#include "server/stats_snapshot.h"

namespace mcpfan::detail {

class Exchange;
struct HttpRequest;

/** Whether `path` is one route_status answers. */
[[nodiscard]] bool is_status_path(std::string_view path) noexcept;
/** Answers a request for /status or /status.json (is_status_path): GET and HEAD, else 405. */
void route_status(Exchange& c, const HttpRequest& req, std::string_view path);

/**
 * The body of /status.json: `s` with `unix_ms` (wall clock, for display) and `mono_ms`
 * (a monotonic clock of arbitrary origin: the page divides counter steps by its steps).
 */
[[nodiscard]] std::string render_status_json(const StatsSnapshot& s, std::int64_t unix_ms, std::int64_t mono_ms);

/** The page (status/page.html, embedded at build time by embed_page.cmake). */
extern const std::string_view kStatusPage;

}  // namespace mcpfan::detail

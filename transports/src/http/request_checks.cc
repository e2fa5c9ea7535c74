#include "http/request_checks.h"

#include "http/field_syntax.h"

namespace mcpfan::detail {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Default allow-list: browsers on this machine only (DNS-rebinding protection).
bool default_origin_ok(std::string_view origin) {
  std::string_view rest;
  if (istarts_with(origin, "http://")) rest = origin.substr(7);
  else if (istarts_with(origin, "https://")) rest = origin.substr(8);
  else return false;
  for (std::string_view host : {"localhost", "127.0.0.1", "[::1]"}) {
    if (istarts_with(rest, host)) {
      std::string_view after = rest.substr(host.size());
      if (after.empty()) return true;
      if (after[0] != ':' || after.size() == 1) return false;
      for (char c : after.substr(1)) {
        if (c < '0' || c > '9') return false;
      }
      return true;
    }
  }
  return false;
}

// The host part of a Host header: "127.0.0.1:8080" -> "127.0.0.1", "[::1]:80" -> "[::1]".
std::string_view host_part(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    auto close = host.find(']');
    return close == std::string_view::npos ? host : host.substr(0, close + 1);
  }
  return host.substr(0, host.find(':'));
}

}  // namespace

bool is_json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view media = trim(ct.substr(0, semi));
  return ieq(media, "application/json");
}

bool accepts_mcp(std::string_view accept) {
  if (accept.empty()) return true;
  for (std::string_view t : {"application/json", "text/event-stream", "*/*", "application/*", "text/*"}) {
    if (icontains(accept, t)) return true;
  }
  return false;
}

bool origin_allowed(const ServerConfig& cfg, std::string_view origin) {
  if (origin.empty()) return true;  // not a browser: Origin is what a rebinding page cannot hide
  if (cfg.http.allow_origins.empty()) return default_origin_ok(origin);
  for (const std::string& o : cfg.http.allow_origins) {
    if (o == "*" || ieq(o, origin)) return true;
  }
  return false;
}

bool host_allowed(const ServerConfig& cfg, std::string_view host_header, std::string_view listener_host) {
  if (host_header.empty()) return true;  // HTTP/1.0: nothing a rebinding page could set
  std::string_view h = host_part(host_header);
  auto eq = ieq;
  if (cfg.http.allow_hosts.empty()) {
    bool loopback_listener = listener_host.rfind("127.", 0) == 0 || listener_host == "::1";
    if (!loopback_listener) return true;  // --insecure without --allow-host: the operator chose an open listener
    return eq(h, "localhost") || eq(h, "127.0.0.1") || eq(h, "[::1]") || eq(h, listener_host);
  }
  for (const std::string& a : cfg.http.allow_hosts) {
    if (a == "*" || eq(a, h) || eq(a, host_header)) return true;
  }
  return false;
}


}  // namespace mcpfan::detail

#include "oauth/metadata.h"

#include "mcpfan/json_text.h"
#include "oauth/claims.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace mcpfan::detail::oauth {

namespace {

Error metadata_error(std::string message) {
  return Error{rpc_code::kInvalidParams, "authorization server metadata: " + std::move(message)};
}

bool starts_with_nocase(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), s.begin(), [](char a, char b) {
           return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
         });
}

bool http_url(std::string_view s) noexcept {
  std::string_view rest;
  if (s.substr(0, 8) == "https://") {
    rest = s.substr(8);
  } else if (s.substr(0, 7) == "http://") {
    rest = s.substr(7);
  } else {
    return false;
  }
  return !rest.empty() && rest.front() != '/';  // a host is there
}

bool unique_members(simdjson::dom::object obj) {
  std::vector<std::string_view> keys;
  for (auto field : obj) keys.push_back(field.key);
  std::sort(keys.begin(), keys.end());
  return std::adjacent_find(keys.begin(), keys.end()) == keys.end();
}

}  // namespace

Result<ServerMetadata> parse_server_metadata(std::string_view json, std::string_view expected_issuer) {
  if (json.size() > kMaxMetadataBytes) {
    return metadata_error("document of " + std::to_string(json.size()) + " bytes, over the " +
                          std::to_string(kMaxMetadataBytes) + " accepted");
  }
  simdjson::dom::parser parser;  // fetched at start and on refresh: not worth a kept parser
  simdjson::dom::object doc;
  // An empty view may have a null data(), which simdjson would memcpy from.
  if (json.empty() || parser.parse(json.data(), json.size()).get(doc)) return metadata_error("not a JSON object");
  if (!unique_members(doc)) return metadata_error("a member name appears twice");
  ServerMetadata out;
  std::string_view s;
  if (doc["issuer"].get_string().get(s)) return metadata_error("no issuer string");
  if (s != expected_issuer) {
    return metadata_error("issuer is not the configured one (" + std::string(expected_issuer) +
                          "); RFC 8414 §3.3 requires them equal");
  }
  out.issuer = std::string(s);
  if (doc["jwks_uri"].get_string().get(s)) return metadata_error("no jwks_uri string");
  if (!http_url(s)) return metadata_error("jwks_uri is not an http(s) URL");
  out.jwks_uri = std::string(s);
  simdjson::dom::element v;
  if (!doc["introspection_endpoint"].get(v)) {
    if (v.get_string().get(s) || !http_url(s)) return metadata_error("introspection_endpoint is not an http(s) URL");
    out.introspection_endpoint = std::string(s);
  }
  if (!doc["scopes_supported"].get(v)) {
    simdjson::dom::array list;
    if (v.get_array().get(list)) return metadata_error("scopes_supported is not an array");
    for (auto item : list) {
      if (item.get_string().get(s)) return metadata_error("scopes_supported holds a non-string");
      out.scopes_supported.emplace_back(s);
    }
  }
  return out;
}

std::vector<std::string> discovery_urls(std::string_view issuer) {
  std::size_t scheme_len;
  if (issuer.substr(0, 8) == "https://") {
    scheme_len = 8;
  } else if (issuer.substr(0, 7) == "http://") {
    scheme_len = 7;
  } else {
    return {};
  }
  if (issuer.find_first_of("?#") != std::string_view::npos) return {};  // RFC 8414 §2: no query, no fragment
  std::size_t slash = issuer.find('/', scheme_len);
  std::string_view origin = issuer.substr(0, slash);  // scheme://host[:port]
  if (origin.size() == scheme_len) return {};
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : issuer.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string base(origin);
  return {base + "/.well-known/oauth-authorization-server" + std::string(path),
          base + std::string(path) + "/.well-known/openid-configuration"};
}

std::optional<std::uint64_t> cache_max_age(std::string_view cc) noexcept {
  std::optional<std::uint64_t> max_age;
  bool no_store = false;
  while (!cc.empty()) {
    auto comma = cc.find(',');
    std::string_view d = cc.substr(0, comma);
    cc = comma == std::string_view::npos ? std::string_view{} : cc.substr(comma + 1);
    while (!d.empty() && (d.front() == ' ' || d.front() == '\t')) d.remove_prefix(1);
    while (!d.empty() && (d.back() == ' ' || d.back() == '\t')) d.remove_suffix(1);
    if (starts_with_nocase(d, "no-store") && d.size() == 8) no_store = true;
    // no-cache may carry field names (no-cache="set-cookie"); any form means "check again first".
    if (starts_with_nocase(d, "no-cache") && (d.size() == 8 || d[8] == '=')) no_store = true;
    if (starts_with_nocase(d, "max-age=")) {
      std::string_view n = d.substr(8);
      if (n.size() >= 2 && n.front() == '"' && n.back() == '"') n = n.substr(1, n.size() - 2);
      if (n.empty() || !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
      std::uint64_t value = 0;
      constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
      for (char c : n) {
        auto digit = static_cast<std::uint64_t>(c - '0');
        value = value > (kMax - digit) / 10 ? kMax : value * 10 + digit;  // RFC 9111 §1.2.2: saturate
      }
      if (!max_age) max_age = value;  // the first one counts
    }
  }
  if (no_store) return 0;
  return max_age;
}

std::string protected_resource_metadata(std::string_view resource,
                                        const std::vector<std::string>& authorization_servers,
                                        const std::vector<std::string>& scopes) {
  auto string_array = [](std::string& out, const std::vector<std::string>& items) {
    out.push_back('[');
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out.push_back(',');
      append_json_string(out, items[i]);
    }
    out.push_back(']');
  };
  std::string out = "{\"resource\":";
  append_json_string(out, resource);
  out += ",\"authorization_servers\":";
  string_array(out, authorization_servers);
  if (!scopes.empty()) {
    out += ",\"scopes_supported\":";
    string_array(out, scopes);
  }
  out += ",\"bearer_methods_supported\":[\"header\"]}";
  return out;
}

TokenVerdict read_introspection(std::string_view json, const TokenPolicy& policy, std::int64_t now_unix_s) {
  if (json.size() > kMaxIntrospectionBytes) {
    return TokenError{TokenFailure::Malformed,
                      "introspection answer over " + std::to_string(kMaxIntrospectionBytes) + " bytes"};
  }
  // Answers come one per uncached token, on whichever thread asked: one parser per thread.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object doc;
  if (json.empty() || parser.parse(json.data(), json.size()).get(doc) || !unique_members(doc)) {
    return TokenError{TokenFailure::Malformed, "introspection answer is not a JSON object with unique members"};
  }
  bool active = false;
  if (doc["active"].get_bool().get(active)) {
    return TokenError{TokenFailure::Malformed, "introspection answer has no boolean active"};
  }
  if (!active) return TokenError{TokenFailure::Inactive, "the authorization server says the token is not active"};
  AccessClaims claims;
  // RFC 7662 §2.2: everything but `active` is optional; what is there must still fit the policy.
  if (auto e = read_access_claims(doc, policy, now_unix_s, ClaimRequirements{false, false, false}, claims)) {
    return std::move(*e);
  }
  return claims;
}

}  // namespace mcpfan::detail::oauth

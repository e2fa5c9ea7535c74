#include "nats/subjects.h"

namespace mcpfan::detail::nats {
namespace {

constexpr char kBase64Url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
constexpr char kHexUpper[] = "0123456789ABCDEF";

constexpr bool plain_byte(unsigned char c) noexcept {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

std::size_t escaped_size(std::string_view tenant) noexcept {
  std::size_t n = 0;
  for (unsigned char c : tenant) n += plain_byte(c) ? 1 : 3;
  return n;
}

// <prefix>.v1.<tenant>.
void append_head(std::string& out, std::string_view prefix, std::string_view tenant) {
  out.append(prefix);
  out.push_back('.');
  out.append(kVersionToken);
  out.push_back('.');
  append_tenant_token(out, tenant);
  out.push_back('.');
}

// Appends `.H(0, s)` for the first `max_segments` segments of `uri` that end in a `/`; returns
// the offset just past the last `/` consumed.
std::size_t append_segments(std::string& out, std::string_view uri, std::size_t max_segments) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < max_segments; ++i) {
    std::size_t slash = uri.find('/', start);
    if (slash == std::string_view::npos) break;
    out.push_back('.');
    append_hash_token(out, HashDomain::Segment, uri.substr(start, slash - start));
    start = slash + 1;
  }
  return start;
}

std::size_t count_slashes(std::string_view s, std::size_t limit) noexcept {
  std::size_t n = 0;
  for (char c : s) {
    if (c == '/' && ++n == limit) break;
  }
  return n;
}

// One token of a subject: non-empty, no separator, wildcard, space or control byte.
bool literal_token(std::string_view t) noexcept {
  if (t.empty()) return false;
  for (unsigned char c : t) {
    if (c <= 0x20 || c == 0x7F || c == '.' || c == '*' || c == '>') return false;
  }
  return true;
}

// Calls f(token, is_last) for each `.`-separated token; stops early when f returns false.
template <class F>
bool each_token(std::string_view s, F&& f) {
  std::size_t start = 0;
  for (;;) {
    std::size_t dot = s.find('.', start);
    bool last = dot == std::string_view::npos;
    std::string_view token = s.substr(start, last ? std::string_view::npos : dot - start);
    if (!f(token, last)) return false;
    if (last) return true;
    start = dot + 1;
  }
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t token_hash(std::string_view bytes) noexcept {
  // FNV-1a alone mixes short inputs poorly (one-byte segments share their first bytes); the
  // finalizer is a bijection, so it spreads the bits without adding a single collision.
  std::uint64_t h = fnv1a64(bytes);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

void append_hash_token(std::string& out, HashDomain domain, std::string_view bytes) {
  std::uint64_t h = token_hash(bytes);
  char token[kHashTokenBytes];
  token[0] = kBase64Url[(static_cast<unsigned>(domain) << 4) | static_cast<unsigned>(h >> 60)];
  for (std::size_t i = 1; i < kHashTokenBytes; ++i) {
    token[i] = kBase64Url[(h >> (60 - 6 * i)) & 63u];
  }
  out.append(token, kHashTokenBytes);
}

std::optional<std::string> prefix_error(std::string_view prefix) {
  if (prefix.empty()) return std::string("the NATS subject prefix is empty");
  if (prefix.size() > kMaxPrefixBytes) {
    return "the NATS subject prefix is " + std::to_string(prefix.size()) + " bytes; at most " +
           std::to_string(kMaxPrefixBytes) + " are allowed";
  }
  std::size_t token_start = 0;
  for (std::size_t i = 0; i <= prefix.size(); ++i) {
    if (i == prefix.size() || prefix[i] == '.') {
      if (i == token_start) {
        return "the NATS subject prefix has an empty token at byte " + std::to_string(i) +
               " (tokens are separated by single dots, none first or last)";
      }
      token_start = i + 1;
    } else if (!plain_byte(static_cast<unsigned char>(prefix[i]))) {
      return "the NATS subject prefix has a byte outside [A-Za-z0-9_-] at byte " + std::to_string(i);
    }
  }
  return std::nullopt;
}

void append_tenant_token(std::string& out, std::string_view tenant) {
  if (tenant.empty()) {
    out.append("~e");
    return;
  }
  if (escaped_size(tenant) > kMaxTenantTokenBytes) {
    out.append("~h");
    append_hash_token(out, HashDomain::Tenant, tenant);
    return;
  }
  for (unsigned char c : tenant) {
    if (plain_byte(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      const char esc[3] = {'~', kHexUpper[c >> 4], kHexUpper[c & 15]};
      out.append(esc, 3);
    }
  }
}

std::optional<TenantTokenName> decode_tenant_token(std::string_view token) {
  if (token == "~e") return TenantTokenName{false, std::string()};
  if (token.size() == 2 + kHashTokenBytes && token.substr(0, 2) == "~h") {
    // The first character carries the domain (Tenant: g-v); the rest any base64url.
    const char first = token[2];
    if (first < 'g' || first > 'v') return std::nullopt;
    for (std::size_t i = 3; i < token.size(); ++i) {
      if (!plain_byte(static_cast<unsigned char>(token[i]))) return std::nullopt;  // base64url: [A-Za-z0-9_-]
    }
    return TenantTokenName{true, std::string()};
  }
  if (token.empty() || token.size() > kMaxTenantTokenBytes) return std::nullopt;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;  // lowercase is not the contract's
  };
  std::string name;
  name.reserve(token.size());
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (plain_byte(c)) {
      name.push_back(static_cast<char>(c));
      continue;
    }
    if (c != '~' || i + 2 >= token.size()) return std::nullopt;
    const int hi = hex(token[i + 1]);
    const int lo = hex(token[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    const auto byte = static_cast<unsigned char>((hi << 4) | lo);
    if (plain_byte(byte)) return std::nullopt;  // escaped although it needs none: not canonical
    name.push_back(static_cast<char>(byte));
    i += 2;
  }
  // A name whose escaped form is over 64 bytes is always hashed; this one was not.
  if (escaped_size(name) != token.size()) return std::nullopt;
  return TenantTokenName{false, std::move(name)};
}

std::string tenant_scope(std::string_view prefix, std::string_view tenant) {
  std::string out;
  append_head(out, prefix, tenant);
  out.pop_back();  // the head's trailing '.'
  return out;
}

void append_resource_subject(std::string& out, std::string_view prefix, std::string_view tenant, std::string_view uri) {
  append_head(out, prefix, tenant);
  out.push_back('r');
  // Up to 11 segments that end in a `/`; what is left is the last segment, or with more `/`s
  // in it the folded rest.
  std::size_t rest = append_segments(out, uri, kMaxUriTokens - 1);
  std::string_view tail = uri.substr(rest);
  out.push_back('.');
  bool folded = tail.find('/') != std::string_view::npos;
  append_hash_token(out, folded ? HashDomain::FoldedRest : HashDomain::Segment, tail);
}

void append_resource_interest(std::string& out, std::string_view prefix, std::string_view tenant,
                              std::string_view uri) {
  if (uri.empty() || uri.back() != '/') {
    append_resource_subject(out, prefix, tenant, uri);
    return;
  }
  append_head(out, prefix, tenant);
  out.push_back('r');
  // The segments before the final `/`: all m of them (each ends in a `/`), at most 11.
  append_segments(out, uri, count_slashes(uri, kMaxUriTokens - 1));
  out.append(".>");
}

std::string_view list_token(Kind kind) noexcept { return kind_info(kind).subject_token; }

void append_list_subject(std::string& out, std::string_view prefix, std::string_view tenant, Kind kind) {
  std::string_view token = list_token(kind);
  if (token.empty()) return;
  append_head(out, prefix, tenant);
  out.append("l.");
  out.append(token);
}

void append_task_subject(std::string& out, std::string_view prefix, std::string_view tenant, std::string_view task_id) {
  append_head(out, prefix, tenant);
  out.append("t.");
  append_hash_token(out, HashDomain::Task, task_id);
}

void append_subject(std::string& out, std::string_view prefix, std::string_view tenant, Kind kind,
                    std::string_view key) {
  switch (kind) {
    case Kind::ResourceUpdated: return append_resource_subject(out, prefix, tenant, key);
    case Kind::TaskStatus: return append_task_subject(out, prefix, tenant, key);
    default: return append_list_subject(out, prefix, tenant, kind);
  }
}

std::string interest_of(std::string_view prefix, std::string_view tenant, Kind kind, std::string_view key) {
  std::string out;
  out.reserve(kMaxSubjectBytes);
  if (kind == Kind::ResourceUpdated) append_resource_interest(out, prefix, tenant, key);
  else append_subject(out, prefix, tenant, kind, key);
  return out;
}

std::string heartbeat_subject(std::string_view prefix) {
  std::string out(prefix);
  out += '.';
  out += kVersionToken;
  out += ".~hb";
  return out;
}

std::string resource_subject(std::string_view prefix, std::string_view tenant, std::string_view uri) {
  std::string out;
  out.reserve(kMaxSubjectBytes);
  append_resource_subject(out, prefix, tenant, uri);
  return out;
}

std::string resource_interest(std::string_view prefix, std::string_view tenant, std::string_view uri) {
  std::string out;
  out.reserve(kMaxSubjectBytes);
  append_resource_interest(out, prefix, tenant, uri);
  return out;
}

std::string list_subject(std::string_view prefix, std::string_view tenant, Kind kind) {
  std::string out;
  append_list_subject(out, prefix, tenant, kind);
  return out;
}

bool valid_publish_subject(std::string_view subject) noexcept {
  if (subject.empty() || subject.size() > kMaxSubjectBytes) return false;
  return each_token(subject, [](std::string_view t, bool) { return literal_token(t); });
}

bool valid_interest_subject(std::string_view interest) noexcept {
  if (interest.empty() || interest.size() > kMaxSubjectBytes) return false;
  return each_token(interest, [](std::string_view t, bool last) {
    return t == "*" || (last && t == ">") || literal_token(t);
  });
}

bool subject_matches(std::string_view interest, std::string_view subject) noexcept {
  // Invariant: at the top of the loop both i and s start a token (the previous tokens matched
  // and neither string ended there), so a final `>` always has at least one token to match.
  std::size_t i = 0;
  std::size_t s = 0;
  for (;;) {
    std::size_t idot = interest.find('.', i);
    std::size_t sdot = subject.find('.', s);
    bool ilast = idot == std::string_view::npos;
    bool slast = sdot == std::string_view::npos;
    std::string_view itok = interest.substr(i, ilast ? std::string_view::npos : idot - i);
    if (ilast && itok == ">") return true;
    std::string_view stok = subject.substr(s, slast ? std::string_view::npos : sdot - s);
    if (itok != "*" && itok != stok) return false;
    if (ilast || slast) return ilast && slast;
    i = idot + 1;
    s = sdot + 1;
  }
}

}  // namespace mcpfan::detail::nats

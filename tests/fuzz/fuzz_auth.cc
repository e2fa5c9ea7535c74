#include "fuzz_auth.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_check.h"

namespace mcpfan::fuzz::auth {

namespace {

std::string& temp_dir() {
  static auto* dir = new std::string;  // never destroyed: remove_files() runs from an atexit handler
  return *dir;
}

void write_file(const std::string& path, std::string_view text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr, "cannot write %s: %s", path.c_str(), std::strerror(errno));
  FUZZ_CHECK(std::fwrite(text.data(), 1, text.size(), f) == text.size(), "cannot write %s", path.c_str());
  std::fclose(f);
}

bool token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

// http_parser joins a folded header line (CRLF or LF, then spaces or tabs) to the line before,
// and the server appends the pieces: a token cut by a fold reaches it whole.
std::string unfold(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::size_t j = i;
    if (in[j] == '\r') ++j;
    if (j < in.size() && in[j] == '\n' && j + 1 < in.size() && (in[j + 1] == ' ' || in[j + 1] == '\t')) {
      j += 1;
      while (j < in.size() && (in[j] == ' ' || in[j] == '\t')) ++j;
      i = j - 1;
      continue;
    }
    out.push_back(in[i]);
  }
  return out;
}

std::string b64url(const unsigned char* p, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (std::size_t i = 0; i < n; ++i) {
    acc = (acc << 8) | p[i];
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 63]);
  return out;
}

// "H.P.S" with S the unpadded base64url HMAC-SHA256 of "H.P" under kSecret.
bool signed_with_secret(std::string_view run) {
  auto dot1 = run.find('.');
  auto dot2 = dot1 == std::string_view::npos ? dot1 : run.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || run.find('.', dot2 + 1) != std::string_view::npos) return false;
  std::string_view sig = run.substr(dot2 + 1);
  if (sig.size() != 43) return false;  // 32 bytes, unpadded
  unsigned char mac[EVP_MAX_MD_SIZE];
  std::size_t len = 0;
  FUZZ_CHECK(EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, kSecret.data(), kSecret.size(),
                       reinterpret_cast<const unsigned char*>(run.data()), dot2, mac, sizeof mac, &len),
             "HMAC-SHA256 failed");
  return b64url(mac, len) == sig;
}

}  // namespace

void configure(ServerConfig& c) {
  char tmpl[] = "/tmp/mcpfan-fuzz-auth.XXXXXX";
  FUZZ_CHECK(::mkdtemp(tmpl) != nullptr, "mkdtemp: %s", std::strerror(errno));
  temp_dir() = tmpl;
  const std::string dir = tmpl;
  write_file(dir + "/secret", std::string(kSecret) + "\n");
  write_file(dir + "/publishers", "# fuzz keys\n" + std::string(kPublisherKeyT1) + " t1\n" +
                                      std::string(kPublisherKeyAny) + " *\n");
  c.auth.jwt_secret_file = dir + "/secret";
  c.auth.publish_keys_file = dir + "/publishers";
  c.listen.unix_path = dir + "/sock";  // clients here must authenticate: no unix_tenant
  // Low enough that one input can reach each refusal (README.md: which input reaches which).
  c.auth.publish_rate = 20;  // notifications per second per key
  c.auth.publish_burst = 4;
  c.tenants.max_connections_per_tenant = 2;  // not reachable: an input is one connection
  c.tenants.max_streams_per_tenant = 2;
  c.tenants.max_subscriptions_per_tenant = 4;
  c.tenants.max_tenants = 3;  // "default" and two more: a third token tenant is refused (503)
  c.tenants.max_idle_sessions = 3;
  c.tenants.max_idle_sessions_per_tenant = 2;
  c.mcp.max_listens_per_connection = 2;
}

void remove_key_files() {
  const std::string& dir = temp_dir();
  if (dir.empty()) return;
  for (const char* name : {"/secret", "/publishers"}) ::unlink((dir + name).c_str());
}

void remove_files() {
  std::string& dir = temp_dir();
  if (dir.empty()) return;
  for (const char* name : {"/secret", "/publishers", "/sock"}) ::unlink((dir + name).c_str());
  ::rmdir(dir.c_str());
  dir.clear();
}

bool may_carry_signed_token(std::string_view input, bool json_escapes) {
  if (json_escapes && input.find('\\') != std::string_view::npos) return true;
  std::string text = unfold(input);
  std::string_view rest = text;
  while (!rest.empty()) {
    std::size_t start = 0;
    while (start < rest.size() && !token_char(rest[start])) ++start;
    std::size_t end = start;
    while (end < rest.size() && token_char(rest[end])) ++end;
    if (end > start && signed_with_secret(rest.substr(start, end - start))) return true;
    rest.remove_prefix(end);
  }
  return false;
}

bool may_carry_publisher_key(std::string_view input) {
  std::string text = unfold(input);
  return text.find(kPublisherKeyT1) != std::string::npos || text.find(kPublisherKeyAny) != std::string::npos;
}

}  // namespace mcpfan::fuzz::auth

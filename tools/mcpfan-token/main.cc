// mcpfan-token: mints a client JWT that mcpfan accepts (--jwt-secret-file / --jwt-public-key-file)
// and prints it on stdout. For operators and tests; see docs/security.md. Exit 2 on bad usage, 1 when the
// key file cannot be used.
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/version.h"

namespace {

constexpr std::size_t kMinSecretBytes = 32;  // what the server demands (transports/src/mcp/auth.h)
constexpr std::size_t kMaxUris = 64;
// Claims with their own flags (iat is always "now"), so --claim cannot set them as strings.
constexpr std::string_view kOwnFlags[] = {"tenant", "uris", "iat", "exp", "nbf"};

int usage_error(const std::string& why) {
  std::fprintf(stderr, "mcpfan-token: %s\n", why.c_str());
  return 2;
}

int key_error(const std::string& why) {
  std::fprintf(stderr, "mcpfan-token: %s\n", why.c_str());
  return 1;
}

// Same rule as the server: tenants become metrics label values.
bool valid_tenant(const std::string& t) {
  return !t.empty() && t.size() <= 64 && std::all_of(t.begin(), t.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Checks the PEM private key fits the algorithm, so a mismatch is reported here rather than
// as a token the server refuses. Returns an error message, or "" when the key is usable.
std::string check_private_key(const std::string& pem, const std::string& alg) {
  std::unique_ptr<BIO, int (*)(BIO*)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  // The callback refuses passphrases: OpenSSL would otherwise prompt on the terminal.
  auto no_pass = [](char*, int, int, void*) { return -1; };
  std::unique_ptr<EVP_PKEY, void (*)(EVP_PKEY*)> key(
      bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, no_pass, nullptr) : nullptr, &EVP_PKEY_free);
  if (!key) return "not an unencrypted PEM private key";
  if (alg == "RS256") {
    if (!EVP_PKEY_is_a(key.get(), "RSA")) return "RS256 needs an RSA private key";
    if (EVP_PKEY_get_bits(key.get()) < 2048) return "RS256 needs an RSA key of at least 2048 bits";
    return "";
  }
  char group[64] = {};
  std::size_t glen = 0;
  if (!EVP_PKEY_is_a(key.get(), "EC") || EVP_PKEY_get_group_name(key.get(), group, sizeof group, &glen) != 1 ||
      std::string(group, glen) != "prime256v1") {
    return "ES256 needs an EC P-256 (prime256v1) private key";
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mcpfan-token: mints a client JWT for mcpfan and prints it on stdout"};
  app.set_version_flag("--version", "mcpfan-token " + std::string(mcpfan::build::kVersion));
  std::string alg, key_file, tenant;
  std::vector<std::string> uris, claims;
  long exp_in = 3600, exp = 0, nbf = 0;
  app.add_option("--alg", alg, "signing algorithm")->required()->check(CLI::IsMember({"HS256", "RS256", "ES256"}));
  app.add_option("--key-file", key_file, "HS256: the shared secret file (as given to mcpfan --jwt-secret-file); "
                                         "RS256/ES256: the PEM private key")
      ->required();
  app.add_option("--tenant", tenant, "tenant claim: 1-64 characters of [A-Za-z0-9._-]")->required();
  app.add_option("--uris", uris, "URI prefixes the client may subscribe to (comma-separated; default: any)")
      ->delimiter(',');
  auto* o_exp_in = app.add_option("--exp-in", exp_in, "expire this many seconds from now")->capture_default_str();
  auto* o_exp = app.add_option("--exp", exp, "expire at this Unix time");
  o_exp->excludes(o_exp_in);
  auto* o_nbf = app.add_option("--nbf", nbf, "not valid before this Unix time");
  app.add_option("--claim", claims, "extra string claim KEY=VALUE (repeatable)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is not an error
  }

  if (!valid_tenant(tenant)) return usage_error("--tenant must be 1-64 characters of [A-Za-z0-9._-]");
  if (uris.size() > kMaxUris) return usage_error("--uris: at most " + std::to_string(kMaxUris) + " prefixes");
  if (std::any_of(uris.begin(), uris.end(), [](const std::string& u) { return u.empty(); })) {
    return usage_error("--uris: empty prefix");
  }
  if (o_exp_in->count() && exp_in <= 0) return usage_error("--exp-in must be positive");

  std::string key;
  if (!read_file(key_file, key)) return key_error("cannot read --key-file " + key_file);
  if (alg == "HS256") {
    key.erase(key.find_last_not_of(" \t\r\n\f\v") + 1);  // the server trims the same way
    if (key.size() < kMinSecretBytes) {
      return key_error("--key-file " + key_file + ": HS256 secret needs at least " + std::to_string(kMinSecretBytes) +
                       " bytes after trimming");
    }
  } else if (auto why = check_private_key(key, alg); !why.empty()) {
    return key_error("--key-file " + key_file + ": " + why);
  }

  jwt_t* raw = nullptr;
  if (jwt_new(&raw) != 0) return key_error("out of memory");
  std::unique_ptr<jwt_t, void (*)(jwt_t*)> jwt(raw, &jwt_free);
  long now = static_cast<long>(std::time(nullptr));
  if (jwt_add_grant(jwt.get(), "tenant", tenant.c_str()) != 0 || jwt_add_grant_int(jwt.get(), "iat", now) != 0 ||
      jwt_add_grant_int(jwt.get(), "exp", o_exp->count() ? exp : now + exp_in) != 0 ||
      (o_nbf->count() && jwt_add_grant_int(jwt.get(), "nbf", nbf) != 0)) {
    return key_error("cannot build the claims");
  }
  if (!uris.empty()) {
    std::string json = "{\"uris\":[";
    for (std::size_t i = 0; i < uris.size(); ++i) json += (i ? "," : "") + json_string(uris[i]);
    if (jwt_add_grants_json(jwt.get(), (json + "]}").c_str()) != 0) return usage_error("--uris: cannot encode");
  }
  for (const auto& c : claims) {
    auto eq = c.find('=');
    if (eq == std::string::npos || eq == 0) return usage_error("--claim " + c + ": expected KEY=VALUE");
    std::string name = c.substr(0, eq);
    if (std::find(std::begin(kOwnFlags), std::end(kOwnFlags), name) != std::end(kOwnFlags)) {
      return usage_error("--claim " + name + ": reserved; tenant, uris, exp and nbf have flags, iat is now");
    }
    if (jwt_add_grant(jwt.get(), name.c_str(), c.c_str() + eq + 1) != 0) {
      return usage_error("--claim " + name + ": given twice");
    }
  }
  if (jwt_set_alg(jwt.get(), jwt_str_alg(alg.c_str()), reinterpret_cast<const unsigned char*>(key.data()),
                  static_cast<int>(key.size())) != 0) {
    return key_error("cannot use --key-file " + key_file + " for " + alg);
  }
  std::unique_ptr<char, void (*)(void*)> token(jwt_encode_str(jwt.get()), &std::free);
  if (!token) return key_error("signing with --key-file " + key_file + " failed");
  std::printf("%s\n", token.get());
  return 0;
}

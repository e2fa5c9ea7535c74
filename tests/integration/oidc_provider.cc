// OidcProvider: tests/interop/oauth/provider.mjs started, read and stopped by PID.
// (Compiled into the unity build: file-scope helpers carry the Oidc prefix.)
#include "oidc_provider.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>

#include "child_process.h"
#include "harness.h"

#ifndef MCPFAN_SOURCE_DIR
#error "MCPFAN_SOURCE_DIR must name the source tree"
#endif

namespace itest {

namespace {

using OidcMs = std::chrono::milliseconds;
constexpr OidcMs kOidcStart{30000};     // node + oidc-provider loaded and listening (a loaded machine)
constexpr OidcMs kOidcInstall{330000};  // ensure_deps.sh: up to 300 s for the lock, 240 s for npm ci
constexpr OidcMs kOidcMakeKeys{30000};  // one key pair (RSA 2048)
constexpr int kOidcPortTries = 5;

std::string OidcFolder() {
  return std::string(MCPFAN_SOURCE_DIR) + "/tests/interop/oauth";
}

// `name` found in $PATH as an executable file, or "".
std::string OidcWhich(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    size_t colon = p.find(':', start);
    std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";
    std::string full = dir + "/" + name;
    if (::access(full.c_str(), X_OK) == 0 && !std::filesystem::is_directory(full)) return full;
    if (colon == std::string::npos) return "";
    start = colon + 1;
  }
}

// Runs argv to completion (bounded); true on exit 0. *output: its stderr.
bool OidcRun(const std::vector<std::string>& argv, OidcMs bound, std::string* output) {
  ChildProcess p;
  if (!p.Spawn(argv)) {
    *output = p.error();
    return false;
  }
  bool done = p.WaitExit(bound);
  if (!done) p.Stop();
  *output = p.Stderr() + (done ? "" : "\n(stopped: still running after " + std::to_string(bound.count()) + " ms)");
  return done && p.DescribeStatus() == "exit 0";
}

// The folder's packages (npm ci unless they match the lock file), once per test process; the
// flock in ensure_deps.sh keeps test processes started together from installing at once.
bool OidcEnsureDeps(const std::string& bash, std::string* error) {
  static std::mutex mu;
  static bool installed = false;
  std::lock_guard lk(mu);
  if (installed) return true;
  std::string out;
  if (!OidcRun({bash, OidcFolder() + "/ensure_deps.sh"}, kOidcInstall, &out)) {
    *error = "installing the pinned packages of " + OidcFolder() + " failed:\n" + out;
    return false;
  }
  installed = true;
  return true;
}

// A free loopback port below the kernel's ephemeral range (the kernel never hands it out on its
// own, so the provider restarted on it finds it free), or 0 (then the provider picks one).
std::uint16_t OidcPortBelowEphemeral() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  constexpr int kFloor = 10000;
  if (low - kFloor < 1000) return 0;
  static std::atomic<unsigned> calls{0};
  std::mt19937 rng(static_cast<unsigned>(::getpid()) * 2654435761u + calls++ * 40503u +
                   static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (int i = 0; i < 100; ++i) {
    int port = kFloor + static_cast<int>(rng() % static_cast<unsigned>(low - kFloor));
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool free = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    if (fd >= 0) ::close(fd);
    if (free) return static_cast<std::uint16_t>(port);
  }
  return 0;
}

std::string OidcFormEncode(std::string_view v) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : v) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string OidcForm(const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string body;
  for (const auto& [k, v] : fields) {
    if (!body.empty()) body.push_back('&');
    body += OidcFormEncode(k) + "=" + OidcFormEncode(v);
  }
  return body;
}

}  // namespace

struct OidcProvider::State {
  std::string node;
  std::vector<std::string> resources;
  std::vector<std::string> opaque_resources;
  int token_ttl_s = 0;
  std::string keys_file;
  std::string tmp_dir;  // made by start() when it made the keys; removed at the end
  std::uint16_t port = 0;
  std::string issuer;
  std::unique_ptr<ChildProcess> proc;
  int stdout_fd = -1;
  std::string old_logs;  // of the processes before a restart
  std::string last_error;

  ~State() {
    Stop();
    if (!tmp_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(tmp_dir, ec);
    }
  }

  void Stop() {
    if (proc) {
      proc->Stop();
      old_logs += proc->Stderr();
      proc.reset();
    }
    if (stdout_fd >= 0) ::close(stdout_fd);
    stdout_fd = -1;
  }

  // Starts provider.mjs on `want_port` (0: the provider picks) and waits (bounded) for its
  // READY line. On failure *addr_in_use says whether the port was taken.
  bool Launch(std::uint16_t want_port, bool* addr_in_use) {
    *addr_in_use = false;
    std::vector<std::string> argv{
        node, OidcFolder() + "/provider.mjs", "--port", std::to_string(want_port), "--keys", keys_file};
    for (const auto& r : resources) argv.insert(argv.end(), {"--resource", r});
    for (const auto& r : opaque_resources) argv.insert(argv.end(), {"--opaque-resource", r});
    if (token_ttl_s > 0) argv.insert(argv.end(), {"--ttl", std::to_string(token_ttl_s)});
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      last_error = std::string("pipe2: ") + std::strerror(errno);
      return false;
    }
    proc = std::make_unique<ChildProcess>();
    bool spawned = proc->Spawn(argv, -1, fds[1]);
    ::close(fds[1]);
    stdout_fd = fds[0];
    if (!spawned) {
      last_error = proc->error();
      return false;
    }
    std::string out;
    auto end = std::chrono::steady_clock::now() + kOidcStart;
    bool eof = false;
    while (out.find('\n') == std::string::npos && !eof) {  // bounded by `end`
      auto left = std::chrono::duration_cast<OidcMs>(end - std::chrono::steady_clock::now()).count();
      if (left <= 0) break;
      pollfd p{stdout_fd, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      char buf[512];
      ssize_t n = ::read(stdout_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        eof = true;
      } else {
        out.append(buf, static_cast<size_t>(n));
      }
    }
    constexpr std::string_view kReady = "READY http://127.0.0.1:";
    size_t nl = out.find('\n');
    if (nl != std::string::npos && out.compare(0, kReady.size(), kReady) == 0) {
      issuer = out.substr(6, nl - 6);
      port = static_cast<std::uint16_t>(std::stoi(out.substr(kReady.size(), nl - kReady.size())));
      return true;
    }
    if (eof) proc->WaitExit(OidcMs(5000));
    std::string log = proc->Stderr();
    *addr_in_use = log.find("EADDRINUSE") != std::string::npos;
    last_error = "oidc-provider (" + OidcFolder() + "/provider.mjs) did not print READY within " +
                 std::to_string(kOidcStart.count()) + " ms (" + proc->DescribeStatus() + "); stdout: '" + out +
                 "'; stderr:\n" + log;
    Stop();
    return false;
  }

  // Launch on `fixed` (0: a free port below the ephemeral range, another one when taken meanwhile).
  bool LaunchOn(std::uint16_t fixed) {
    bool in_use = false;
    if (fixed != 0) return Launch(fixed, &in_use);
    for (int i = 0; i < kOidcPortTries; ++i) {
      if (Launch(OidcPortBelowEphemeral(), &in_use)) return true;
      if (!in_use) return false;
    }
    return false;
  }

  // POST `path` with a form body; the response body on 200, else "" with *error.
  std::string PostForm(const std::string& path, const std::vector<std::pair<std::string, std::string>>& fields,
                       std::string* error) {
    std::string err;
    auto r =
        Roundtrip(port,
                  BuildRequest("POST", path,
                               {{"Content-Type", "application/x-www-form-urlencoded"}, {"Accept", "application/json"}},
                               OidcForm(fields)),
                  kIo, &err);
    std::string e;
    if (!r) {
      e = "POST " + issuer + path + ": " + err;
    } else if (r->status != 200) {
      e = "POST " + issuer + path + " answered " + std::to_string(r->status) + ": " + r->body;
    } else {
      return r->body;
    }
    last_error = e;
    if (error) *error = e;
    return "";
  }
};

OidcProvider::OidcProvider(std::unique_ptr<State> s) : s_(std::move(s)) {}
OidcProvider::~OidcProvider() {
  if (s_ && ::testing::Test::HasFailure()) {
    std::cerr << "---- oidc-provider stderr (" << s_->issuer << ") ----\n"
              << log().substr(0, 20000) << "---- end oidc-provider stderr ----\n";
  }
}
OidcProvider::OidcProvider(OidcProvider&&) noexcept = default;
OidcProvider& OidcProvider::operator=(OidcProvider&&) noexcept = default;

std::optional<OidcProvider> OidcProvider::start(std::vector<std::string> resources, std::string keys_file,
                                                std::uint16_t port, std::string* error,
                                                std::vector<std::string> opaque_resources, int token_ttl_s) {
  std::string ignored;
  std::string& err = error ? *error : ignored;
  auto s = std::make_unique<State>();
  s->node = OidcWhich("node");
  std::string bash = OidcWhich("bash");
  if (s->node.empty()) {
    err = "node not found in PATH (the OAuth tests need Node >= 20 and npm)";
    return std::nullopt;
  }
  if (bash.empty() || OidcWhich("npm").empty() || OidcWhich("flock").empty()) {
    err = "bash, npm or flock not found in PATH (needed to install tests/interop/oauth's packages)";
    return std::nullopt;
  }
  if (!OidcEnsureDeps(bash, &err)) return std::nullopt;
  s->resources = std::move(resources);
  s->opaque_resources = std::move(opaque_resources);
  s->token_ttl_s = token_ttl_s;
  if (keys_file.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpfan-oidc-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      err = std::string("mkdtemp: ") + std::strerror(errno);
      return std::nullopt;
    }
    s->tmp_dir = tmpl;
    keys_file = tmpl + "/keys.json";
    if (!make_keys(keys_file, "initial-" + std::to_string(::getpid()), "RS256", &err)) return std::nullopt;
  }
  s->keys_file = std::move(keys_file);
  if (!s->LaunchOn(port)) {
    err = s->last_error;
    return std::nullopt;
  }
  return OidcProvider(std::move(s));
}

const std::string& OidcProvider::issuer() const {
  return s_->issuer;
}
std::uint16_t OidcProvider::port() const {
  return s_->port;
}
const std::string& OidcProvider::keys_file() const {
  return s_->keys_file;
}
std::string OidcProvider::introspection_endpoint() const {
  return s_->issuer + "/token/introspection";
}
std::string OidcProvider::token_endpoint() const {
  return s_->issuer + "/token";
}
std::string OidcProvider::jwks_uri() const {
  return s_->issuer + "/jwks";
}
const std::string& OidcProvider::last_error() const {
  return s_->last_error;
}

std::string OidcProvider::log() const {
  if (!s_) return "";
  return s_->old_logs + (s_->proc ? s_->proc->Stderr() : "");
}

void OidcProvider::stop() {
  if (s_) s_->Stop();
}

std::string OidcProvider::client_token(std::string client_id, std::string secret, std::string resource,
                                       std::string scope, std::string* error) {
  std::vector<std::pair<std::string, std::string>> f{
      {"grant_type", "client_credentials"}, {"client_id", client_id}, {"client_secret", secret}};
  if (!resource.empty()) f.emplace_back("resource", resource);
  if (!scope.empty()) f.emplace_back("scope", scope);
  std::string body = s_->PostForm("/token", f, error);
  if (body.empty()) return "";
  auto tok = Json(body).GetString({"access_token"});
  if (!tok || tok->empty()) {
    s_->last_error = "POST /token: no access_token in " + body;
    if (error) *error = s_->last_error;
    return "";
  }
  return *tok;
}

std::string OidcProvider::introspect(const std::string& token, const std::string& client_id, const std::string& secret,
                                     std::string* error) {
  return s_->PostForm("/token/introspection", {{"token", token}, {"client_id", client_id}, {"client_secret", secret}},
                      error);
}

bool OidcProvider::restart_with_keys(std::string keys_file) {
  std::uint16_t same = s_->port;
  s_->Stop();
  s_->keys_file = std::move(keys_file);
  return s_->LaunchOn(same);
}

bool OidcProvider::make_keys(const std::string& path, const std::string& kid, const std::string& alg,
                             std::string* error, const std::string& keep_file) {
  std::string node = OidcWhich("node");
  std::string out;
  if (node.empty()) {
    out = "node not found in PATH";
  } else {
    std::vector<std::string> argv{node, OidcFolder() + "/provider.mjs", "--make-keys", path, "--kid", kid, "--alg",
                                  alg};
    if (!keep_file.empty()) argv.insert(argv.end(), {"--keep", keep_file});
    if (OidcRun(argv, kOidcMakeKeys, &out)) return true;
  }
  if (error) *error = "provider.mjs --make-keys " + path + " failed: " + out;
  return false;
}

}  // namespace itest

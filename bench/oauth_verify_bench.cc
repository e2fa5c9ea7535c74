// What verifying one OAuth access token costs (transports/src/oauth/access_token.h), per
// algorithm: a realistic RFC 9068 token (iss, aud, exp, iat, scope, org_id, sub, client_id)
// against a warm KeySet of 4 keys, through parsing, the signature and the claims. The peer is
// the static-key path, ClientAuth::verify_token with one RS256 PEM key (mcp/auth.h), in the
// same run. Keys are generated at start (tests/oauth/oauth_keys.cc), nothing is read from disk
// but the peer's PEM file, written to $TMPDIR first.
//   build/bench/mcpfan_oauth_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <variant>

#include "mcp/auth.h"
#include "oauth/access_token.h"
#include "oauth/metadata.h"
#include "oauth_keys.h"

namespace {

namespace oauth = mcpfan::detail::oauth;
using oauthtest::JwsAlg;

constexpr std::int64_t kNow = 1'800'000'000;

std::string claims_json(bool static_key) {
  std::string tenant = static_key ? R"("tenant":"org-4711")" : R"("org_id":"org-4711")";
  return R"({"iss":"https://login.example.com/realms/acme","aud":["https://mcp.example.com/mcp","account"],)"
         R"("exp":)" +
         std::to_string(kNow + 3600) + R"(,"iat":)" + std::to_string(kNow - 60) +
         R"(,"jti":"5f0c6a1e-7b7c-4d3a-9d55-5b0d1c2c8a41","scope":"openid mcp:read mcp:subscribe",)" + tenant +
         R"(,"sub":"248289761001","client_id":"mcp-inspector","azp":"mcp-inspector"})";
}

struct Fixture {
  oauth::KeySet keys;
  oauth::TokenPolicy policy;
  Fixture() {
    auto r = oauth::KeySet::parse(oauthtest::jwks({oauthtest::jwk(oauthtest::rsa_key(), "rsa-2026-01"),
                                                   oauthtest::jwk(oauthtest::rsa_key(1), "rsa-2025-12", "PS256"),
                                                   oauthtest::jwk(oauthtest::p256_key(), "ec-2026-01"),
                                                   oauthtest::jwk(oauthtest::ed25519_key(), "ed-2026-01")}));
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      std::abort();
    }
    keys = std::move(r).value();
    policy.issuer = "https://login.example.com/realms/acme";
    policy.audiences = {"https://mcp.example.com/mcp"};
    policy.tenant_claim = "org_id";
  }
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

void verify_bench(benchmark::State& state, JwsAlg alg, const oauthtest::Pkey& key, const char* kid) {
  const Fixture& f = fixture();
  const std::string token = oauthtest::token(alg, key, kid, claims_json(false));
  auto check = oauth::verify_access_token(token, f.keys, f.policy, kNow);
  if (!std::holds_alternative<oauth::AccessClaims>(check)) {
    state.SkipWithError(std::get<oauth::TokenError>(check).message.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(oauth::verify_access_token(token, f.keys, f.policy, kNow));
  state.counters["token_bytes"] = static_cast<double>(token.size());
}

void BM_OAuthVerify_RS256(benchmark::State& s) {
  verify_bench(s, JwsAlg::RS256, oauthtest::rsa_key(), "rsa-2026-01");
}
void BM_OAuthVerify_PS256(benchmark::State& s) {
  verify_bench(s, JwsAlg::PS256, oauthtest::rsa_key(1), "rsa-2025-12");
}
void BM_OAuthVerify_ES256(benchmark::State& s) {
  verify_bench(s, JwsAlg::ES256, oauthtest::p256_key(), "ec-2026-01");
}
void BM_OAuthVerify_EdDSA(benchmark::State& s) {
  verify_bench(s, JwsAlg::EdDSA, oauthtest::ed25519_key(), "ed-2026-01");
}
BENCHMARK(BM_OAuthVerify_RS256);
BENCHMARK(BM_OAuthVerify_PS256);
BENCHMARK(BM_OAuthVerify_ES256);
BENCHMARK(BM_OAuthVerify_EdDSA);

// The same claims without a signature (an introspection answer): what parsing and the claim
// rules cost, the part of a verification that is not cryptography.
void BM_OAuthClaimsOnly(benchmark::State& state) {
  const Fixture& f = fixture();
  std::string json = claims_json(false);
  json.insert(1, "\"active\":true,");
  auto check = oauth::read_introspection(json, f.policy, kNow);
  if (!std::holds_alternative<oauth::AccessClaims>(check)) {
    state.SkipWithError(std::get<oauth::TokenError>(check).message.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(oauth::read_introspection(json, f.policy, kNow));
}
BENCHMARK(BM_OAuthClaimsOnly);

// The static-key peer: the same RSA key as a PEM file, the same claims (with `tenant`).
void BM_StaticKeyVerify_RS256(benchmark::State& state) {
  std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  std::string path = dir + "/mcpfan_oauth_bench_" + std::to_string(getpid()) + ".pem";
  std::string pem = oauthtest::public_pem(oauthtest::rsa_key());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(pem.data(), 1, pem.size(), f) != pem.size()) {
    if (f) std::fclose(f);
    state.SkipWithError("cannot write the PEM file");
    return;
  }
  std::fclose(f);
  auto auth = mcpfan::detail::ClientAuth::load("", path, 60);
  std::remove(path.c_str());
  if (!auth) {
    state.SkipWithError(auth.error().message.c_str());
    return;
  }
  const std::string token =
      oauthtest::sign(JwsAlg::RS256, oauthtest::rsa_key(), R"({"alg":"RS256","typ":"JWT"})", claims_json(true));
  auto check = auth.value().verify_token(token, kNow);
  if (!std::holds_alternative<mcpfan::detail::ClientIdentity>(check)) {
    state.SkipWithError(std::get<mcpfan::detail::AuthError>(check).message.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(auth.value().verify_token(token, kNow));
  state.counters["token_bytes"] = static_cast<double>(token.size());
}
BENCHMARK(BM_StaticKeyVerify_RS256);

}  // namespace

BENCHMARK_MAIN();

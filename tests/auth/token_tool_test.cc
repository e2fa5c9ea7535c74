// The mcpfan-token CLI: run the built binary (MCPFAN_TOKEN_BIN) for each algorithm and verify
// what it prints with ClientAuth.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth_util.h"

extern char** environ;

namespace authtest {
namespace {

struct ToolRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_all(int fd) {
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) data.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return data;
}

// Runs mcpfan-token with `args` (no shell). Its output is small, so reading stdout to the end
// before stderr cannot deadlock on a full pipe.
ToolRun run_tool(std::vector<std::string> args) {
  args.insert(args.begin(), MCPFAN_TOKEN_BIN);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  ::close(err[1]);
  ToolRun r;
  r.out = read_all(out[0]);
  r.err = read_all(err[0]);
  int status = 0;
  if (rc == 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

class TokenTool : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(TokenTool, EachAlgorithmVerifies) {
  struct Case {
    const char* alg;
    std::string signing_key, secret, public_pem;
  };
  const Case cases[] = {
      {"HS256", kSecret + "\n", kSecret, ""},
      {"RS256", rsa_key().private_pem, "", rsa_key().public_pem},
      {"ES256", ec_key().private_pem, "", ec_key().public_pem},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.alg);
    auto key_file = dir_.write(std::string("signing-") + c.alg, c.signing_key);
    ToolRun r = run_tool({"--alg", c.alg, "--key-file", key_file, "--tenant", "acme", "--uris", "file:///p/,db://x",
                      "--exp-in", "600", "--claim", "sub=svc-1"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ClientAuth auth = load_auth(dir_, c.secret, c.public_pem);
    auto v = auth.verify_token(trimmed(r.out), now_s());
    ASSERT_EQ(kind_of(v), "ok") << message_of(v);
    const auto& id = std::get<ClientIdentity>(v);
    EXPECT_EQ(id.tenant, "acme");
    EXPECT_EQ(id.uri_prefixes, (std::vector<std::string>{"file:///p/", "db://x"}));
    EXPECT_NEAR(static_cast<double>(id.exp), static_cast<double>(now_s() + 600), 5.0);
  }
}

TEST_F(TokenTool, ExplicitTimes) {
  auto key_file = dir_.write("secret", kSecret);
  ClientAuth auth = load_auth(dir_, kSecret, "");
  ToolRun past = run_tool({"--alg", "HS256", "--key-file", key_file, "--tenant", "a", "--exp", "1000"});
  ASSERT_EQ(past.exit_code, 0) << past.err;
  EXPECT_EQ(kind_of(auth.verify_token(trimmed(past.out), now_s())), "expired");
  ToolRun later = run_tool({"--alg", "HS256", "--key-file", key_file, "--tenant", "a", "--nbf",
                        std::to_string(now_s() + 1000)});
  ASSERT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(kind_of(auth.verify_token(trimmed(later.out), now_s())), "not_yet_valid");
}

TEST_F(TokenTool, BadUsageExitsTwo) {
  auto key_file = dir_.write("secret", kSecret);
  const std::vector<std::vector<std::string>> bad = {
      {"--alg", "HS512", "--key-file", key_file, "--tenant", "a"},
      {"--alg", "HS256", "--key-file", key_file},
      {"--alg", "HS256", "--key-file", key_file, "--tenant", "a b"},
      {"--alg", "HS256", "--key-file", key_file, "--tenant", "a", "--exp", "1", "--exp-in", "5"},
      {"--alg", "HS256", "--key-file", key_file, "--tenant", "a", "--claim", "tenant=b"},
      {"--alg", "HS256", "--key-file", key_file, "--tenant", "a", "--claim", "novalue"},
  };
  for (const auto& args : bad) {
    ToolRun r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << args.back();
    EXPECT_TRUE(r.out.empty());
    EXPECT_FALSE(r.err.empty());
  }
}

TEST_F(TokenTool, UnusableKeyExitsOne) {
  ToolRun r = run_tool({"--alg", "HS256", "--key-file", dir_.write("short", "too short\n"), "--tenant", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("at least 32 bytes"), std::string::npos) << r.err;
  r = run_tool({"--alg", "ES256", "--key-file", dir_.write("rsa", rsa_key().private_pem), "--tenant", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ES256 needs an EC P-256"), std::string::npos) << r.err;
  r = run_tool({"--alg", "RS256", "--key-file", dir_.write("pub", rsa_key().public_pem), "--tenant", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not an unencrypted PEM private key"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace authtest

// The mcpfan program's command line (docs/operations.md "Starting it", "Flags"): --version, --help's exit-status
// footer, --check-config on the shipped template and on broken files (each problem names the
// file, the line and the key), the documented exit statuses (0 ok, 1 the start failed, 2 a
// bad command line or configuration), and packaging/mcpfan.toml naming every flag --help lists.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "stdio_client.h"

namespace itest {
namespace {

const std::string kTemplate = MCPFAN_SOURCE_DIR "/packaging/mcpfan.toml";

struct Outcome {
  std::string status;  // "exit 0", ...
  std::string out;
  std::string err;
};

// Runs mcpfan with `args` to its exit (bounded), stdout into a file of `dir`.
Outcome RunMcpfan(const TempDir& dir, const std::vector<std::string>& args) {
  const std::string out_path = dir.path() + "/stdout";
  int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  EXPECT_GE(out, 0);
  std::vector<std::string> argv{MCPFAN_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess p;
  Outcome r;
  if (!p.Spawn(argv, -1, out)) {
    r.status = "spawn failed: " + p.error();
    ::close(out);
    return r;
  }
  ::close(out);
  if (!p.WaitExit(std::chrono::milliseconds(20000))) p.Stop();
  r.status = p.DescribeStatus();
  r.err = p.Stderr();
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.out = ss.str();
  return r;
}

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// --check-config on a file of `text`; its path in *path.
Outcome CheckFile(const TempDir& dir, const std::string& text, std::string* path = nullptr,
                  std::vector<std::string> more = {}) {
  std::string p = WriteFile(dir, "mcpfan.toml", text);
  if (path) *path = p;
  std::vector<std::string> args{"--check-config", "--config", p};
  args.insert(args.end(), more.begin(), more.end());
  return RunMcpfan(dir, args);
}

// Every long flag of --help (option lines only, not flags named in descriptions).
std::set<std::string> HelpFlags(const TempDir& dir) {
  Outcome help = RunMcpfan(dir, {"--help"});
  EXPECT_EQ(help.status, "exit 0") << help.err;
  std::set<std::string> flags;
  std::istringstream lines(help.out);
  std::string line;
  const std::regex option(R"(^\s+(?:-[A-Za-z],)?--([a-z0-9][a-z0-9-]*))");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, option)) flags.insert(m[1]);
  }
  return flags;
}

// The keys of packaging/mcpfan.toml, commented out ("# key = ...") or not.
std::set<std::string> TemplateKeys() {
  std::ifstream in(kTemplate);
  std::set<std::string> keys;
  std::string line;
  const std::regex key(R"(^#? ?([a-z0-9][a-z0-9-]*) = )");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, key)) keys.insert(m[1]);
  }
  return keys;
}

// A loopback listening socket nobody accepts on; its port.
int Listener(std::uint16_t& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

TEST(Cli, VersionPrintsOneLineAndExitsZero) {
  TempDir dir;
  Outcome r = RunMcpfan(dir, {"--version"});
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_TRUE(std::regex_match(r.out, std::regex(R"(mcpfan [0-9]+\.[0-9]+\.[0-9]+[^ ]* \([^,]+, [^)]+\)\n)"))) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(Cli, HelpDocumentsTheExitStatuses) {
  TempDir dir;
  Outcome r = RunMcpfan(dir, {"--help"});
  EXPECT_EQ(r.status, "exit 0");
  EXPECT_NE(r.out.find("--check-config"), std::string::npos);
  EXPECT_NE(r.out.find("binds no port and connects to nothing"), std::string::npos);
  EXPECT_NE(r.out.find("Exit status: 0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 1 the start failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; 2 a bad command line or configuration"), std::string::npos) << r.out;
}

TEST(Cli, CommandLineErrorsExitTwo) {
  TempDir dir;
  Outcome unknown = RunMcpfan(dir, {"--no-such-flag"});
  EXPECT_EQ(unknown.status, "exit 2") << unknown.err;  // CLI11's own would be 109
  EXPECT_EQ(unknown.err.rfind("mcpfan: ", 0), 0u) << unknown.err;
  EXPECT_NE(unknown.err.find("--no-such-flag"), std::string::npos) << unknown.err;
  Outcome bad_value = RunMcpfan(dir, {"--workers", "four"});
  EXPECT_EQ(bad_value.status, "exit 2") << bad_value.err;
  Outcome missing = RunMcpfan(dir, {"--check-config", "--config", dir.path() + "/absent.toml"});
  EXPECT_EQ(missing.status, "exit 2");
  EXPECT_NE(missing.err.find("mcpfan: --config " + dir.path() + "/absent.toml: No such file or directory"),
            std::string::npos)
      << missing.err;
}

TEST(Cli, TheTemplatePassesCheckConfig) {
  TempDir dir;
  Outcome r = RunMcpfan(dir, {"--check-config", "--config", kTemplate});
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_EQ(r.out.rfind("mcpfan: configuration OK (" + kTemplate + ")\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("listen 127.0.0.1:8080"), std::string::npos) << r.out;
}

TEST(Cli, TheTemplateNamesEveryFlag) {
  TempDir dir;
  std::set<std::string> flags = HelpFlags(dir);
  ASSERT_GT(flags.size(), 40u) << "--help's option lines were not recognised";
  std::set<std::string> keys = TemplateKeys();
  for (const char* not_a_setting : {"help", "version", "config", "check-config"}) flags.erase(not_a_setting);
  for (const std::string& flag : flags) {
    EXPECT_TRUE(keys.count(flag)) << "packaging/mcpfan.toml has no line \"# " << flag << " = ...\" for --" << flag;
  }
  for (const std::string& key : keys)
    EXPECT_TRUE(flags.count(key)) << "packaging/mcpfan.toml names " << key << ", not a flag";
}

TEST(Cli, TheTemplatesExampleValuesAreValid) {
  // Every commented-out line uncommented (but the ones naming files that exist only on a
  // configured host, and the two modes a service does not use): the examples are good values.
  TempDir dir;
  std::ifstream in(kTemplate);
  std::string text, line;
  const std::regex commented(R"(^# ([a-z0-9-]+) = )");
  std::set<std::string> skipped{"jwt-secret-file", "jwt-public-key-file", "publish-keys-file", "nats-creds",
                                "nats-tls-ca", "unix", "stdio", "insecure", "tls-cert", "tls-key",
                                "publish-tls-cert", "publish-tls-key", "upstream-ca-file",
                                "tls-client-ca", "oauth-ca-file", "oauth-introspection-credentials-file"};
  if (!MCPFAN_WITH_NATS) skipped.insert("nats");  // refused by such a build (NatsIsRefusedWhenBuiltWithout)
  int uncommented = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, commented) && !skipped.count(m[1])) {
      line = line.substr(2);
      ++uncommented;
    }
    text += line + "\n";
  }
  ASSERT_GT(uncommented, 40);
  Outcome r = CheckFile(dir, text);
  EXPECT_EQ(r.status, "exit 0") << r.err;
}

TEST(Cli, TomlValuesAsTheSpecWritesThem) {
  // Escapes, literal strings, hex and underscores, a multi-line array with comments and a
  // trailing comma, CRLF line ends: read as TOML reads them.
  TempDir dir;
  Outcome r = CheckFile(dir,
                        "listen = \"127.0.0.1:\\u00390\\u00300\"   # escapes\r\n"
                        "workers = 0x2\r\n"
                        "publish-rate = 1_000.5\r\n"
                        "allow-host = ['a.example', \"b.example\"]\r\n"
                        "allow-origin = [\r\n  \"https://a.example\",  # first\r\n  'https://b.example',\r\n]\r\n");
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_NE(r.out.find("listen 127.0.0.1:9000; workers 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("publish rate: 1000.5/s per key"), std::string::npos) << r.out;
}

TEST(Cli, UnknownKeyNamesFileLineAndKey) {
  TempDir dir;
  std::string path;
  Outcome r = CheckFile(dir, "listen = \"127.0.0.1:8080\"\n\nworkerz = 4\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":3: workerz: unknown key (did you mean workers?)"), std::string::npos)
      << r.err;
}

TEST(Cli, SyntaxErrorsNameFileLineAndKey) {
  TempDir dir;
  std::string path;
  Outcome r = CheckFile(dir, "# a comment\nlisten = \"127.0.0.1:8080\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: listen: unterminated string"), std::string::npos) << r.err;
  r = CheckFile(dir, "workers = 2\n[server]\nlisten = \"127.0.0.1:8080\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: [server]: tables are not used"), std::string::npos) << r.err;
  r = CheckFile(dir, "workers = 2\nworkers = 3\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: workers: duplicate key (also on line 1)"), std::string::npos) << r.err;
  r = CheckFile(dir, "allow-origin = [\"http://a\",\n  \"http://b\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":1: allow-origin: unterminated array"), std::string::npos) << r.err;
}

TEST(Cli, WrongTypesAndValuesNameFileLineAndKey) {
  TempDir dir;
  std::string path;
  Outcome r = CheckFile(dir, "listen = \"127.0.0.1:8080\"\nworkers = \"four\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: workers = \"four\": expected a whole number"), std::string::npos)
      << r.err;
  r = CheckFile(dir, "workers = four\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find(path + ":1: workers = four: not a TOML value"), std::string::npos) << r.err;
  r = CheckFile(dir, "reuse-port = 1\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find(path + ":1: reuse-port = 1: expected true or false"), std::string::npos) << r.err;
  // Out of range: by the flag's own check, and by Server::check() (after parsing).
  r = CheckFile(dir, "\nkeepalive-ms = 0\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: keepalive-ms = 0: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("range"), std::string::npos) << r.err;
  r = CheckFile(dir, "# comment\n\nworkers = 5000\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":3: workers: ServerConfig::workers = 5000 is outside 0..1024"),
            std::string::npos)
      << r.err;
  r = CheckFile(dir, "listen = \"localhost\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find(path + ":1: listen: --listen localhost: expected HOST:PORT"), std::string::npos) << r.err;
}

TEST(Cli, TheCommandLineWinsOverTheFile) {
  TempDir dir;
  Outcome r = CheckFile(dir, "workers = 5000\n", nullptr, {"--workers", "2"});
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_NE(r.out.find("workers 2"), std::string::npos) << r.out;
}

TEST(Cli, KeyFilesAreCheckedWithTheirLine) {
  TempDir dir;
  std::string path;
  Outcome r = CheckFile(dir, "workers = 1\npublish-keys-file = \"" + dir.path() + "/nope\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":2: publish-keys-file = "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nope"), std::string::npos) << r.err;
  // A secret too short for HS256: read and judged, as a start would.
  std::string secret = WriteFile(dir, "secret", "short\n");
  r = CheckFile(dir, "jwt-secret-file = \"" + secret + "\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":1: jwt-secret-file: secret file " + secret + ": 5 bytes after trimming"),
            std::string::npos)
      << r.err;
  // A secret that cannot be read (a directory; a mode-000 file where the tests do not run as root).
  ::mkdir((dir.path() + "/secret.d").c_str(), 0700);
  r = CheckFile(dir, "jwt-secret-file = \"" + dir.path() + "/secret.d\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":1: jwt-secret-file"), std::string::npos) << r.err;
  if (::geteuid() != 0) {
    std::string locked = WriteFile(dir, "locked", std::string(40, 's'));
    ::chmod(locked.c_str(), 0);
    r = CheckFile(dir, "jwt-secret-file = \"" + locked + "\"\n", &path);
    EXPECT_EQ(r.status, "exit 2");
    EXPECT_NE(r.err.find("mcpfan: " + path + ":1: jwt-secret-file: secret file " + locked + ": Permission denied"),
              std::string::npos)
        << r.err;
  }
  std::string good = WriteFile(dir, "good-secret", std::string(40, 's') + "\n");
  std::string keys = WriteFile(dir, "keys", std::string(24, 'k') + " *\n");
  r = CheckFile(dir, "jwt-secret-file = \"" + good + "\"\npublish-keys-file = \"" + keys + "\"\n");
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_NE(r.out.find("client token algorithms: HS256; publisher keys: 1"), std::string::npos) << r.out;
}

TEST(Cli, OpenListenerWithClientTokensOnlyNamesPublisherKeys) {
  TempDir dir;
  std::string secret = WriteFile(dir, "secret", std::string(40, 's') + "\n");
  std::string path;
  Outcome r = CheckFile(dir, "listen = \"0.0.0.0:8080\"\njwt-secret-file = \"" + secret + "\"\n", &path);
  EXPECT_EQ(r.status, "exit 2");
  EXPECT_NE(r.err.find("mcpfan: " + path + ":1: listen: refusing --listen on 0.0.0.0 without authentication "
                       "(--publish-keys-file): client tokens are configured"),
            std::string::npos)
      << r.err;
  // The same refusal when starting for real: exit 2, nothing started.
  Outcome start = RunMcpfan(dir, {"--listen", "0.0.0.0:0", "--jwt-secret-file", secret});
  EXPECT_EQ(start.status, "exit 2");
  EXPECT_NE(start.err.find("mcpfan: refusing --listen on 0.0.0.0 without authentication (--publish-keys-file)"),
            std::string::npos)
      << start.err;
  r = CheckFile(dir, "listen = \"0.0.0.0:8080\"\ninsecure = true\n");
  EXPECT_EQ(r.status, "exit 0") << r.err;
}

TEST(Cli, CheckConfigBindsNoPortAndConnectsToNothing) {
  // The port of --listen and a "NATS server" are both held by sockets here: a start would
  // fail on the first ("address in use"); --check-config passes, and nothing connected to the second.
  TempDir dir;
  std::uint16_t port = 0, nats_port = 0;
  int held = Listener(port);
  int nats = Listener(nats_port);
  std::vector<std::string> args{"--check-config", "--listen", "127.0.0.1:" + std::to_string(port)};
  if (MCPFAN_WITH_NATS) args.insert(args.end(), {"--nats", "nats://127.0.0.1:" + std::to_string(nats_port)});
  Outcome r = RunMcpfan(dir, args);
  EXPECT_EQ(r.status, "exit 0") << r.err;
  EXPECT_EQ(r.out.rfind("mcpfan: configuration OK (command line only", 0), 0u) << r.out;
  int accepted = ::accept(nats, nullptr, nullptr);  // non-blocking: a connection made would be queued by now
  EXPECT_LT(accepted, 0) << "--check-config connected to the NATS URL";
  if (accepted >= 0) ::close(accepted);
  // Starting for real on the held port: the configuration is valid, the start fails: exit 1.
  Outcome start = RunMcpfan(dir, {"--listen", "127.0.0.1:" + std::to_string(port), "--workers", "1"});
  EXPECT_EQ(start.status, "exit 1") << start.err;
  EXPECT_NE(start.err.find("address in use"), std::string::npos) << start.err;
  ::close(held);
  ::close(nats);
}

#if !MCPFAN_WITH_NATS
// A build without the NATS backplane (MCPFAN_WITH_NATS=OFF) is a single node: --nats is a
// configuration error, from --check-config and from a start, before anything is bound.
TEST(Cli, NatsIsRefusedWhenBuiltWithout) {
  TempDir dir;
  const std::string why = "--nats: this mcpfan was built without NATS support (MCPFAN_WITH_NATS=OFF)";
  Outcome check = RunMcpfan(dir, {"--check-config", "--nats", "nats://127.0.0.1:4222"});
  EXPECT_EQ(check.status, "exit 2") << check.err;
  EXPECT_NE(check.err.find(why), std::string::npos) << check.err;
  Outcome start = RunMcpfan(dir, {"--listen", "127.0.0.1:0", "--workers", "1", "--nats", "nats://127.0.0.1:4222"});
  EXPECT_EQ(start.status, "exit 2") << start.err;
  EXPECT_NE(start.err.find(why), std::string::npos) << start.err;
  EXPECT_EQ(start.err.find("listening on"), std::string::npos) << start.err;
  // Without --nats the same build serves (as every other test of this build shows) and checks clean.
  Outcome plain = RunMcpfan(dir, {"--check-config"});
  EXPECT_EQ(plain.status, "exit 0") << plain.err;
}
#endif

}  // namespace
}  // namespace itest

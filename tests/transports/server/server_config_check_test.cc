// Server::start() checks the ServerConfig first (docs/embedding.md "Misuse is a clear error"): a value
// out of range is refused with -32602 naming the field, its range and the mcpfan flag, and
// nothing is started. Building a Server with such a value allocates nothing for it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "mcpfan/transport/server.h"
#include "support/loopback.h"

namespace {

/** start()'s error for `cfg` ("" when it starts; then it is stopped again). */
std::string start_error(mcpfan::ServerConfig cfg) {
  cfg.listen.port = 0;
  mcpfan::Server server(cfg);
  auto started = server.start();
  if (started) {
    (void)server.stop();
    return "";
  }
  EXPECT_EQ(started.error().code, -32602) << started.error().message;
  return started.error().message;
}

TEST(ServerConfigCheck, ValuesOutOfRangeAreRefusedByName) {
  struct Case {
    void (*set)(mcpfan::ServerConfig&);
    const char* expected;
  };
  const Case cases[] = {
      {[](mcpfan::ServerConfig& c) { c.workers = 5000; },
       "ServerConfig::workers = 5000 is outside 0..1024 (--workers)"},
      {[](mcpfan::ServerConfig& c) { c.http.keepalive_ms = 0; },
       "ServerConfig::http.keepalive_ms = 0 is outside 10..3600000 (--keepalive-ms)"},
      {[](mcpfan::ServerConfig& c) { c.http.max_body = 0; }, "ServerConfig::http.max_body = 0 is outside"},
      {[](mcpfan::ServerConfig& c) { c.http.request_timeout_ms = 1; }, "(--request-timeout-ms)"},
      {[](mcpfan::ServerConfig& c) { c.tenants.max_tenants = 0; }, "ServerConfig::tenants.max_tenants = 0"},
      {[](mcpfan::ServerConfig& c) { c.tenants.max_streams_per_tenant = -1; },
       "ServerConfig::tenants.max_streams_per_tenant = -1"},
      {[](mcpfan::ServerConfig& c) { c.auth.publish_rate = std::nan(""); }, "ServerConfig::auth.publish_rate"},
      {[](mcpfan::ServerConfig& c) { c.auth.publish_burst = -1; }, "(--publish-burst)"},
      {[](mcpfan::ServerConfig& c) { c.shard.drain_batch = 0; }, "ServerConfig::shard.drain_batch = 0"},
      {[](mcpfan::ServerConfig& c) { c.nats.io = "epoll"; }, "ServerConfig::nats.io = \"epoll\""},
  };
  for (const Case& k : cases) {
    mcpfan::ServerConfig cfg;
    k.set(cfg);
    std::string err = start_error(cfg);
    EXPECT_NE(err.find(k.expected), std::string::npos) << "got: " << err;
  }
  // The defaults, and the edges of a range, start.
  EXPECT_EQ(start_error(mcpfan::ServerConfig{}), "");
  mcpfan::ServerConfig edge;
  edge.workers = 1;
  edge.http.keepalive_ms = 10;
  edge.auth.publish_rate = 0;
  EXPECT_EQ(start_error(edge), "");
}

TEST(ServerConfigCheck, ARefusedStartBindsNothing) {
  mcpfan::ServerConfig cfg;
  cfg.listen.port = 0;
  cfg.tenants.max_tenants = std::numeric_limits<std::size_t>::max();  // would size the tenant tables
  cfg.workers = std::numeric_limits<unsigned>::max();         // would make as many shards
  mcpfan::Server server(cfg);  // clamped while built: this returns at once
  auto started = server.start();
  ASSERT_FALSE(started);
  EXPECT_NE(started.error().message.find("ServerConfig::workers"), std::string::npos) << started.error().message;
  // Nothing started: stop() has nothing to do, and attach_stdio() still refuses.
  EXPECT_TRUE(server.stop());
  EXPECT_FALSE(server.attach_stdio(0, 0));
}

}  // namespace

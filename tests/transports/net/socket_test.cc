// The socket writer (transports/src/net/socket.h) on real loopback connections: what is
// written after a batch that waits in the io_uring ring (an answer, a shutdown, the close)
// follows it in order once the ring hands it over, without anyone flushing the ring for the
// connection; the owner hears each completion with its tag, and the close last of all. A TLS
// socket's records take the same roads, in the same order.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/send_ring.h"
#include "net/socket.h"
#include "support/file_dir.h"
#include "support/loopback.h"
#include "support/test_certs.h"
#include "tls/channel.h"
#include "tls/context.h"
#include "support/uv_loop.h"

namespace mcpfan::detail::net {
namespace {

using mcpfan::testing::readable;
using mcpfan::testing::run_until;

// A connection as the socket sees it: it records every event in order.
struct Recorder : SocketEvents {
  std::vector<std::string> events;
  bool throw_on_write = false;
  void on_data(Socket&, const char* data, std::size_t len) override {
    events.push_back("data:" + std::string(data, len));
  }
  void on_read_end(Socket&, int status) override { events.push_back(status == UV_EOF ? "eof" : "read-error"); }
  void on_written(Socket&, std::uint32_t tag, int status) override {
    events.push_back("written:" + std::to_string(tag) + (status == 0 ? "" : ":error"));
    if (throw_on_write) throw std::runtime_error("owner failed");
  }
  void on_shutdown_failed(Socket&) override { events.push_back("shutdown-failed"); }
  void on_closed(Socket&) override { events.push_back("closed"); }
  void on_failure(Socket& s) override {
    events.push_back("failure");
    s.close();
  }
};

class SocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    io_.loop = &loop_;
    io_.read_buffer = read_buf_;
    io_.read_buffer_size = sizeof read_buf_;
    io_.callback_exceptions = &exceptions_;
  }

  void TearDown() override {
    for (auto& c : conns_) {
      if (c->peer >= 0) ::close(c->peer);
      c->sock.close();
    }
    run_until(&loop_, [&] {
      for (auto& c : conns_) {
        if (c->sock.opened() && c->events.events.empty()) return false;
        if (c->sock.opened() && c->events.events.back() != "closed") return false;
      }
      return true;
    });
    ring_.reset();
    uv_run(&loop_, UV_RUN_DEFAULT);
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  bool MakeRing() {
    std::string why;
    ring_ = SendRing::create(8, stats_, nullptr, nullptr, &why);
    if (!ring_) return false;
    io_.ring = ring_.get();
    return true;
  }

  struct Conn {
    explicit Conn(LoopIo& io) : sock(io, events) {}
    Recorder events;
    Socket sock;
    int peer = -1;
  };

  // The server end is a Socket on the test's loop; the peer a plain blocking socket the test reads.
  Conn& Connect() {
    auto [fd, peer] = mcpfan::testing::loopback_pair();
    auto c = std::make_unique<Conn>(io_);
    c->peer = peer;
    EXPECT_GE(c->peer, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(c->sock.open(fd, true), 0);
    conns_.push_back(std::move(c));
    return *conns_.back();
  }

  // A batch like the shard makes: bufs[0] is the framing slot, then views of the test's strings.
  static OutBatch Batch(std::string_view piece) {
    OutBatch b;
    b.bufs.push_back(iovec{nullptr, 0});
    b.bufs.push_back(iovec{const_cast<char*>(piece.data()), piece.size()});
    b.bytes = piece.size();
    return b;
  }

  // Reads until EOF (bounded by a 10 s receive timeout and 1 MiB).
  static std::string ReadToEof(int fd) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char buf[65536];
    while (got.size() < (1u << 20)) {
      ssize_t r = ::read(fd, buf, sizeof buf);
      if (r <= 0) break;
      got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
  }

  uv_loop_t loop_{};
  char read_buf_[4096];
  std::atomic<std::uint64_t> exceptions_{0};
  LoopIo io_;
  SendRingStats stats_;
  std::unique_ptr<SendRing> ring_;
  std::vector<std::unique_ptr<Conn>> conns_;
};

TEST_F(SocketTest, WhatFollowsABatchInTheRingWaitsForItAndKeepsItsOrder) {
  if (!MakeRing()) GTEST_SKIP() << "this kernel refuses io_uring; without a ring there is nothing to wait for";
  Conn& c = Connect();
  EXPECT_EQ(c.sock.write_batch(Batch("event-1;"), "", 7), Socket::Sent::Queued);  // in the ring
  EXPECT_EQ(c.sock.write("answer;", 8), Socket::Sent::Queued);
  EXPECT_EQ(c.sock.write_batch(Batch("event-2;"), "[frame]", 9), Socket::Sent::Queued);
  EXPECT_TRUE(c.sock.shutdown());
  EXPECT_TRUE(c.sock.writes_pending());
  EXPECT_EQ(c.sock.queued_bytes(), std::string("answer;[frame]event-2;").size());  // held by the socket
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_FALSE(readable(c.peer)) << "nothing may overtake the batch that waits in the ring";

  ring_->flush();  // the worker does this after each shard flush
  ASSERT_TRUE(run_until(&loop_, [&] { return c.events.events.size() >= 3; }));
  EXPECT_EQ(ReadToEof(c.peer), "event-1;answer;[frame]event-2;");  // then the shutdown's EOF
  EXPECT_EQ(c.events.events, (std::vector<std::string>{"written:7", "written:8", "written:9"}));
  EXPECT_FALSE(c.sock.writes_pending());
  EXPECT_EQ(c.sock.queued_bytes(), 0u);
}

TEST_F(SocketTest, CloseWaitsForTheRingToHandOverTheBatchAndIsTheLastEvent) {
  if (!MakeRing()) GTEST_SKIP() << "this kernel refuses io_uring; without a ring there is nothing to wait for";
  Conn& c = Connect();
  EXPECT_EQ(c.sock.write_batch(Batch("last-event;"), "", 1), Socket::Sent::Queued);
  c.sock.close();
  EXPECT_TRUE(c.sock.closing());
  EXPECT_EQ(c.sock.write("too late", 2), Socket::Sent::Failed);
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_TRUE(c.events.events.empty()) << "the handle may not close under a send the ring still holds";

  ring_->flush();
  ASSERT_TRUE(run_until(&loop_, [&] { return !c.events.events.empty() && c.events.events.back() == "closed"; }));
  EXPECT_EQ(c.events.events, (std::vector<std::string>{"written:1", "closed"}));
  EXPECT_EQ(ReadToEof(c.peer), "last-event;");
}

TEST_F(SocketTest, WithoutARingABatchThatFitsIsWrittenAtOnce) {
  Conn& c = Connect();
  EXPECT_EQ(c.sock.write_batch(Batch("now;"), "[f]", 1), Socket::Sent::Done);
  EXPECT_FALSE(c.sock.writes_pending());
  EXPECT_EQ(c.sock.write("then;", 2), Socket::Sent::Queued);
  EXPECT_TRUE(c.sock.shutdown());
  EXPECT_EQ(ReadToEof(c.peer), "[f]now;then;");
  ASSERT_TRUE(run_until(&loop_, [&] { return c.events.events.size() == 1; }));
  EXPECT_EQ(c.events.events[0], "written:2");
}

TEST_F(SocketTest, APeerThatStopsReadingStallsTheWritesUntilTheTimeout) {
  Conn& c = Connect();
  std::string big(1 << 20, 'x');
  // Loopback buffers take a few MiB at most; 32 MiB unread leaves writes queued.
  for (int i = 0; i < 32; ++i) ASSERT_NE(c.sock.write(big, 1), Socket::Sent::Failed);
  ASSERT_TRUE(c.sock.writes_pending());
  EXPECT_GT(c.sock.queued_bytes(), 0u);
  std::uint64_t now = uv_now(&loop_);
  EXPECT_FALSE(c.sock.write_stalled(now, 60000));
  EXPECT_TRUE(c.sock.write_stalled(now + 60000, 60000));
}

TEST_F(SocketTest, ReadsReachTheOwnerAndAnEventThatThrowsIsCountedAndClosesTheSocket) {
  Conn& c = Connect();
  ASSERT_EQ(c.sock.read_start(), 0);
  ASSERT_TRUE(mcpfan::testing::send_all(c.peer, "hello"));
  ASSERT_TRUE(run_until(&loop_, [&] { return !c.events.events.empty(); }));
  EXPECT_EQ(c.events.events[0], "data:hello");

  c.events.throw_on_write = true;
  EXPECT_EQ(c.sock.write("x", 3), Socket::Sent::Queued);
  ASSERT_TRUE(run_until(&loop_, [&] { return c.events.events.back() == "closed"; }));
  EXPECT_EQ(c.events.events, (std::vector<std::string>{"data:hello", "written:3", "failure", "closed"}));
  EXPECT_EQ(exceptions_.load(), 1u);
}

TEST_F(SocketTest, ThePeersEofIsReported) {
  Conn& c = Connect();
  ASSERT_EQ(c.sock.read_start(), 0);
  ::shutdown(c.peer, SHUT_WR);
  ASSERT_TRUE(run_until(&loop_, [&] { return !c.events.events.empty(); }));
  EXPECT_EQ(c.events.events[0], "eof");
}

// A TLS client on the peer's end: between its reads the test's loop runs (the server side).
struct TlsPeer {
  TlsPeer(SSL* ssl, int peer_fd) : channel(ssl), fd(peer_fd) {}
  tls::Channel channel;
  int fd;
  std::string plain;
  bool eof = false;
  bool failed = false;

  // One round: the loop, then what the peer can read now (10 ms at most).
  void pump(uv_loop_t* loop) {
    uv_run(loop, UV_RUN_NOWAIT);
    pollfd p{fd, POLLIN, 0};
    if (eof || ::poll(&p, 1, 10) <= 0) return;
    char buf[65536];
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r <= 0) {
      eof = true;
      return;
    }
    std::string reply;
    auto st = channel.feed(buf, static_cast<std::size_t>(r), reply,
                           [&](const char* d, std::size_t n) { plain.append(d, n); });
    failed = failed || st == tls::Channel::Status::Failed;
    if (!reply.empty()) {
      EXPECT_TRUE(mcpfan::testing::send_all(fd, reply));
    }
  }
  template <class Pred>
  bool pump_until(uv_loop_t* loop, Pred done) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done()) {
      if (failed || std::chrono::steady_clock::now() > deadline) return false;
      pump(loop);
    }
    return true;
  }
};

TEST_F(SocketTest, TlsRecordsOfABatchGoThroughTheRingAndWhatFollowsKeepsItsOrder) {
  if (!MakeRing()) GTEST_SKIP() << "this kernel refuses io_uring: TLS records then take libuv's writes";
  mcpfan::testing::FileDir dir;
  auto certs = mcpfan::testing::make_test_certs(dir.path());
  ASSERT_TRUE(certs.ok) << certs.error;
  std::string err;
  tls::ServerSettings ss;
  ss.cert_file = certs.server_cert;
  ss.key_file = certs.server_key;
  auto server = tls::ServerContext::load(ss, err);
  ASSERT_TRUE(server) << err;
  auto client = tls::ClientContext::load(tls::ClientSettings{certs.ca_cert, false}, err);
  ASSERT_TRUE(client) << err;

  Conn& c = Connect();
  c.sock.start_tls(std::make_unique<tls::Channel>(server->new_ssl()));
  ASSERT_EQ(c.sock.read_start(), 0);
  TlsPeer peer(client->new_ssl("localhost"), c.peer);
  std::string hello;
  ASSERT_EQ(peer.channel.start(hello), tls::Channel::Status::Ok);
  ASSERT_TRUE(mcpfan::testing::send_all(c.peer, hello));
  ASSERT_TRUE(peer.pump_until(&loop_, [&] {
    return peer.channel.handshake_done() && !c.sock.tls_handshaking() && !c.sock.writes_pending();
  })) << peer.channel.error();

  // More than the loopback socket takes at once: the ring's send is short, libuv takes the rest,
  // and what was written behind the batch follows that rest.
  const std::string big(16 << 20, 'b');
  const auto sends_before = stats_.sends.load();
  const auto short_before = stats_.short_sends.load();
  EXPECT_EQ(c.sock.write_batch(Batch(big), "", 7), Socket::Sent::Queued);  // its records wait in the ring
  EXPECT_EQ(c.sock.write("answer;", 8), Socket::Sent::Queued);             // behind them, in the socket
  EXPECT_EQ(c.sock.write_batch(Batch("event-2;"), "[frame]", 9), Socket::Sent::Queued);
  EXPECT_TRUE(c.sock.shutdown());  // close_notify, then the write side ends
  uv_run(&loop_, UV_RUN_NOWAIT);
  EXPECT_TRUE(c.events.events.empty()) << "nothing completes before the ring is flushed";
  EXPECT_EQ(stats_.sends.load(), sends_before);

  ring_->flush();  // the worker does this after each shard flush
  ASSERT_TRUE(peer.pump_until(&loop_, [&] { return peer.eof; })) << peer.channel.error();
  EXPECT_TRUE(peer.channel.peer_closed()) << "the close_notify came last";
  const std::string after = "answer;[frame]event-2;";
  ASSERT_EQ(peer.plain.size(), big.size() + after.size());
  EXPECT_TRUE(peer.plain.compare(0, big.size(), big) == 0);
  EXPECT_EQ(peer.plain.substr(big.size()), after);
  EXPECT_EQ(c.events.events, (std::vector<std::string>{"written:7", "written:8", "written:9"}));
  EXPECT_EQ(stats_.sends.load(), sends_before + 1) << "the first batch's records went through the ring";
  EXPECT_EQ(stats_.short_sends.load(), short_before + 1);
  EXPECT_FALSE(c.sock.writes_pending());
}

}  // namespace
}  // namespace mcpfan::detail::net

// The io_uring send ring (transports/src/net/send_ring.h) through write_batch_to, on real
// loopback TCP connections: batches wait in the ring until flush() and then go out together;
// a full ring flushes before it takes more; what a socket does not take goes to libuv's queue
// ahead of later writes, in order; a reset peer fails the send with an error; a stream with
// libuv writes queued is not taken by the ring. Skipped, saying why, where the kernel refuses
// io_uring (the server then uses libuv writes, which the Fanout.*LibuvWrites test covers).
// Waits are bounded and driven by events (bytes read, callbacks counted), never by sleeping.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/batch_write.h"
#include "net/send_ring.h"
#include "support/loopback.h"
#include "support/uv_loop.h"

namespace mcpfan::detail {
namespace {

// One accepted loopback connection: the server end is a libuv TCP handle on the test's loop,
// the peer a plain blocking socket the test reads.
struct Conn {
  uv_tcp_t tcp{};
  int peer = -1;
  int callbacks = 0;
  int last_status = 1;  // 1: no callback yet
};

class SendRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(uv_loop_init(&loop_), 0);
    std::string why;
    probe_ = SendRing::create(8, stats_, nullptr, nullptr, &why);
    if (!probe_) GTEST_SKIP() << "this kernel refuses io_uring (" << why << "); the server would use libuv writes";
    probe_.reset();
    stats_.rings = 0;
  }

  void TearDown() override {
    ring_.reset();
    for (auto& c : conns_) {
      if (c->peer >= 0) ::close(c->peer);
      uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), nullptr);
    }
    uv_run(&loop_, UV_RUN_DEFAULT);  // the close callbacks
    EXPECT_EQ(uv_loop_close(&loop_), 0);
  }

  void MakeRing(unsigned entries) {
    std::string why;
    ring_ = SendRing::create(entries, stats_, [](void* a) { ++*static_cast<int*>(a); }, &woken_, &why);
    ASSERT_TRUE(ring_) << why;
  }

  Conn& Connect() {
    auto [fd, peer] = mcpfan::testing::loopback_pair();
    auto c = std::make_unique<Conn>();
    c->peer = peer;
    EXPECT_GE(c->peer, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(uv_tcp_init(&loop_, &c->tcp), 0);
    EXPECT_EQ(uv_tcp_open(&c->tcp, fd), 0);  // libuv makes it non-blocking
    c->tcp.data = c.get();
    conns_.push_back(std::move(c));
    return *conns_.back();
  }

  // A batch like the shard makes: bufs[0] is the framing slot, then the payload pieces, which
  // (like the shard's chunks) must outlive the send: views of the test's own strings.
  static OutBatch Batch(const std::vector<std::string_view>& pieces) {
    OutBatch b;
    b.bufs.push_back(iovec{nullptr, 0});
    for (std::string_view p : pieces) {
      b.bufs.push_back(iovec{const_cast<char*>(p.data()), p.size()});
      b.bytes += p.size();
    }
    return b;
  }

  static void OnWritten(uv_write_t* req, int status) {
    auto* c = static_cast<Conn*>(req->data);
    QueuedBatch::release(req);
    ++c->callbacks;
    c->last_status = status;
  }

  BatchWrite Write(Conn& c, const std::vector<std::string_view>& pieces, std::string_view frame = {}) {
    return write_batch_to(reinterpret_cast<uv_stream_t*>(&c.tcp), Batch(pieces), frame, &c, OnWritten, ring_.get());
  }

  template <class P>
  bool RunUntil(P pred, std::uint64_t bound_ms = 10000) {
    return mcpfan::testing::run_until(&loop_, pred, bound_ms);
  }

  static bool Readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) == 1;
  }

  // Reads exactly n bytes from a blocking peer (bounded by a 10 s receive timeout).
  static std::string ReadN(int fd, std::size_t n) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string got;
    char buf[65536];
    while (got.size() < n) {
      ssize_t r = ::read(fd, buf, std::min(sizeof buf, n - got.size()));
      if (r <= 0) break;
      got.append(buf, static_cast<std::size_t>(r));
    }
    return got;
  }

  uv_loop_t loop_{};
  SendRingStats stats_;
  std::unique_ptr<SendRing> probe_, ring_;
  std::vector<std::unique_ptr<Conn>> conns_;
  int woken_ = 0;
};

TEST_F(SendRingTest, BatchesWaitForTheFlushAndGoOutInOneSubmit) {
  MakeRing(16);
  EXPECT_EQ(stats_.rings, 1);
  std::vector<Conn*> cs;
  for (int i = 0; i < 8; ++i) cs.push_back(&Connect());
  const std::string a = "data: {\"n\":", b = "}\n\n";
  std::vector<std::string> nums;
  for (int i = 0; i < 8; ++i) nums.push_back(std::to_string(i * 1000));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(Write(*cs[i], {a, nums[i], b}, "1f\r\n"), BatchWrite::Queued);
  EXPECT_EQ(woken_, 1) << "the owner is told once, when the ring stops being empty";
  EXPECT_FALSE(ring_->empty());
  for (Conn* c : cs) {
    EXPECT_EQ(c->callbacks, 0);
    EXPECT_FALSE(Readable(c->peer)) << "nothing is sent before flush()";
  }
  ring_->flush();
  EXPECT_TRUE(ring_->empty());
  EXPECT_EQ(stats_.submits, 1u);
  EXPECT_EQ(stats_.sends, 8u);
  EXPECT_EQ(stats_.short_sends, 0u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(cs[i]->callbacks, 1);
    EXPECT_EQ(cs[i]->last_status, 0);
    std::string want = "1f\r\n" + a + nums[i] + b;
    EXPECT_EQ(ReadN(cs[i]->peer, want.size()), want) << "connection " << i;
  }
  ring_->flush();  // nothing queued: no submit
  EXPECT_EQ(stats_.submits, 1u);
}

TEST_F(SendRingTest, AFullRingFlushesBeforeTakingMore) {
  MakeRing(4);
  std::vector<Conn*> cs;
  for (int i = 0; i < 10; ++i) cs.push_back(&Connect());
  const std::string p = "event\n\n";
  for (Conn* c : cs) EXPECT_EQ(Write(*c, {p}), BatchWrite::Queued);
  // 10 sends through 4 entries: two full rings went out while queueing, two sends wait.
  EXPECT_EQ(stats_.submits, 2u);
  EXPECT_EQ(stats_.sends, 8u);
  ring_->flush();
  EXPECT_EQ(stats_.submits, 3u);
  EXPECT_EQ(stats_.sends, 10u);
  for (Conn* c : cs) {
    EXPECT_EQ(c->callbacks, 1);
    EXPECT_EQ(c->last_status, 0);
    EXPECT_EQ(ReadN(c->peer, p.size()), p);
  }
}

TEST_F(SendRingTest, WhatTheSocketDoesNotTakeGoesToLibuvAheadOfLaterWrites) {
  MakeRing(8);
  Conn& c = Connect();
  // 16 MiB cannot fit the two sockets' buffers (a few MiB at most) while the peer does not read.
  std::string big(16u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
  const std::string_view whole(big);
  EXPECT_EQ(Write(c, {whole.substr(0, big.size() / 2), whole.substr(big.size() / 2)}), BatchWrite::Queued);
  ring_->flush();
  EXPECT_EQ(stats_.sends, 1u);
  EXPECT_EQ(stats_.short_sends, 1u) << "the socket took part; libuv holds the rest";
  EXPECT_EQ(c.callbacks, 0) << "the callback waits for libuv's write of the rest";
  EXPECT_GT(uv_stream_get_write_queue_size(reinterpret_cast<uv_stream_t*>(&c.tcp)), 0u);
  // A later batch is not taken by the ring while libuv holds bytes of this stream: it goes
  // behind them.
  const std::string tail = "TAIL";
  EXPECT_EQ(Write(c, {tail}), BatchWrite::Queued);
  EXPECT_TRUE(ring_->empty());
  EXPECT_EQ(stats_.sends, 1u);

  std::string got;
  std::thread reader([&] { got = ReadN(c.peer, big.size() + tail.size()); });
  // 16 MiB through loopback: a minute's bound, for a TSan build on a loaded machine (one run
  // moved 5 MiB in the default 10 s; the reader then waited on a loop that had stopped).
  EXPECT_TRUE(RunUntil([&] { return c.callbacks == 2; }, 60000)) << "callbacks: " << c.callbacks;
  reader.join();
  EXPECT_EQ(c.last_status, 0);
  ASSERT_EQ(got.size(), big.size() + tail.size());
  EXPECT_TRUE(got == big + tail) << "bytes out of order";
}

TEST_F(SendRingTest, ABatchOfMorePiecesThanSendmsgTakesSendsTheRestThroughLibuv) {
  MakeRing(8);
  Conn& c = Connect();
  // 3,000 pieces: a backlog of a thousand notifications, three pieces each. sendmsg takes at
  // most IOV_MAX (1,024): the first 1,024 go in the ring's send, libuv writes the rest.
  std::vector<std::string> pieces;
  std::string want;
  for (int i = 0; i < 3000; ++i) {
    pieces.push_back("p" + std::to_string(i) + ";");
    want += pieces.back();
  }
  std::vector<std::string_view> views(pieces.begin(), pieces.end());
  EXPECT_EQ(Write(c, views), BatchWrite::Queued);
  ring_->flush();
  EXPECT_EQ(stats_.sends, 1u);
  EXPECT_EQ(stats_.short_sends, 1u);
  std::string got;
  std::thread reader([&] { got = ReadN(c.peer, want.size()); });
  EXPECT_TRUE(RunUntil([&] { return c.callbacks == 1; }));
  reader.join();
  EXPECT_EQ(c.last_status, 0) << uv_strerror(c.last_status);
  EXPECT_TRUE(got == want) << "got " << got.size() << " of " << want.size() << " bytes, or out of order";
}

TEST_F(SendRingTest, AResetPeerFailsTheSendWithAnError) {
  MakeRing(8);
  Conn& c = Connect();
  linger lg{1, 0};  // close() sends a reset
  ASSERT_EQ(::setsockopt(c.peer, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
  ::close(c.peer);
  c.peer = -1;
  uv_os_fd_t fd;
  ASSERT_EQ(uv_fileno(reinterpret_cast<uv_handle_t*>(&c.tcp), &fd), 0);
  pollfd p{fd, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1) << "the reset did not arrive";
  const std::string event = "event\n\n";
  EXPECT_EQ(Write(c, {event}), BatchWrite::Queued);
  ring_->flush();
  EXPECT_EQ(c.callbacks, 1);
  EXPECT_LT(c.last_status, 0) << "a send to a reset connection is an error";
  EXPECT_TRUE(c.last_status == UV_ECONNRESET || c.last_status == UV_EPIPE) << uv_strerror(c.last_status);
}

TEST_F(SendRingTest, AClosingStreamIsNotTakenByTheRing) {
  MakeRing(8);
  Conn& c = Connect();
  uv_close(reinterpret_cast<uv_handle_t*>(&c.tcp), nullptr);
  const std::string event = "event\n\n";
  EXPECT_EQ(Write(c, {event}), BatchWrite::Failed);
  EXPECT_TRUE(ring_->empty());
  uv_run(&loop_, UV_RUN_DEFAULT);
  // TearDown closes the others only.
  ::close(c.peer);
  c.peer = -1;
  conns_.pop_back();
}

TEST(SendRingCreate, ASizeOutOfRangeIsRefusedByName) {
  SendRingStats stats;
  std::string why;
  EXPECT_FALSE(SendRing::create(0, stats, nullptr, nullptr, &why));
  EXPECT_NE(why.find("outside 1..4096"), std::string::npos) << why;
  EXPECT_FALSE(SendRing::create(SendRing::kMaxEntries + 1, stats, nullptr, nullptr, &why));
  EXPECT_NE(why.find("4097"), std::string::npos) << why;
  EXPECT_EQ(stats.rings, 0);
}

}  // namespace
}  // namespace mcpfan::detail

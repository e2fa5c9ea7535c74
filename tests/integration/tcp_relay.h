#pragma once
// A TCP relay on loopback for the cluster tests: every connection accepted on its port is
// forwarded byte for byte to a target port, until Cut(), which closes every relayed connection
// and refuses new ones (closed as soon as accepted) until Restore(). Put between two
// nats-servers, it is a route that breaks while both servers, and the nodes on them, stay up.
//
// Thread affinity: the public methods are thread-safe; the relaying runs on a thread of its own,
// stopped and joined by the destructor. At most kMaxPairs connections are relayed at once (more
// are closed when accepted).
#include <atomic>
#include <string>
#include <thread>

namespace itest {

class TcpRelay {
 public:
  explicit TcpRelay(int target_port);
  ~TcpRelay();
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url(std::string_view scheme = "nats") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_);
  }
  void Cut() { cut_.store(true); }
  void Restore() { cut_.store(false); }
  // Connections relayed now (both ends open).
  int Relayed() const { return relayed_.load(); }

  static constexpr int kMaxPairs = 64;

 private:
  void Run();

  int target_ = 0;
  int listener_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};  // the destructor writes one byte: the thread returns
  std::atomic<bool> cut_{false};
  std::atomic<int> relayed_{0};
  std::thread thread_;
};

}  // namespace itest

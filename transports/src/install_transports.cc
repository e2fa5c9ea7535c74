// The composition root of the transports: the one file that names both the loop runtime
// (server/) and the transports it runs (http1/, http2/, stdio/), so that neither includes the other
// (docs/design.md "The rooms of transports/"). A new transport installs its acceptor here.
#include "http/session_park.h"
#include "http1/connection.h"
#include "http2/connection.h"
#include "server/server_state.h"
#include "stdio/stdio_conn.h"

namespace mcpfan::detail {

namespace {

void accept_http1(LoopContext& w, uv_stream_t* listener, bool operator_listener) {
  Http1Conn* c = nullptr;
  guarded(
      w.stats(),
      [&] {
        c = new Http1Conn(w, operator_listener);
        if (uv_accept(listener, c->socket().stream()) == 0 && !w.stopping()) {
          c->start();
        } else {
          c->close();
        }
      },
      [&] {
        if (c) c->close();
      });
}

void adopt_h2(LoopContext& w, std::unique_ptr<net::Socket> sock, bool operator_listener, std::string_view first) {
  Http2Conn::adopt(w, std::move(sock), operator_listener, first);
}

bool adopt_stdio(LoopContext& w, ControlMsg& msg, std::string& err) {
  return StdioConn::open(w, msg.in_fd, msg.out_fd, msg.from_unix_listener, msg.client, msg.on_end, err) != nullptr;
}

}  // namespace

void install_transports(ServerState& state) {
  state.acceptors.tcp = accept_http1;
  state.acceptors.stdio = adopt_stdio;
  state.acceptors.h2 = adopt_h2;
  // An expired session may still be parked (subscribed, journaling) on some worker.
  state.sessions.set_on_expired([&state](const std::shared_ptr<Session>& s) { end_session_stream(*state.hub, s); });
}

}  // namespace mcpfan::detail

#pragma once
// The request half of HTTP/1.1: bytes in, validated request values out.
//
// http_parser (Debian's 2.9.4, built non-strict) does the framing: the request line,
// Content-Length or chunked bodies, pipelining. That build lets through what a server in
// front of another must refuse, so this adds the rules of RFC 9112 on top, for every listener:
//  - a field name is a token: whitespace before the colon ("Transfer-Encoding : chunked"),
//    or any other non-token byte, is a 400 (§5.1); so is an empty name;
//  - a field value holds no CR, LF or NUL, and obs-fold (a line starting with SP/HTAB
//    continuing the previous value) is a 400 (§5.2);
//  - more than one Host is a 400 (§3.2); so is a request target with a byte that is not
//    visible ASCII (§3.2); CONNECT is a 405 (mcpfan is not a tunnel);
//  - trailers of a chunked body are read (bounded by the header limit) and dropped: they never
//    become fields, and never change what was parsed from the head (§7.1.2 lets a recipient
//    discard them);
//  - the size limits: request target, head (with trailers), body.
// What it accepts is exactly what it hands on: with `keep_fields` every field of the head, in
// order, names as sent and values without their surrounding whitespace. A proxy builds the
// forwarded head from those values (http/upstream_request.h), never from the bytes received.
//
// Thread affinity: none of its own; used from one thread (its connection's loop). Lifetime:
// the HttpRequest passed to Events is the parser's and valid until the next request begins.
#include <http_parser.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/request.h"
#include "mcp/limits.h"

namespace mcpfan::detail {

struct RequestLimits {
  std::size_t max_url_length = 8192;
  std::size_t max_header_bytes = 16384;  // the head and the trailers
  std::size_t max_body = 1 << 20;
};

/** Why a request was refused: the status, a message naming the problem, and the limit it hit (if one). */
struct RequestRejection {
  int status = 400;
  std::optional<Limit> limit;
  std::string message;
  bool head = false;  // the refused request is a HEAD whose head was read whole: its answer has no body
};

class RequestParser {
 public:
  /** Called from inside execute(). An exception thrown here stops the parser (failed()). */
  class Events {
   public:
    virtual ~Events() = default;
    /** The first byte of a request has arrived. */
    virtual void request_begun() = 0;
    /** The head is parsed and valid (Expect: 100-continue is the caller's to answer). */
    virtual void head_parsed(HttpRequest& req) = 0;
    /** The request is complete. The parser pauses after it: resume() reads the next one. */
    virtual void request_complete(HttpRequest& req) = 0;
  };

  enum class Status {
    Ok,        // every byte consumed
    Paused,    // a request completed (or pause() was called); the rest waits for resume()
    Rejected,  // the request breaks a rule or a limit: rejection() says which
    Failed,    // an Events call threw: nothing sensible to answer
  };

  RequestParser(Events& events, RequestLimits limits, bool keep_fields);
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  /** Parses up to `len` bytes; `consumed` says how many were used. */
  [[nodiscard]] Status execute(const char* data, std::size_t len, std::size_t& consumed);
  void pause() noexcept;
  void resume() noexcept;
  /** Whether the current request lets the connection stay open (version and Connection). */
  [[nodiscard]] bool keep_alive() const noexcept;
  [[nodiscard]] const RequestRejection& rejection() const noexcept { return rejection_; }
  /** Frees the buffers' memory (a connection that became a stream reads no more requests). */
  void release_memory();

 private:
  template <class F>
  static int step(http_parser* p, F&& f) noexcept;
  static int on_message_begin(http_parser* p);
  static int on_url(http_parser* p, const char* at, std::size_t len);
  static int on_header_field(http_parser* p, const char* at, std::size_t len);
  static int on_header_value(http_parser* p, const char* at, std::size_t len);
  static int on_headers_complete(http_parser* p);
  static int on_body(http_parser* p, const char* at, std::size_t len);
  static int on_message_complete(http_parser* p);
  static const http_parser_settings kSettings;

  int reject(int status, std::optional<Limit> limit, std::string message);
  /**
   * A rule broken inside the head: the first one is answered once the head is read whole (so a
   * HEAD's answer is known to be one, and has no body); parsing goes on, bounded by the header
   * limit. Returns 0.
   */
  int defer(int status, std::string message);
  int count_head_bytes(std::size_t len);
  /** Ends the field being read: checks it and stores it. Nonzero: rejected. */
  int commit_field();

  Events& events_;
  const RequestLimits limits_;
  const bool keep_fields_;
  http_parser parser_{};
  HttpRequest req_;
  std::string field_, value_;
  RequestRejection rejection_;
  const char* buf_end_ = nullptr;  // the end of the bytes execute() was given
  bool in_value_ = false;          // the last head callback was a value
  bool value_at_end_ = false;      // ...and it ran to the end of its buffer (continued in the next)
  bool in_trailers_ = false;       // the head is read (the method known), the request not complete: fields are trailers
  struct Deferred {
    int status;
    std::string message;
  };
  std::optional<Deferred> deferred_;  // the first rule the head broke, answered at its end
  bool failed_ = false;
  bool rejected_ = false;
};

}  // namespace mcpfan::detail

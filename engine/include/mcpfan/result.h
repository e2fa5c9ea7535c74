#pragma once
/**
 * Typed results for engine APIs: no exceptions on the hot path.
 * `Error::code` is a JSON-RPC error code; `message` names the problem for the client.
 *
 * Thread affinity: value types with no shared state; a Result owns its value or error.
 */
#include <string>
#include <utility>
#include <variant>

namespace mcpfan {

namespace rpc_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kMissingClientCapability = -32021;  // e.g. task notifications without the Tasks extension
inline constexpr int kUnsupportedVersion = -32022;
// mcpfan's own, in the implementation-defined server-error range:
inline constexpr int kUnauthorized = -32030;   // no valid credentials (HTTP 401)
inline constexpr int kForbidden = -32031;      // credentials valid, but not for this tenant (HTTP 403)
inline constexpr int kLimitExceeded = -32032;  // a configured limit refused it (HTTP 429)
}  // namespace rpc_code

struct Error {
  int code = rpc_code::kInternalError;
  std::string message;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  [[nodiscard]] T& value() & { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  [[nodiscard]] const Error& error() const& { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/** The result of an operation that returns nothing but may fail. */
class [[nodiscard]] Status {
 public:
  Status() = default;                                  // success
  Status(Error error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit by design
  [[nodiscard]] bool ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return ok(); }
  /** Only when !ok(). */
  [[nodiscard]] const Error& error() const& { return error_; }

 private:
  Error error_;
  bool failed_ = false;
};

}  // namespace mcpfan

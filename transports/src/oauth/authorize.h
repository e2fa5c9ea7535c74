#pragma once
// Per-subscription authorization by the application (--authorize-url; docs/security.md
// "--authorize-url"): the question mcpfan POSTs before it acknowledges a listen or a 2025
// resources/subscribe, the answer it reads back, and the narrowing of the request to it.
//
//   question: {"tenant":"acme","subject":"alice","clientId":"app-1","method":"subscriptions/listen",
//              "notifications":{"resourceSubscriptions":["file:///a"],"toolsListChanged":true,
//                               "taskIds":["t1"]}}
//   answer:   {"notifications":{"resourceSubscriptions":["file:///a"]},"ttlMs":30000}
//
// `notifications` has the shape of subscriptions/listen's params.notifications, so the answer
// is the subset the application allows: a key it does not list and a flag it does not set are
// not allowed. Nothing it lists beyond the question is taken (an answer can only narrow).
// `ttlMs` (optional, capped by --authorize-max-ttl-ms; absent: not kept) is how long mcpfan
// may reuse the answer for the same question.
//
// Pure functions; thread-safe.
#include <cstdint>
#include <string>
#include <string_view>

#include "mcpfan/result.h"
#include "mcpfan/rpc_decoder.h"

namespace mcpfan::detail::oauth {

/** Who asks, for what: the question's JSON text (also the cache key: equal questions, equal text). */
[[nodiscard]] std::string authorize_question(std::string_view tenant, std::string_view subject,
                                             std::string_view client_id, std::string_view method,
                                             const ListenSpec& requested);

struct AuthorizeAnswer {
  ListenSpec allowed{};
  std::uint64_t ttl_ms = 0;  // 0: not kept
};

/** Reads the application's answer; the error names what is wrong with it (then: fail closed). */
[[nodiscard]] Result<AuthorizeAnswer> read_authorize_answer(std::string_view json);

/** Narrows `requested` to what `allowed` lists (order of `requested` kept). True if anything is left. */
bool narrow_to(ListenSpec& requested, const ListenSpec& allowed);

}  // namespace mcpfan::detail::oauth

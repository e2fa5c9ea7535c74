#pragma once
// SEP-2243's routing headers against the body they mirror (2026-07-28 Streamable HTTP, "Request
// Metadata"): `Mcp-Method` mirrors `method`; `Mcp-Name` mirrors `params.name` (tools/call,
// prompts/get), `params.uri` (resources/read) or, by SEP-2663's binding, `params.taskId`
// (tasks/get, tasks/update, tasks/cancel). A request whose headers say something its body does
// not is refused (400, -32020 HeaderMismatch) before mcpfan answers it or forwards it, so that an
// intermediary routing on a header and the server executing the body cannot disagree.
// Pure functions (one simdjson parser per thread, reused).
#include <optional>
#include <string>
#include <string_view>

#include "mcpfan/rpc_decoder.h"

namespace mcpfan::detail {

/** The params member `Mcp-Name` mirrors for `method` ("name", "uri", "taskId"); empty for any other method. */
[[nodiscard]] std::string_view mcp_name_source(std::string_view method) noexcept;

/**
 * The value an `Mcp-Name` header carries: SP/HTAB around it removed, and a Base64 sentinel
 * (`=?base64?...?=`, canonical padded Base64) decoded. Nullopt when it holds a byte a header
 * value may not (outside HTAB and SP..`~`), or a sentinel that is not canonical Base64.
 */
[[nodiscard]] std::optional<std::string> decode_mcp_name(std::string_view header);

/**
 * Why a request's `Mcp-Method` and `Mcp-Name` header values (as received; empty = absent) do
 * not fit its body, as the message of a 400 -32020 refusal; nullopt when they fit.
 *  - `r`: the body as RpcDecoder read it (its method and id); `body`: the body's text, read
 *    again only for a method with an `Mcp-Name` source, or when a second `method` member may
 *    hide in it (a text with a backslash, or `"method"` twice).
 *  - `required`: the revision requires the headers (2026-07-28): a request without
 *    `Mcp-Method`, or without `Mcp-Name` when its body has the member it mirrors, is refused.
 *    Otherwise (DRAFT-2026-v1) a header may be absent, but never wrong.
 *  - A notification's `Mcp-Method` may be absent; when present it must match.
 *  - A body naming `method`, `params` or the mirrored member more than once is refused: a
 *    parser taking the last one would execute what the header did not name.
 */
[[nodiscard]] std::optional<std::string> routing_header_mismatch(std::string_view mcp_method, std::string_view mcp_name,
                                                                 const RpcRequest& r, std::string_view body,
                                                                 bool required);

}  // namespace mcpfan::detail

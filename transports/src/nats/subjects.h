#pragma once
// The NATS subject contract of the mcpfan backplane, version "v1". This comment is the
// authoritative specification: every node of one cluster must compute the same subjects, so
// nothing below may change without a new version token ("v2") and a migration.
//
// == Why an encoding ==
// URIs and tenant names are never used as subjects raw: in NATS a `.` splits tokens,
// whitespace and control bytes are illegal, `*` and `>` are wildcards, and nats.c does not
// check subjects on publish. Every subject below is made of bytes in [A-Za-z0-9_~-] and `.`,
// plus a final `>` in some interests (`~` is legal in NATS, though outside its recommended
// alphanumerics; it only ever appears in tenant tokens). No subject starts with `$` (the
// prefix cannot), so none falls in NATS's reserved `$SYS`/`$JS` space.
//
// == Subjects ==
//   resources/updated of URI V:  <prefix>.v1.<tenant>.r.<t1>.<t2>...<tk>    (1 <= k <= 12)
//   list_changed of one kind:    <prefix>.v1.<tenant>.l.<tools|prompts|resources>
//   notifications/tasks of task T: <prefix>.v1.<tenant>.t.H(3, T)          (one token, any T)
//
// The task subject was added to v1 after it shipped, as a new kind token (`t`): no subject of
// v1 changed, a node that does not know tasks never subscribes to a `t` subject (so a mixed
// cluster only misses task notifications on the older nodes, which have no task listens), and
// a `t` subject cannot coincide with an `r` or `l` one. That is why it stays "v1".
//
// <prefix>  Configured (`--nats-prefix`, default `mcpfan`): one or more non-empty tokens of
//           [A-Za-z0-9_-] separated by `.`, at most 32 bytes (prefix_error() checks it; the
//           encoders assume a valid prefix).
// <tenant>  The tenant token (below). `r` and `l` are literal tokens; a resource subject and a
//           list subject never coincide.
//
// == Tenant token ==
//   - Each byte in [A-Za-z0-9_-] stands for itself; every other byte (`.`, `~`, space, `*`,
//     `>`, control and non-ASCII bytes) becomes `~` plus its value in two UPPERCASE hex digits:
//     `acme.eu` -> `acme~2Eeu`, `a b` -> `a~20b`, `é` (C3 A9) -> `~C3~A9`.
//   - If that escaped form is longer than 64 bytes: `~h` + H(2, tenant) (13 bytes), H below.
//   - The empty tenant: `~e`.
//   Escaped forms are injective (a raw `~` is always escaped, so `~` + two uppercase hex digits
//   is a prefix code), and `~h`/`~e` (lowercase) never occur in an escaped form, so two
//   tenants whose escaped forms are <= 64 bytes never share a token. Two tenants that both need
//   the hashed form share one only on a 64-bit hash collision; a receiving node still checks
//   the tenant of each notification (its local index is keyed by tenant), so a collision can
//   only cost traffic, never deliver to the wrong tenant.
//
// == URI tokens ==
//   Split V on `/` into segments s1..sn (n = number of `/` + 1; empty segments count:
//   `file:///a` -> `file:`, ``, ``, `a`; `` -> one empty segment).
//   - n <= 12: tokens H(0, s1) ... H(0, sn).
//   - n > 12 (folded): tokens H(0, s1) ... H(0, s11), then one token H(1, rest), where rest is
//     everything after the 11th `/` (with its `/`s): 12 tokens.
//   H(d, bytes): h = the 64-bit FNV-1a hash of the bytes (offset basis 0xcbf29ce484222325,
//   prime 0x100000001b3; for each byte: h ^= byte, h *= prime), then mixed (a bijection, so no
//   collision is added): h ^= h >> 33; h *= 0xff51afd7ed558ccd; h ^= h >> 33;
//   h *= 0xc4ceb9fe1a85ec53; h ^= h >> 33 (all modulo 2^64). It is written in 11 base64url
//   characters (alphabet A-Z a-z 0-9 - _, most significant first): the first character holds
//   the domain d in its upper 2 bits and h's bits 63..60 in its lower 4; the other ten hold
//   bits 59..0, 6 at a time. So a segment token starts with A-P (d = 0), a folded-rest token
//   with Q-Z or a-f (d = 1), a tenant hash with g-v (d = 2), a task id with w-z, 0-9, - or _
//   (d = 3): a 12-segment URI never shares its last token with a folded one.
//   Examples (H values pinned by tests/nats/subjects_test.cc):
//     H(0, "")     = O_QH2C6mSkm    H(0, "file:")   = K4S2u_kVlo6    H(0, "urn:a..b") = EkfY5RaZRJw
//     H(0, "proj") = Htf3SSb97AH    H(0, "a b.txt") = MZA-LR5nFKr
//     file:///proj/a b.txt -> mcpfan.v1.default.r.K4S2u_kVlo6.O_QH2C6mSkm.O_QH2C6mSkm.Htf3SSb97AH.MZA-LR5nFKr
//     urn:a..b             -> mcpfan.v1.default.r.EkfY5RaZRJw     (one segment: its dots are hashed)
//     a/b/c/d/e/f/g/h/i/j/k/l        -> 12 tokens, no fold
//     a/b/c/d/e/f/g/h/i/j/k/l/m      -> H(0,"a")...H(0,"k").H(1,"l/m")       (folded)
//
// == Interests (what a node subscribes to) ==
// The engine's rule (engine/include/mcpfan/index.h): a subscription U matches a published V
// when V == U, or when U ends with `/` and V starts with U.
//   - exact U (not ending in `/`): the subject of publishing U; no wildcard.
//   - prefix U (ends in `/`, with m `/`s, so segments s1..sm before its final `/`):
//       m <= 11: <prefix>.v1.<tenant>.r.H(0,s1)...H(0,sm).>
//       m >= 12: <prefix>.v1.<tenant>.r.H(0,s1)...H(0,s11).>        (a superset)
//     `>` matches one or more further tokens. Every V that starts with U has segments s1..sm
//     then at least one more (V == U has the empty one after the final `/`), so V's subject
//     has the interest's literal tokens first (V folds only after its 11th segment) and at
//     least one token after them: never a missed delivery. With m <= 11 the interest matches
//     nothing else (barring a hash collision); with m >= 12 it also matches any URI of 12 or
//     more segments sharing U's first 11: the receiving node's local index drops (and counts)
//     those. Over-matching is allowed, under-matching never.
//   - list_changed: the list subject itself.
//   - a task id: the task subject itself (task ids have no prefix rule).
//   Examples: `file:///proj/` -> mcpfan.v1.default.r.K4S2u_kVlo6.O_QH2C6mSkm.O_QH2C6mSkm.Htf3SSb97AH.>
//     which matches the subjects of `file:///proj/` (its last token H(0,"")) and of
//     `file:///proj/x/y`, but not of `file:///proj` or `file:///project/x`.
//
// == Heartbeats ==
//   <prefix>.v1.~hb      every node publishes its heartbeat here and subscribes to it (nats/peers.h)
// `~hb` is no tenant token (a tenant token's `~` is followed by two uppercase hex digits, by
// `e` alone, or by `h` and an 11-character hash), so the subject coincides with no tenant's and
// no tenant's `<scope>.>` matches it; it lies under `<prefix>.v1.>`, the permission a node's
// NATS user already has. Added to v1 like the task kind: a node that does not know it neither
// sends nor subscribes to it, and its peers simply never hear from it.
//
// == Bounds ==
// Every subject and interest is at most 256 bytes when the prefix is at most 32:
//   prefix 32 + `.v1.` 4 + tenant token 64 + `.r` 2 + 12 x (`.` + 11) 144 = 246 for a subject;
//   an interest has at most 11 tokens and `.>` (134 < 144); a list subject ends in
//   `.l.resources` (12 < 146). So 246 <= kMaxSubjectBytes, whatever the URI's length.
//   A task subject ends in `.t.` + 11 (14 < 146).
//
// Thread safety: pure functions of their arguments, no shared state; callable from any thread.
// Allocation: append_*() writes into the caller's string and allocates nothing when its
// capacity already holds kMaxSubjectBytes more bytes; the other encoders return a new string.
// Cost: a hash and a base64url token per URI segment, at most 12; no benchmark in the
// project times it yet.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mcpfan/kind.h"

namespace mcpfan::detail::nats {

inline constexpr std::string_view kVersionToken = "v1";
inline constexpr std::string_view kDefaultPrefix = "mcpfan";
inline constexpr std::size_t kMaxPrefixBytes = 32;
inline constexpr std::size_t kMaxTenantTokenBytes = 64;
inline constexpr std::size_t kHashTokenBytes = 11;
inline constexpr std::size_t kMaxUriTokens = 12;
inline constexpr std::size_t kMaxSubjectBytes = 256;

/** Hash-token domains (the upper two bits of the first character). */
enum class HashDomain : std::uint8_t { Segment = 0, FoldedRest = 1, Tenant = 2, Task = 3 };

/** The 64-bit FNV-1a hash of the bytes. */
[[nodiscard]] std::uint64_t fnv1a64(std::string_view bytes) noexcept;
/** The hash of a token: fnv1a64 then the finalizer of the spec (fixed forever for v1). */
[[nodiscard]] std::uint64_t token_hash(std::string_view bytes) noexcept;
/** Appends H(domain, bytes): 11 base64url characters. */
void append_hash_token(std::string& out, HashDomain domain, std::string_view bytes);

/** Why `prefix` cannot be a subject prefix, or nullopt when it can. */
[[nodiscard]] std::optional<std::string> prefix_error(std::string_view prefix);

/** Appends the tenant token (escaped, `~h` hashed or `~e`); at most 64 bytes. */
void append_tenant_token(std::string& out, std::string_view tenant);

/** What a tenant token names: the tenant itself (escaped, or `~e`), or only its hash (`~h`). */
struct TenantTokenName {
  bool hashed = false;  // `~h`: the name is not in the token; a body must name it, and its token must match
  std::string name;     // when !hashed
};
/**
 * Reads a tenant token back (the receiving side of the contract). Nullopt unless the token is
 * exactly what append_tenant_token() writes for some tenant: an escape of a byte that needs
 * none, lowercase hex, a bad `~h` hash or an over-long escaped form are refused, so each tenant
 * has one token and a subject names one tenant.
 */
[[nodiscard]] std::optional<TenantTokenName> decode_tenant_token(std::string_view token);

/**
 * `<prefix>.v1.<tenant>`: every subject of the tenant starts with it and a dot, so
 * `<scope>.>` is the whole tenant (a compacted tenant's one subscription).
 */
[[nodiscard]] std::string tenant_scope(std::string_view prefix, std::string_view tenant);

/** Appends the subject of a resources/updated for `uri`. */
void append_resource_subject(std::string& out, std::string_view prefix, std::string_view tenant, std::string_view uri);
/** Appends the interest for a subscription to `uri` (a prefix subscription iff it ends in `/`, as in the engine). */
void append_resource_interest(std::string& out, std::string_view prefix, std::string_view tenant, std::string_view uri);
/** Appends the subject of a list_changed kind; appends nothing for Kind::ResourceUpdated. */
void append_list_subject(std::string& out, std::string_view prefix, std::string_view tenant, Kind kind);

/** Appends the subject of a notifications/tasks of task `task_id`. */
void append_task_subject(std::string& out, std::string_view prefix, std::string_view tenant, std::string_view task_id);
/** Appends the subject a notification of `kind` with `key` (its URI or task id; ignored for list kinds) goes on. */
void append_subject(std::string& out, std::string_view prefix, std::string_view tenant, Kind kind,
                    std::string_view key);
/** `<prefix>.v1.~hb`: the subject of every node's heartbeat. */
[[nodiscard]] std::string heartbeat_subject(std::string_view prefix);
/** The interest of an index key of `kind` (a resource interest, a list subject, a task subject). */
[[nodiscard]] std::string interest_of(std::string_view prefix, std::string_view tenant, Kind kind,
                                      std::string_view key);

[[nodiscard]] std::string resource_subject(std::string_view prefix, std::string_view tenant, std::string_view uri);
[[nodiscard]] std::string resource_interest(std::string_view prefix, std::string_view tenant, std::string_view uri);
/** Empty for Kind::ResourceUpdated (it has no list subject). */
[[nodiscard]] std::string list_subject(std::string_view prefix, std::string_view tenant, Kind kind);
/** `tools`, `prompts` or `resources`; empty for Kind::ResourceUpdated. */
[[nodiscard]] std::string_view list_token(Kind kind) noexcept;

/**
 * A subject NATS accepts for publishing, within this contract's bound: 1..kMaxSubjectBytes
 * bytes, tokens non-empty, no byte <= 0x20 or 0x7F, no `*` or `>`.
 */
[[nodiscard]] bool valid_publish_subject(std::string_view subject) noexcept;
/** As valid_publish_subject, except that a token may be `*`, and the last token may be `>`. */
[[nodiscard]] bool valid_interest_subject(std::string_view interest) noexcept;
/**
 * NATS matching: tokens compare literally, `*` matches one token, a final `>` one or more
 * further tokens. Both arguments are assumed valid (interest and publish subject).
 */
[[nodiscard]] bool subject_matches(std::string_view interest, std::string_view subject) noexcept;

}  // namespace mcpfan::detail::nats

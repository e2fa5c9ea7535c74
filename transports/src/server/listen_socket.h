#pragma once
/**
 * The listening TCP sockets of one listener (--listen, --publish-listen): one per worker loop
 * on the same address, joined by SO_REUSEPORT, so that the kernel spreads connections over the
 * loops (by a hash of each connection's addresses and ports) with no hand-off between threads.
 *
 * Exclusive unless asked (tests/integration/listen_port_test.cc). Linux lets any socket of the same user with
 * SO_REUSEPORT join a group of SO_REUSEPORT listeners, so a second process on the address
 * would start, announce itself and take part of the connections. No socket option keeps a
 * group to one process (the kernel checks only the user id), so bind_listener() checks:
 *  1. before binding, a probe socket without SO_REUSEPORT (with SO_REUSEADDR, so that the
 *     TIME_WAIT connections of an earlier run do not count) is bound to the address and
 *     closed at once: the bind fails with EADDRINUSE when some socket listens there
 *     (or on an overlapping wildcard address) — whoever owns it, with or without SO_REUSEPORT;
 *  2. after the group listens, the listening sockets of this network namespace are read
 *     (NETLINK_SOCK_DIAG, as `ss -lt` does): one on an overlapping address that is not ours
 *     means another process joined between its probe and ours (two started at the same
 *     instant, both passed step 1); then every socket is closed and the start fails. Each
 *     racer listens before it looks, so the later one always sees the earlier: both may
 *     fail, never both serve (the few connections the kernel gave the loser meanwhile are
 *     reset). Where sock_diag is refused (a seccomp filter, systemd's
 *     RestrictAddressFamilies without AF_NETLINK), step 2 is skipped: only that race stays open.
 * With `share` (the --reuse-port flag) both checks are skipped (the old behaviour), for
 * operators who run several processes on one port on purpose (zero-downtime restarts). The
 * one that joins decides: a process serving without `share` keeps SO_REUSEPORT on its own
 * sockets (the kernel needs it on every member) and so cannot keep a `share` joiner out.
 *
 * The alternative, one socket without SO_REUSEPORT duplicated into every loop (as
 * ServerConfig::listen.listen_fd is served), is exclusive in the kernel, but every loop then waits on
 * the one accept queue: each connection wakes them all and the first to call accept() takes
 * it (and libuv keeps accepting until the queue is empty), so the spread over loops is no
 * longer the kernel's hash. That was not measured here; the per-loop queues were kept.
 *
 * Thread affinity: plain functions over sockets, no shared state; Server::start() calls them.
 */
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mcpfan/result.h"

namespace mcpfan::detail {

/** "127.0.0.1:8080" or "[::1]:8080". */
[[nodiscard]] std::string address_text(const sockaddr_storage& addr);

/** The same family and port, and the same IP address or either one the wildcard (0.0.0.0, ::). */
[[nodiscard]] bool addresses_overlap(const sockaddr_storage& a, const sockaddr_storage& b) noexcept;

/**
 * `n` (at least 1) sockets bound to `addr` with SO_REUSEPORT and listen()ing (non-blocking,
 * close-on-exec), in `fds`: the caller's to close. `addr`'s port 0 is the kernel's choice of a
 * free port (never one another group holds), written back into `addr`. Without `share`, an
 * address some other socket listens on is refused (the header comment says how).
 * On an error nothing stays open, `fds` is empty and the message reads
 * "<what> HOST:PORT: address in use (another process serves it; --reuse-port shares it on
 * purpose)", or "<what> HOST:PORT: cannot bind: <reason>" for any other cause.
 */
[[nodiscard]] Status bind_listener(sockaddr_storage& addr, unsigned n, bool share, std::string_view what,
                                   std::vector<int>& fds);

/**
 * A listening Unix-domain socket at `path` (non-blocking, close-on-exec), or -1 with `err`.
 * A socket file left by a process that is gone is replaced; one that a live process still
 * accepts on is refused ("address in use (another process serves it)"): unlinking it would
 * silently take its path from that process. A file that is not a socket is refused too.
 */
[[nodiscard]] int bind_unix_listener(const std::string& path, std::string& err);

/**
 * Whether a listening TCP socket other than `own` (by inode) listens on an address
 * overlapping `addr` in this network namespace: the check after binding. An error when the
 * kernel cannot be asked (no sock_diag), with the reason.
 */
[[nodiscard]] Result<bool> foreign_listener(const sockaddr_storage& addr, const std::vector<int>& own);

}  // namespace mcpfan::detail

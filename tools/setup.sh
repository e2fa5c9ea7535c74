#!/usr/bin/env bash
# Installs the Debian packages mcpfan needs, only those missing. The lists are data
# (tools/deps/*.txt; tests/package/run_server_deps_test.sh reads them too):
#   setup.sh server   building and running the server: tools/deps/server.txt (tools/run-server.sh)
#   setup.sh test     that and what tests, benchmarks, fuzzers and the package test need:
#                     tools/deps/server.txt + tools/deps/test.txt (tools/run-tests.sh)
#   setup.sh          the same as "test"
# With anything missing it runs `apt-get update` first (a fresh machine has no lists).
#
# No package installed here may start a service: the tests start their own nginx and
# nats-server, on ports they choose, and a machine that runs the test command must not begin
# serving on port 80. While apt-get runs, a policy-rc.d that forbids every start (exit 101,
# invoke-rc.d(8); deb-systemd-invoke honours it too) keeps maintainer scripts from starting
# anything, so nothing binds a port even for a moment and an install cannot fail because
# port 80 is taken. On a host running systemd, the units the install added are then disabled,
# so they do not start at the next boot either. An existing policy-rc.d is left alone.
#
# MCPFAN_SETUP_ROOT (tests only; default: the real root) is put in front of /usr/sbin/policy-rc.d,
# /run/systemd/system and the unit directories, so a test can run this with a fake apt-get.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sysroot="${MCPFAN_SETUP_ROOT:-}"

case "${1:-test}" in
  server) lists=("$here/deps/server.txt") ;;
  test) lists=("$here/deps/server.txt" "$here/deps/test.txt") ;;
  *) echo "usage: $0 [server|test]" >&2; exit 2 ;;
esac

missing=()
while read -r pkg cmd _; do
  [ -n "$pkg" ] || continue
  if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then continue; fi
  if [ -n "$cmd" ] && command -v "$cmd" >/dev/null; then continue; fi
  missing+=("$pkg")
done < <(sed -e 's/#.*//' "${lists[@]}")
[ ${#missing[@]} -gt 0 ] || exit 0

echo "setup: installing ${missing[*]}" >&2
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

units() {  # the service units installed on the machine, one name a line
  local d f
  for d in "$sysroot/lib/systemd/system" "$sysroot/usr/lib/systemd/system"; do
    for f in "$d"/*.service; do
      if [ -e "$f" ]; then echo "${f##*/}"; fi
    done
  done | sort -u
}

policy="$sysroot/usr/sbin/policy-rc.d"
own_policy=0
remove_policy() { if [ "$own_policy" = 1 ]; then $SUDO rm -f "$policy"; fi; }
trap remove_policy EXIT
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# tools/setup.sh: no service starts while it installs packages.\nexit 101\n' |
    $SUDO tee "$policy" >/dev/null
  own_policy=1
  $SUDO chmod 0755 "$policy"
fi
before="$(units)"

$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

remove_policy
own_policy=0
if [ -d "$sysroot/run/systemd/system" ]; then
  while read -r unit; do
    [ -n "$unit" ] || continue
    echo "setup: disabling $unit (installed for the tests; they start their own)" >&2
    $SUDO systemctl disable --quiet "$unit" || true
  done < <(comm -13 <(printf '%s\n' "$before") <(units))
fi

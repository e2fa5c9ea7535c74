#!/usr/bin/env bash
# The Debian packages end to end (issue 13 part 2, README "Install as a service"):
#   1. a Release build configured for /usr, `cpack -G DEB` (mcpfan and mcpfan-dev);
#   2. what the packages hold: files, the conffile, computed dependencies;
#   3. both unpacked into a scratch root with `dpkg -x` (works as root and not, touches no
#      system state); the unit checked with `systemd-analyze verify` where it exists (no
#      running systemd needed);
#   4. the unpacked binary started with the unpacked config (listen moved to an ephemeral
#      loopback port, an operator listener added): /healthz, a listen and a publish, SIGHUP;
#   5. the example in tests/package/example built against the unpacked headers and CMake
#      package (CMAKE_PREFIX_PATH into the scratch root), and run;
#   6. the scratch root removed (also on failure).
# Usage: run.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$(cd "$1" && pwd)"
mkdir -p "$2"
work="$(cd "$2" && pwd)"
jobs="${MCPFAN_PACKAGE_JOBS:-$(nproc)}"
root="$work/root"
server_pid=""
listen_pid=""

installed=0  # 1 while this run's packages are installed on the machine (step 7)
cleanup() {
  if [ -n "$listen_pid" ]; then kill "$listen_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  if [ "$installed" = 1 ]; then dpkg --purge mcpfan-dev mcpfan >/dev/null 2>&1 || true; fi
  rm -rf "$root"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== package: $*"; }

mkdir -p "$work"
rm -rf "$root" "$work/example" "$work/debs"

step "build (Release, prefix /usr) and cpack -G DEB"
cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=OFF -DMCPFAN_WERROR=ON >/dev/null
cmake --build "$work/build" -j "$jobs"
(cd "$work/build" && cpack -G DEB -B "$work/debs" >/dev/null)
deb=$(ls "$work"/debs/mcpfan_*.deb)
dev=$(ls "$work"/debs/mcpfan-dev_*.deb)
echo "built: $(basename "$deb") $(basename "$dev")"

step "contents"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/mcpfan ./usr/bin/mcpfan-token ./lib/systemd/system/mcpfan.service ./etc/mcpfan/mcpfan.toml; do
  grep -q " $f\$" <<<"$contents" || fail "$f not in $(basename "$deb")"
done
[ "$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)" = "/etc/mcpfan/mcpfan.toml" ] || fail "conffiles"
for s in postinst prerm postrm; do dpkg-deb --ctrl-tarfile "$deb" | tar -tf - "./$s" >/dev/null || fail "no $s"; done
depends=$(dpkg-deb --field "$deb" Depends)
echo "mcpfan Depends: $depends"
for d in libuv1 libssl3 libnats libhttp-parser liburing libc6; do grep -q "$d" <<<"$depends" || fail "Depends lacks $d"; done
dev_contents=$(dpkg-deb -c "$dev")
for f in include/mcpfan/hub.h include/mcpfan/transport/server.h libmcpfan_engine.a libmcpfan_transports.a \
         cmake/mcpfan/mcpfanConfig.cmake cmake/mcpfan/mcpfanTargets.cmake; do
  grep -q "$f\$" <<<"$dev_contents" || fail "$f not in $(basename "$dev")"
done
echo "mcpfan-dev Depends: $(dpkg-deb --field "$dev" Depends)"

step "dpkg -x into $root"
dpkg -x "$deb" "$root"
dpkg -x "$dev" "$root"
unit="$root/lib/systemd/system/mcpfan.service"
# shellcheck disable=SC2016  # $MAINPID is the unit's text, not the shell's
for k in NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes PrivateDevices=yes \
         "CapabilityBoundingSet=" "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK" "LimitNOFILE=" \
         'ExecReload=/bin/kill -HUP $MAINPID' Restart=on-failure "ExecStart=/usr/bin/mcpfan --config /etc/mcpfan/mcpfan.toml"; do
  grep -q "^$k" "$unit" || fail "unit lacks $k"
done
if command -v systemd-analyze >/dev/null; then
  # On the host's systemd (its targets and /bin/kill), with the unit's own paths pointed into
  # the scratch root: verify checks that ExecStart's binary and the Documentation file exist.
  mkdir -p "$work/unit"
  sed -e "s|/usr/bin/mcpfan|$root/usr/bin/mcpfan|" -e "s|file:/usr/share|file:$root/usr/share|" "$unit" >"$work/unit/mcpfan.service"
  out=$(systemd-analyze verify "$work/unit/mcpfan.service" 2>&1) || fail "systemd-analyze verify: $out"
  [ -z "$out" ] || fail "systemd-analyze verify reported: $out"
  echo "systemd-analyze verify: clean"
  systemd-analyze security --offline=true "$work/unit/mcpfan.service" 2>/dev/null | tail -1 || true
else
  echo "systemd-analyze not installed: unit checked by its directives only"
fi

step "the unpacked server with the unpacked config"
log="$work/server.log"
: >"$log"
"$root/usr/bin/mcpfan" --config "$root/etc/mcpfan/mcpfan.toml" --listen 127.0.0.1:0 --publish-listen 127.0.0.1:0 \
  --workers 2 2>"$log" &
server_pid=$!
for _ in $(seq 100); do grep -q "publish listener on" "$log" && break; sleep 0.1; done
port=$(sed -n 's/^mcpfan: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log")
ops=$(sed -n 's/^mcpfan: publish listener on 127.0.0.1:\([0-9]*\)$/\1/p' "$log")
if [ -z "$port" ] || [ -z "$ops" ]; then fail "no ports in the log: $(cat "$log")"; fi
[ "$(curl -fsS "http://127.0.0.1:$port/healthz")" = "ok" ] || fail "/healthz"
events="$work/events.txt"
curl -sN "http://127.0.0.1:$port/mcp" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: subscriptions/listen' \
  -d '{"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["file:///pkg/"]}}}' \
  >"$events" &
listen_pid=$!
for _ in $(seq 50); do grep -q acknowledged "$events" 2>/dev/null && break; sleep 0.1; done
grep -q acknowledged "$events" || fail "no acknowledgement"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/publish" -H 'Content-Type: application/json' -d '{"method":"notifications/tools/list_changed"}')
[ "$code" = 404 ] || fail "publish on the public listener: $code, want 404"
curl -fsS "http://127.0.0.1:$ops/v1/publish" -H 'Content-Type: application/json' \
  -d '{"method":"notifications/resources/updated","params":{"uri":"file:///pkg/a"}}' | grep -q '"accepted":1' || fail "publish"
kill -HUP "$server_pid"
curl -fsS "http://127.0.0.1:$ops/v1/publish" -H 'Content-Type: application/json' \
  -d '{"method":"notifications/resources/updated","params":{"uri":"file:///pkg/b"}}' >/dev/null || fail "publish after SIGHUP"
for _ in $(seq 50); do grep -q 'file:///pkg/b' "$events" && break; sleep 0.1; done
grep -q '"uri":"file:///pkg/a"' "$events" || fail "the publish did not arrive: $(cat "$events")"
grep -q '"uri":"file:///pkg/b"' "$events" || fail "the stream did not survive SIGHUP: $(cat "$events")"
grep -q "^mcpfan: reloaded: " "$log" || fail "no reload line: $(cat "$log")"
kill -TERM "$server_pid"
wait "$server_pid" || fail "server exit status $?"
server_pid=""
wait "$listen_pid" 2>/dev/null || true
listen_pid=""
grep -q '"resultType":"complete"' "$events" || fail "no final result on SIGTERM"
echo "served: /healthz, a listen, publishes on the operator listener, SIGHUP, SIGTERM"

step "the example against the unpacked headers and CMake package"
cmake -S "$src/tests/package/example" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$root/usr" >/dev/null
grep -q "mcpfan_DIR:PATH=$root/usr/lib/.*/cmake/mcpfan" "$work/example/CMakeCache.txt" || fail "found another mcpfan: $(grep mcpfan_DIR "$work/example/CMakeCache.txt")"
cmake --build "$work/example" -j "$jobs" >/dev/null
"$work/example/embed_example"

# dpkg -x runs no maintainer script. Where installing is harmless (root, no systemd running
# that would start the service, no mcpfan installed already: CI's fresh machine) the packages
# are installed for real and purged, so postinst, prerm and postrm run too.
step "dpkg -i and dpkg --purge on this machine (maintainer scripts)"
if [ "$(id -u)" = 0 ] && [ ! -d /run/systemd/system ] && ! dpkg -s mcpfan >/dev/null 2>&1 && ! dpkg -s mcpfan-dev >/dev/null 2>&1; then
  installed=1
  dpkg -i "$deb" "$dev" >"$work/dpkg.log" 2>&1 || fail "dpkg -i: $(cat "$work/dpkg.log")"
  getent passwd mcpfan >/dev/null || fail "postinst made no mcpfan user"
  for f in /usr/bin/mcpfan /etc/mcpfan/mcpfan.toml /lib/systemd/system/mcpfan.service /usr/include/mcpfan/hub.h; do
    [ -e "$f" ] || fail "$f not installed"
  done
  # deb-systemd-helper answers only inside a maintainer script unless told which package asks.
  DPKG_MAINTSCRIPT_PACKAGE=mcpfan deb-systemd-helper --quiet was-enabled mcpfan.service || fail "postinst did not enable the unit"
  [ -n "$(find /etc/systemd/system -name mcpfan.service -type l 2>/dev/null)" ] || fail "no wants/ link for the unit"
  # As the unit runs it: the mcpfan user, the installed config (the listen moved to an ephemeral
  # port). setpriv execs, so the PID is the server's own (runuser would stand in between).
  log="$work/installed.log"
  setpriv --reuid mcpfan --regid mcpfan --init-groups -- /usr/bin/mcpfan --config /etc/mcpfan/mcpfan.toml --listen 127.0.0.1:0 --workers 1 2>"$log" &
  server_pid=$!
  for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
  port=$(sed -n 's/^mcpfan: listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$log")
  [ -n "$port" ] || fail "the installed server did not start as user mcpfan: $(cat "$log")"
  [ "$(curl -fsS "http://127.0.0.1:$port/healthz")" = "ok" ] || fail "/healthz of the installed server"
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "installed server exit status $?"
  server_pid=""
  dpkg --purge mcpfan-dev mcpfan >>"$work/dpkg.log" 2>&1 || fail "dpkg --purge: $(cat "$work/dpkg.log")"
  installed=0
  for f in /usr/bin/mcpfan /etc/mcpfan/mcpfan.toml /lib/systemd/system/mcpfan.service /usr/include/mcpfan; do
    [ ! -e "$f" ] || fail "$f left after purge"
  done
  # (was-enabled cannot say: without the unit file it answers yes.) The enablement is the
  # wants/ symlink and deb-systemd-helper's state file; postrm purge removes both.
  [ -z "$(find /etc/systemd/system -name mcpfan.service 2>/dev/null)" ] || fail "an enablement link left after purge"
  [ ! -e /var/lib/systemd/deb-systemd-helper-enabled/mcpfan.service.dsh-also ] || fail "enablement state left after purge"
  echo "installed, served as user mcpfan, purged"
else
  echo "skipped: needs root, no running systemd and no mcpfan installed (a fresh CI machine has all three)"
fi

step "remove the scratch root"
rm -rf "$root"
[ ! -e "$root" ] || fail "scratch root left"
echo "PASS"

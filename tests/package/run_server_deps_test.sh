#!/usr/bin/env bash
# What tools/run-server.sh and tools/setup.sh would install on a machine where every package is
# absent, simulated: a fake apt-get records what it is asked for, a fake dpkg-query reports every
# package missing, a fake cmake records the configure and build and leaves a fake server that
# records how it was started. PATH holds only those fakes and the few real tools the scripts
# use, so a node or npm on this machine does not count as present. Nothing is installed,
# nothing of the machine is touched: MCPFAN_SETUP_ROOT puts the policy-rc.d and the unit
# directories under a scratch root.
#   1. run-server.sh: every package of tools/deps/server.txt requested, and every build and run
#      dependency the top CMakeLists.txt looks for among them; no test-only package (gtest,
#      benchmark, nginx, nodejs, chromium, clang, llvm, lintian, ...); configured without
#      tests and benchmarks, only the server built, started on 127.0.0.1:8080.
#   2. setup.sh test on a host running systemd: both lists requested; while apt-get runs, a
#      policy-rc.d forbids starting services; afterwards it is gone and the unit the install
#      added (nginx.service) is disabled, one that was there before is not.
#   3. every package present: apt-get not called at all.
#   4. a policy-rc.d that was there before is left as it was.
# Usage: run_server_deps_test.sh SOURCE_DIR
set -euo pipefail
src="$(cd "$1" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Packages only tests, benchmarks, fuzzing or packaging need: none may reach run-server.sh.
test_only_re='gtest|gmock|benchmark|nginx|nchan|nodejs|^npm$|chromium|clang|llvm|lintian|help2man|nats-server|^curl$'
# What a server build needs (the top CMakeLists.txt and transports/: compiler, cmake, ninja,
# pkg-config, libuv, simdjson, concurrentqueue, http-parser, CLI11, libjwt, OpenSSL, liburing,
# libnats): named here, so dropping one from server.txt fails this test.
server_needs=(build-essential cmake ninja-build pkg-config libuv1-dev libsimdjson-dev libconcurrentqueue-dev
              libhttp-parser-dev libcli11-dev libjwt-dev libssl-dev liburing-dev libnats-dev)

list() { sed -e 's/#.*//' "$@" | awk 'NF { print $1 }' | sort -u; }
server_pkgs=$(list "$src/tools/deps/server.txt")
test_pkgs=$(list "$src/tools/deps/test.txt")
[ -n "$server_pkgs" ] && [ -n "$test_pkgs" ] || fail "empty package lists"
# The lists themselves: disjoint, and every test-only name is in test.txt, not server.txt.
both=$(comm -12 <(echo "$server_pkgs") <(echo "$test_pkgs"))
[ -z "$both" ] || fail "in both lists: $both"
bad=$(grep -E "$test_only_re" <<<"$server_pkgs" || true)
[ -z "$bad" ] || fail "test-only packages in tools/deps/server.txt: $bad"
for p in libgtest-dev libbenchmark-dev nginx nodejs chromium clang lintian help2man; do
  grep -qx "$p" <<<"$test_pkgs" || fail "$p missing from tools/deps/test.txt"
done

# ---- the sandbox: real tools the scripts need, then the fakes ----
bin="$tmp/bin"
mkdir -p "$bin"
for t in bash env dirname sed grep awk id sort comm tee chmod rm mkdir cat; do
  real=$(command -v "$t") || fail "$t not found"
  ln -s "$real" "$bin/$t"
done
log="$tmp/calls.log"
cat >"$bin/apt-get" <<'EOF'
#!/usr/bin/env bash
# Records the call; while installing, also whether a policy-rc.d forbids starting services,
# and it "installs" nginx's unit the way nginx-common would.
echo "apt-get $*" >>"$FAKE_LOG"
if [ "${1:-}" = install ] || [[ " $* " == *" install "* ]]; then
  policy="$MCPFAN_SETUP_ROOT/usr/sbin/policy-rc.d"
  if [ -x "$policy" ]; then
    set +e; "$policy" nginx start; echo "policy-rc.d answers $?" >>"$FAKE_LOG"; set -e
  else
    echo "policy-rc.d absent" >>"$FAKE_LOG"
  fi
  if [[ " $* " == *" nginx "* ]]; then
    mkdir -p "$MCPFAN_SETUP_ROOT/lib/systemd/system"
    echo "[Unit]" >"$MCPFAN_SETUP_ROOT/lib/systemd/system/nginx.service"
  fi
fi
EOF
cat >"$bin/dpkg-query" <<'EOF'
#!/usr/bin/env bash
# FAKE_PRESENT=1: every package installed; otherwise none is.
if [ "${FAKE_PRESENT:-0}" = 1 ]; then printf 'install ok installed'; exit 0; fi
echo "dpkg-query: no packages found matching ${*: -1}" >&2
exit 1
EOF
cat >"$bin/systemctl" <<'EOF'
#!/usr/bin/env bash
echo "systemctl $*" >>"$FAKE_LOG"
EOF
cat >"$bin/sudo" <<'EOF'
#!/usr/bin/env bash
exec "$@"
EOF
cat >"$bin/cmake" <<'EOF'
#!/usr/bin/env bash
# Records the call; a build leaves a fake server that records its arguments.
echo "cmake $*" >>"$FAKE_LOG"
if [ "$1" = --build ]; then
  mkdir -p "$2/tools/mcpfan"
  printf '#!/usr/bin/env bash\necho "server $*" >>"$FAKE_LOG"\n' >"$2/tools/mcpfan/mcpfan"
  chmod +x "$2/tools/mcpfan/mcpfan"
fi
EOF
chmod +x "$bin"/apt-get "$bin"/dpkg-query "$bin"/systemctl "$bin"/sudo "$bin"/cmake

sandbox() {  # sysroot, command...: runs it with only the sandbox on PATH
  local sysroot="$1"; shift
  env -i PATH="$bin" HOME="$tmp" FAKE_LOG="$log" FAKE_PRESENT="${FAKE_PRESENT:-0}" \
    MCPFAN_SETUP_ROOT="$sysroot" MCPFAN_BUILD_DIR="$tmp/build" "$@"
}
requested() { sed -n 's/^apt-get .*install -y -qq --no-install-recommends //p' "$log" | tr ' ' '\n' | sort -u; }
for t in node npm nodejs; do
  ! PATH="$bin" command -v "$t" >/dev/null || fail "$t reachable in the sandbox"
done

# ---- 1. run-server.sh ----
: >"$log"
sysroot="$tmp/root1"
mkdir -p "$sysroot/usr/sbin"
sandbox "$sysroot" bash "$src/tools/run-server.sh" >"$tmp/out1" 2>&1 || fail "run-server.sh: $(cat "$tmp/out1")"
asked=$(requested)
echo "run-server.sh would install: $(echo $asked)"
grep -qx "apt-get update -qq" "$log" || fail "no apt-get update before the install"
[ "$(grep -n '^apt-get update' "$log" | cut -d: -f1)" -lt "$(grep -n '^apt-get .*install' "$log" | cut -d: -f1)" ] ||
  fail "apt-get update after the install"
[ "$asked" = "$server_pkgs" ] || fail "run-server.sh asked for: $(echo $asked); server.txt has: $(echo $server_pkgs)"
bad=$(grep -E "$test_only_re" <<<"$asked" || true)
[ -z "$bad" ] || fail "run-server.sh would install test-only packages: $bad"
for p in "${server_needs[@]}"; do grep -qx "$p" <<<"$asked" || fail "run-server.sh would not install $p"; done
configure=$(grep '^cmake -S' "$log") || fail "no configure"
for a in -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Release; do
  grep -q -- " $a" <<<"$configure" || fail "configured without $a: $configure"
done
grep -qx "cmake --build $tmp/build --target mcpfan" "$log" || fail "built: $(grep -- '--build' "$log")"
grep -qx "server --listen 127.0.0.1:8080" "$log" || fail "server started as: $(grep '^server' "$log")"
[ ! -e "$sysroot/usr/sbin/policy-rc.d" ] || fail "policy-rc.d left behind"
echo "1. run-server.sh: the server's packages only, configured without tests and benchmarks"

# ---- 2. setup.sh test on a systemd host ----
: >"$log"
sysroot="$tmp/root2"
mkdir -p "$sysroot/usr/sbin" "$sysroot/run/systemd/system" "$sysroot/lib/systemd/system"
echo "[Unit]" >"$sysroot/lib/systemd/system/ssh.service"  # there before: stays enabled
sandbox "$sysroot" bash "$src/tools/setup.sh" test >"$tmp/out2" 2>&1 || fail "setup.sh test: $(cat "$tmp/out2")"
[ "$(requested)" = "$(sort -u <(echo "$server_pkgs") <(echo "$test_pkgs"))" ] || fail "setup.sh test asked for: $(requested | tr "\n" " ")"
grep -qx "policy-rc.d answers 101" "$log" || fail "services could start during the install: $(cat "$log")"
[ ! -e "$sysroot/usr/sbin/policy-rc.d" ] || fail "policy-rc.d left behind"
grep -qx "systemctl disable --quiet nginx.service" "$log" || fail "nginx.service not disabled: $(cat "$log")"
! grep -q "systemctl .*ssh.service" "$log" || fail "a unit that was there before was touched"
echo "2. setup.sh test: both lists; no service started; nginx.service disabled"

# ---- 3. every package present ----
: >"$log"
FAKE_PRESENT=1 sandbox "$tmp/root3" bash "$src/tools/setup.sh" test >"$tmp/out3" 2>&1 || fail "setup.sh, all present: $(cat "$tmp/out3")"
! grep -q "^apt-get" "$log" || fail "apt-get called with every package present: $(cat "$log")"
echo "3. all present: apt-get not called"

# ---- 4. an existing policy-rc.d ----
: >"$log"
sysroot="$tmp/root4"
mkdir -p "$sysroot/usr/sbin"
printf '#!/bin/sh\nexit 0\n' >"$sysroot/usr/sbin/policy-rc.d"
chmod +x "$sysroot/usr/sbin/policy-rc.d"
sandbox "$sysroot" bash "$src/tools/setup.sh" server >"$tmp/out4" 2>&1 || fail "setup.sh server: $(cat "$tmp/out4")"
[ "$(cat "$sysroot/usr/sbin/policy-rc.d")" = "$(printf '#!/bin/sh\nexit 0')" ] || fail "an existing policy-rc.d was changed"
echo "4. an existing policy-rc.d left alone"
echo "PASS"

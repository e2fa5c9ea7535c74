#!/usr/bin/env bash
# Builds the two Debian packages, mcpfan and mcpfan-dev, into OUT_DIR.
#   Release, prefix /usr, Debian's hardening flags (dpkg-buildflags);
#   only what they ship: mcpfan, mcpfan-token, the two static libraries, the man pages and the
#   changelog (no tests, benchmarks or load generator), on every core;
#   then `cpack -G DEB`.
# Needs the build dependencies (tools/setup.sh server), help2man and dpkg-dev.
# Usage: packaging/build-deb.sh OUT_DIR [BUILD_DIR]   (BUILD_DIR: default OUT_DIR/build)
# MCPFAN_PACKAGE_JOBS overrides the parallelism (default: nproc).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [BUILD_DIR]" >&2; exit 2; }
src="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"
build="${2:-$out/build}"
jobs="${MCPFAN_PACKAGE_JOBS:-$(nproc)}"
command -v help2man >/dev/null || { echo "build-deb: help2man is needed for the man pages (apt-get install help2man)" >&2; exit 1; }
command -v dpkg-buildflags >/dev/null || { echo "build-deb: dpkg-buildflags is needed (apt-get install dpkg-dev)" >&2; exit 1; }

# The flags Debian builds its own packages with, all hardening on (fortify, stack protector,
# relro, bindnow). Without -g: Debian keeps debug info in separate -dbgsym packages, and the
# static libraries would carry it. From the source directory: -ffile-prefix-map maps the
# current directory, so the objects name paths relative to the source, whoever calls this.
cd "$src"
export DEB_BUILD_MAINT_OPTIONS="hardening=+all" DEB_CXXFLAGS_MAINT_STRIP="-g"
cxxflags="$(dpkg-buildflags --get CPPFLAGS) $(dpkg-buildflags --get CXXFLAGS)"
ldflags="$(dpkg-buildflags --get LDFLAGS)"
# No MCPFAN_WERROR: with _FORTIFY_SOURCE at -O3, g++ 12 gives false -Wrestrict warnings on
# std::string copies; the test passes keep -Werror.
# CMAKE_SKIP_INSTALL_ALL_DEPENDENCY: cpack would otherwise build "all" (the load generator
# too) before it installs; the targets it installs are built just below.
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DMCPFAN_BUILD_TESTS=OFF -DMCPFAN_BUILD_BENCH=OFF -DMCPFAN_WERROR=OFF \
  -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON \
  "-DCMAKE_CXX_FLAGS=$cxxflags" "-DCMAKE_EXE_LINKER_FLAGS=$ldflags" >/dev/null
cmake --build "$build" -j "$jobs" --target mcpfan mcpfan-token mcpfan_engine mcpfan_transports mcpfan_man mcpfan_deb_changelog
rm -f "$out"/mcpfan_*.deb "$out"/mcpfan-dev_*.deb
(cd "$build" && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls "$out"/mcpfan_*.deb "$out"/mcpfan-dev_*.deb

#!/usr/bin/env bash
# The embedding test (docs/embedding.md): mcpfan as a library, from outside its own build.
#   1. `cmake --install` the build into a temporary prefix;
#   2. the installed public headers: none includes a private dependency (moodycamel's queue,
#      http-parser, simdjson, libuv, CLI11, libjwt) or defines an internal type (Chunk,
#      InboxItem), and all of them compile together with only <prefix>/include on the path;
#   3. examples/ configured with find_package(mcpfan) against that prefix, built, and run
#      (embed_server: a Server and host threads; host_loop: a shard on the host's libuv loop;
#      spawn_children: child processes attached by their stdio);
#   4. a consumer that add_subdirectory()s the source tree: it sees mcpfan::engine and
#      mcpfan::server, builds an engine-only program (mcpfan::engine, mcpfan/mcp.h) and runs it.
# Usage: run.sh BUILD_DIR SOURCE_DIR. Takes about a minute on two cores (step 4 compiles the engine).
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/mcpfan-embedding.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
jobs=2

echo "== 1. cmake --install into $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cfg="$tmp/prefix/lib/cmake/mcpfan"
[ -d "$cfg" ] || cfg="$(dirname "$(find "$tmp/prefix" -name mcpfanConfig.cmake | head -1)")"
for f in mcpfanConfig.cmake mcpfanConfigVersion.cmake mcpfanTargets.cmake; do
  [ -f "$cfg/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
inc="$tmp/prefix/include"

echo "== 2. installed headers"
if grep -rnE '#include *[<"](concurrentqueue|http_parser|simdjson|uv\.h|CLI/|jwt\.h|nats)' "$inc"; then
  echo "FAIL: an installed header includes a private dependency"; exit 1
fi
if grep -rnE '(struct|class) +(Chunk|InboxItem)\b *\{' "$inc"; then
  echo "FAIL: an installed header defines an internal type"; exit 1
fi
if grep -rnE '^#include "(mcp|http|server|stdio|nats|proxy)/' "$inc"; then
  echo "FAIL: an installed header includes a private transports header"; exit 1
fi
all="$tmp/all_headers.cc"
( cd "$inc" && find mcpfan -name '*.h' | sort | sed 's/.*/#include "&"/' ) > "$all"
echo 'int main() { return 0; }' >> "$all"
# -nostdinc++ is not used: the standard library is allowed; nothing else is on the path.
c++ -std=c++20 -fsyntax-only -Wall -Wextra -I"$inc" "$all"
echo "   $(grep -c '#include' "$all") headers compile with only $inc on the include path"

echo "== 3. examples/ against the installed package (find_package)"
cmake -S "$src/examples" -B "$tmp/examples" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$tmp/examples" -j "$jobs" >/dev/null
timeout 30 "$tmp/examples/embed_server/embed_server"
timeout 30 "$tmp/examples/host_loop/host_loop"
timeout 30 "$tmp/examples/spawn_children/spawn_children"

echo "== 4. add_subdirectory() of the source tree"
cmake -S "$src/tests/embedding/subdir_consumer" -B "$tmp/subdir" "${gen[@]}" -DMCPFAN_SOURCE_DIR="$src" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$tmp/subdir" -j "$jobs" --target engine_only >/dev/null
timeout 30 "$tmp/subdir/engine_only"
echo "embedding: ok"

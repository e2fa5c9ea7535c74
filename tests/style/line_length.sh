#!/usr/bin/env bash
# Fails, naming each one, if a C++ or CMake line of the source tree is longer than 120 columns
# (the ColumnLimit of .clang-format). Reads the tracked files in a git checkout, else every
# such file under the tree (a source tarball).
set -euo pipefail
root=${1:?usage: line_length.sh SOURCE_DIR}
limit=120
cd "$root"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.cc' '*.h' '*.cpp' '*.hpp' '*.cmake' 'CMakeLists.txt' '*/CMakeLists.txt')
else
  mapfile -t files < <(find . -path ./build\* -prune -o -type f \( -name '*.cc' -o -name '*.h' -o -name '*.cmake' \
    -o -name CMakeLists.txt \) -print | sed 's|^\./||')
fi
[ "${#files[@]}" -gt 0 ] || { echo "no source files found under $root"; exit 1; }
# Columns are characters, not bytes: a UTF-8 sequence counts once.
long=$(LC_ALL=C.UTF-8 awk -v limit="$limit" 'length($0) > limit { printf "%s:%d: %d columns\n", FILENAME, FNR, length($0) }' \
  "${files[@]}")
if [ -n "$long" ]; then
  echo "$long"
  echo "$(printf '%s\n' "$long" | wc -l) line(s) over $limit columns (.clang-format ColumnLimit); clang-format --lines=N:N fixes most"
  exit 1
fi
echo "${#files[@]} files, no line over $limit columns"

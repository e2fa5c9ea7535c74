#!/usr/bin/env bash
# Holds the rooms of transports/src to what each may include (docs/design.md "The rooms of
# transports/"): fails, naming the file and the include, when one reaches into a room it may
# not. install_transports.cc, the composition root, may include any room.
set -euo pipefail
src=${1:?usage: room_includes.sh SOURCE_DIR}/transports/src
declare -A may=(
  [net]="tls"
  [tls]=""
  [http1]="http mcp net proxy server tls"
  [http2]="http mcp net proxy server tls"
  [http]="mcp oauth proxy server status backplane"
  [mcp]="server oauth"
  [oauth]="mcp proxy server tls"
  [stdio]="mcp net server"
  [proxy]="http server tls"
  [backplane]="nats"
  [nats]="backplane server"
  [status]="http mcp server"
  [server]="mcp net backplane proxy tls"
)
bad=0
for room in "${!may[@]}"; do
  [ -d "$src/$room" ] || { echo "room $room is gone: update this table and docs/design.md"; bad=1; continue; }
  while IFS= read -r hit; do
    file=${hit%%:*}
    target=$(sed -E 's/.*#include "([a-z0-9_]+)\/.*/\1/' <<<"$hit")
    [ "$target" = "$room" ] && continue
    [ -d "$src/$target" ] || continue  # not a room (mcpfan/..., a library)
    case " ${may[$room]} " in *" $target "*) ;; *) echo "${file#"$src"/}: includes $target/, which $room/ may not"; bad=1 ;; esac
  done < <(grep -H '^#include "' "$src/$room"/*.cc "$src/$room"/*.h 2>/dev/null || true)
done
for dir in "$src"/*/; do
  room=$(basename "$dir")
  [ -n "${may[$room]+set}" ] || { echo "room $room/ has no rule here: add one (and to docs/design.md)"; bad=1; }
done
[ "$bad" = 0 ] && echo "every room includes only what it may"
exit "$bad"

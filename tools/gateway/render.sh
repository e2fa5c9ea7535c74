#!/usr/bin/env bash
# Renders the mcpfan gateway configuration for nginx into a folder:
#
#   bash tools/gateway/render.sh --out DIR --mcpfan HOST:PORT [--mcpfan HOST:PORT ...]
#        --app HOST:PORT [--app HOST:PORT ...] [--listen HOST:PORT] [--workers N]
#        [--access-log PATH]
#
#   DIR/mcp-gateway.conf  map + upstream mcpfan + upstream app + server (http context): copy it
#                         into /etc/nginx/conf.d/ on Debian, or
#   DIR/nginx.conf        a complete config that runs it from DIR as any user:
#                         nginx -p DIR -c DIR/nginx.conf -e DIR/error.log -g 'daemon off; master_process off;'
#
# --listen defaults to 127.0.0.1:8088, --workers to 1, --access-log to DIR/access.log. Addresses
# are HOST:PORT (an IPv4 address, a host name or [IPv6]); nothing else reaches the config.
# The templates and what they route where: mcp-gateway.conf.template, next to this script.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "render.sh: $*" >&2; exit 2; }

addr_ok() { [[ "$1" =~ ^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$ ]]; }

out="" listen="127.0.0.1:8088" workers=1 access_log=""
mcpfan=() app=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:-}"; shift 2 ;;
    --listen) listen="${2:-}"; shift 2 ;;
    --mcpfan) mcpfan+=("${2:-}"); shift 2 ;;
    --app) app+=("${2:-}"); shift 2 ;;
    --workers) workers="${2:-}"; shift 2 ;;
    --access-log) access_log="${2:-}"; shift 2 ;;
    -h|--help) usage ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
done
[ -n "$out" ] || usage
[ "${#mcpfan[@]}" -gt 0 ] || die "at least one --mcpfan HOST:PORT"
[ "${#app[@]}" -gt 0 ] || die "at least one --app HOST:PORT"
addr_ok "$listen" || die "--listen '$listen' is not HOST:PORT"
[[ "$workers" =~ ^[1-9][0-9]{0,2}$ ]] || die "--workers '$workers' is not a number from 1"
for a in "${mcpfan[@]}" "${app[@]}"; do addr_ok "$a" || die "'$a' is not HOST:PORT"; done

server_lines() {  # "    server HOST:PORT ...;" per address
  local a lines=""
  for a in "$@"; do
    lines+="    server $a max_fails=1 fail_timeout=5s;"$'\n'
  done
  printf '%s' "${lines%$'\n'}"
}

mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -n "$access_log" ] || access_log="$out/access.log"
[[ "$access_log" != *[[:space:]\;\{\}]* ]] || die "--access-log '$access_log' has a space, ';' or brace"
[[ "$out" != *[[:space:]\;\{\}]* ]] || die "--out '$out' has a space, ';' or brace"

conf="$(<"$here/mcp-gateway.conf.template")"
conf="${conf//@LISTEN@/$listen}"
conf="${conf//@MCPFAN_SERVERS@/$(server_lines "${mcpfan[@]}")}"
conf="${conf//@APP_SERVERS@/$(server_lines "${app[@]}")}"
conf="${conf//@ACCESS_LOG@/$access_log}"
printf '%s\n' "$conf" >"$out/mcp-gateway.conf"

main="$(<"$here/nginx.conf.template")"
main="${main//@PREFIX@/$out}"
main="${main//@WORKERS@/$workers}"
printf '%s\n' "$main" >"$out/nginx.conf"
mkdir -p "$out/client_body" "$out/proxy" "$out/fastcgi" "$out/uwsgi" "$out/scgi"

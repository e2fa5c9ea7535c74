#!/usr/bin/env bash
# Runs nginx+nchan in the foreground (it becomes this process: exec) with the bench config.
#   bash bench/compare/nchan/run-nchan.sh DIR PORT
# DIR: a folder the caller owns (config, pid, error log, temp paths go there).
# PORT: the loopback port to listen on. Stop it with SIGTERM/SIGQUIT to this PID.
# Installs nginx and libnginx-mod-nchan from Debian if they are missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: run-nchan.sh DIR PORT}"
port="${2:?usage: run-nchan.sh DIR PORT}"
if [[ ! -x /usr/sbin/nginx || ! -f /usr/lib/nginx/modules/ngx_nchan_module.so ]]; then
  echo "nchan: installing nginx libnginx-mod-nchan" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx libnginx-mod-nchan >/dev/null
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
sed -e "s#@PREFIX@#$dir#g" -e "s#@PORT@#$port#g" "$here/nginx.conf.in" > "$dir/nginx.conf"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log"

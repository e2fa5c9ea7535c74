#!/usr/bin/env bash
# Browser test of HTTP/2: 100 listens opened with fetch() from one page of Debian's headless
# Chromium share one h2 connection to mcpfan (over HTTP/1.1 the browser would serve 6 per
# origin and stall the rest). Driven over the DevTools protocol on a pipe by browser_h2.mjs
# (Node built-ins only, no npm packages).
#
#   bash run.sh /path/to/mcpfan
#
# Makes a test CA and server certificate (interop_make_certs); starts mcpfan with TLS (ALPN h2)
# and a second one with TLS and --no-h2 (the HTTP/1.1 contrast), both on ephemeral loopback
# ports; Chromium trusts the certificate's key by --ignore-certificate-errors-spki-list (its
# SPKI hash), Node (publish, /metrics) the CA by NODE_EXTRA_CA_CERTS. mcpfan and Chromium are
# stopped by PID at exit. A missing chromium is a FAIL, not a skip: tools/setup.sh installs it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_browser_h2
TEST_TIMEOUT_S=120
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
[ -x "$CHROMIUM" ] || die "$CHROMIUM not found: install Debian's chromium (tools/setup.sh does)"
interop_workdir browser-h2
interop_make_certs "$WORK/certs"
SPKI="$(interop_spki_sha256 "$WORK/certs/server.pem")"
export NODE_EXTRA_CA_CERTS="$WORK/certs/ca.pem" CHROMIUM
interop_watch_pidfile "$WORK/chromium.pid"   # browser_h2.mjs records Chromium's PID here

interop_start_mcpfan --workers 2 --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server.key"
interop_start_mcpfan_node no-h2 --workers 1 --no-h2 --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server.key"
interop_run_node_client "$TEST_TIMEOUT_S" browser_h2.mjs "https://localhost:${HOSTPORT##*:}" \
  "https://localhost:${NODE_HOSTPORT##*:}" "$SPKI" "$WORK/chromium.pid"

#!/usr/bin/env bash
# Browser test of the live status page (GET /status): Debian's headless Chromium, driven over
# the DevTools protocol on a pipe by status_page.mjs (Node built-ins only, no npm packages).
#
#   bash run.sh /path/to/mcpfan
#
# Starts mcpfan on an ephemeral loopback port (2 workers, --max-uris-per-listen 2 so that the
# test can make a limit hit), runs status_page.mjs against it (bounded), and stops mcpfan and
# Chromium by PID. The screenshot goes to $MCPFAN_ARTIFACT_DIR/status.png (ctest sets it to
# <build>/tests/artifacts), else ./status-page-artifacts/status.png.
# A missing chromium is a FAIL, not a skip: tools/setup.sh installs it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_status_page
TEST_TIMEOUT_S=120
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
ARTIFACTS="${MCPFAN_ARTIFACT_DIR:-$PWD/status-page-artifacts}"
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
[ -x "$CHROMIUM" ] || die "$CHROMIUM not found: install Debian's chromium (tools/setup.sh does)"
interop_workdir statuspage
interop_watch_pidfile "$WORK/chromium.pid"   # status_page.mjs records Chromium's PID here
interop_start_mcpfan --workers 2 --max-uris-per-listen 2
export CHROMIUM
interop_run_node_client "$TEST_TIMEOUT_S" status_page.mjs "http://$HOSTPORT" "$ARTIFACTS" "$WORK/chromium.pid"

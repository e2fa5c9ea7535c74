#!/usr/bin/env bash
# Interop test: the official TypeScript SDK 1.32.2 client's OAuth 2.1 flow against a real
# OpenID provider (oidc-provider 9.13.3, provider.mjs), headless, to an MCP server protected
# with the SDK's resource-server helpers (protected_server.mjs), directly and through
# `mcpfan --upstream` acting as the OAuth resource server.
#
#   bash run.sh /path/to/mcpfan [--direct-only]
#
# 1. Installs the pinned packages of this folder (ensure_deps.sh: `npm ci` under a flock, only
#    when node_modules does not match package-lock.json).
# 2. Makes a signing key, starts provider.mjs (any loopback resource accepted) and
#    protected_server.mjs (its own URL and the lines of $WORK/audiences accepted as audiences).
# 3. sdk_oauth.mjs directly against protected_server.mjs: 401 -> protected resource metadata ->
#    OIDC discovery -> dynamic registration -> authorization code with PKCE (headless) -> JWT ->
#    tool call -> resources/subscribe and a change notified by the server.
# 4. Unless --direct-only: mcpfan --upstream protected_server --oauth-issuer ISSUER
#    --oauth-listen-scope mcp:listen --oauth-tenant-claim org_id --publish-keys-file F, its
#    /mcp URL added to the upstream's audiences (the upstream gets the client's Authorization
#    unchanged), and sdk_oauth.mjs through mcpfan: the 401 must come from mcpfan pointing at
#    its own /.well-known/oauth-protected-resource, the token's aud is mcpfan's /mcp URL, the
#    tool call reaches the upstream, the subscription is served by mcpfan and receives a
#    POST /v1/publish (key bound to tenant acme, the token's org_id).
# Every process is stopped by PID at exit.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NAME=interop_oauth
CLIENT_TIMEOUT_S=120
START_WAIT_S=30                    # node + oidc-provider / the SDK loaded and listening
PUBLISH_KEY=oauth-interop-publish-key-acme-0123456789
# shellcheck source-path=SCRIPTDIR source=../lib/common.sh
source "$HERE/../lib/common.sh"

interop_check_prereqs "${1:-}"
DIRECT_ONLY=0
case "${2:-}" in
  "") ;;
  --direct-only) DIRECT_ONLY=1 ;;
  *) die "usage: bash run.sh /path/to/mcpfan [--direct-only]" ;;
esac
command -v flock >/dev/null || die "flock not found (util-linux)"
timeout --kill-after=5 330 bash "$HERE/ensure_deps.sh" || die "installing the pinned packages of $HERE failed"
interop_workdir oauth

node "$HERE/provider.mjs" --make-keys "$WORK/keys.json" --kid "interop-$$" --alg RS256 \
  || die "provider.mjs --make-keys failed"
node "$HERE/provider.mjs" --port 0 --keys "$WORK/keys.json" >"$WORK/provider.stdout" 2>"$WORK/provider.stderr" &
PROVIDER_PID=$!
interop_track "$PROVIDER_PID" "oidc-provider (pid $PROVIDER_PID)" "$WORK/provider.stderr"
interop_await_line "$PROVIDER_PID" "$WORK/provider.stdout" '^READY http://127\.0\.0\.1:[0-9]+$' "$START_WAIT_S" \
  "oidc-provider (pid $PROVIDER_PID)"
ISSUER="${AWAITED#READY }"

: >"$WORK/audiences"
node "$HERE/protected_server.mjs" --issuer "$ISSUER" --audience-file "$WORK/audiences" \
  >"$WORK/protected_server.stdout" 2>"$WORK/protected_server.stderr" &
UPSTREAM_PID=$!
interop_track "$UPSTREAM_PID" "protected_server (pid $UPSTREAM_PID)" "$WORK/protected_server.stderr"
interop_await_line "$UPSTREAM_PID" "$WORK/protected_server.stdout" '^protected_server listening on 127\.0\.0\.1:[0-9]+$' \
  "$START_WAIT_S" "protected_server (pid $UPSTREAM_PID)"
UPSTREAM="${AWAITED#protected_server listening on }"
echo "$NAME: oidc-provider $ISSUER, protected_server $UPSTREAM"

failed=()
run_client() {  # label, script, args...
  local label="$1"
  shift
  interop_run_bounded "$CLIENT_TIMEOUT_S" "$label" node "$@"
  [ "$RC" -eq 0 ] || failed+=("$label")
}
run_client "SDK 1.32.2 OAuth flow, directly" sdk_oauth.mjs "http://$UPSTREAM/mcp" --notify-url "http://$UPSTREAM/notify"

if [ "$DIRECT_ONLY" -eq 0 ]; then
  echo "$PUBLISH_KEY acme" >"$WORK/publish-keys"
  interop_start_mcpfan_node front --workers 2 --upstream "http://$UPSTREAM/mcp" \
    --oauth-issuer "$ISSUER" --oauth-listen-scope mcp:listen --oauth-tenant-claim org_id \
    --oauth-scopes mcp:listen --oauth-scopes mcp:tools --publish-keys-file "$WORK/publish-keys"
  FRONT="$NODE_HOSTPORT"
  echo "http://$FRONT/mcp" >>"$WORK/audiences"
  echo "$NAME: mcpfan $FRONT in front of protected_server $UPSTREAM"
  run_client "SDK 1.32.2 OAuth flow, through mcpfan" sdk_oauth.mjs "http://$FRONT/mcp" \
    --publish-url "http://$FRONT/v1/publish" --publish-key "$PUBLISH_KEY"
  interop_finish_clients "directly and through mcpfan"
fi
interop_finish_clients "directly (--direct-only: mcpfan not run)"

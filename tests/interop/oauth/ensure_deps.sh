#!/usr/bin/env bash
# Installs this folder's pinned packages (`npm ci`) unless node_modules already matches
# package-lock.json. Safe when several tests call it at once: the check and the install run
# under `flock` on .npm-install.lock in this folder (waiting at most 300 s for the lock). Used
# by the C++ fixture tests/integration/oidc_provider.cc and by run.sh. Exit 0: installed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
exec 9>"$HERE/.npm-install.lock"
flock -w 300 9 || { echo "ensure_deps: no lock on $HERE/.npm-install.lock within 300 s" >&2; exit 1; }

# Every locked (non-dev, non-optional) package present at its locked version. Local files only.
deps_ok() {
  node -e '
    const fs = require("fs");
    const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
    for (const [p, meta] of Object.entries(lock.packages || {})) {
      if (p === "" || meta.dev || meta.optional) continue;
      let v;
      try { v = JSON.parse(fs.readFileSync(p + "/package.json", "utf8")).version; } catch { process.exit(1); }
      if (v !== meta.version) process.exit(1);
    }' 2>/dev/null
}

deps_ok && exit 0
echo "ensure_deps: installing pinned packages (npm ci) in $HERE" >&2
rc=0
timeout --kill-after=5 240 npm ci --no-audit --no-fund --loglevel=error >&2 || rc=$?
[ "$rc" -eq 0 ] || { echo "ensure_deps: npm ci failed (status $rc; needs the npm registry once)" >&2; exit 1; }
deps_ok || { echo "ensure_deps: node_modules does not match package-lock.json after npm ci" >&2; exit 1; }

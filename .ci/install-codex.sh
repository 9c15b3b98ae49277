#!/usr/bin/env bash
# Install the Codex CLI versions the e2e tests drive (tests/e2e/test_codex_cli.py) into
# .ci/codex/<version>/node_modules/.bin/codex. Idempotent: a version already installed is skipped.
#
# usage: .ci/install-codex.sh [VERSION ...]     (default: the versions under test)
#   PREFIX_ROOT=/some/dir .ci/install-codex.sh   install there instead (then point the tests at it
#                                                with LOGMINE_CODEX_PREFIX=/some/dir)
# Needs node >= 20 and npm.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${PREFIX_ROOT:-"$HERE/codex"}
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(0.45.0 0.171.0)

command -v npm >/dev/null || { echo "install-codex: npm not found (node >= 20 needed)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || echo "install-codex: warning: node $(node --version) < 20" >&2

for v in "${VERSIONS[@]}"; do
  dir="$ROOT/$v"
  bin="$dir/node_modules/.bin/codex"
  if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -qF "$v"; then
    echo "install-codex: $v already installed ($bin)"
    continue
  fi
  echo "install-codex: installing @openai/codex@$v into $dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "@openai/codex@$v"
  "$bin" --version
done

#!/usr/bin/env bash
# Install the Claude Code CLI versions the e2e tests drive (tests/e2e/test_claude_cli.py) and the
# fixture generator (tests/e2e/claude_driver.py) use, into .ci/claude/<version>/node_modules/.bin/claude.
# Idempotent: a version already installed is skipped.
#
# usage: .ci/install-claude.sh [VERSION ...]     (default: the versions under test)
#   PREFIX_ROOT=/some/dir .ci/install-claude.sh   install there instead (then point the tests at it
#                                                 with LOGMINE_CLAUDE_PREFIX=/some/dir)
# Needs node >= 18 and npm; everything comes from the npm registry (newer versions take their native
# binary from the optional dependency @anthropic-ai/claude-code-<platform>, also on npm).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${PREFIX_ROOT:-"$HERE/claude"}
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(2.0.50 2.1.332)

command -v npm >/dev/null || { echo "install-claude: npm not found (node >= 18 needed)" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || echo "install-claude: warning: node $(node --version) < 18" >&2

for v in "${VERSIONS[@]}"; do
  dir="$ROOT/$v"
  bin="$dir/node_modules/.bin/claude"
  if [ -x "$bin" ] && DISABLE_AUTOUPDATER=1 "$bin" --version 2>/dev/null | grep -qF "$v"; then
    echo "install-claude: $v already installed ($bin)"
    continue
  fi
  echo "install-claude: installing @anthropic-ai/claude-code@$v into $dir"
  mkdir -p "$dir"
  # a failed install is not fatal: the tests that drive this CLI skip with their reason
  if ! npm install --prefix "$dir" --no-audit --no-fund --no-save --loglevel=error "@anthropic-ai/claude-code@$v" \
      || ! DISABLE_AUTOUPDATER=1 "$bin" --version; then
    echo "install-claude: $v not installed (the tests that drive it will skip)" >&2
  fi
done

#!/usr/bin/env bash
# Optional tools some tests use; each is skipped with a note when it cannot be installed here, and
# the tests that need it then skip cleanly. Idempotent.
#
# - bubblewrap: the default sandbox (Debian: apt-get install bubblewrap; needs root)
# - Podman with local python:3.11-slim / node:18-slim images: the container backend and bundle builds
#   (../shared/tools/container-engine/setup.sh: Debian, root, about 3 minutes the first time)
# - Harbor (`harbor lint` of exported bundles): needs Python >= 3.12, installed in its own venv at
#   .ci/harbor-venv; tests find it through LOGMINE_HARBOR=.ci/harbor-venv/bin/harbor
# - a pnpm workspace with vitest (tests/fixtures/pnpm-vitest) and uv's wheel, fetched from the registries
#   here so that the tests that build those environments need no network
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)

if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) || echo "install-tools: bubblewrap not installed" >&2
  else
    echo "install-tools: no bwrap and no root: sandbox tests will skip" >&2
  fi
fi

SETUP="$ROOT/../shared/tools/container-engine/setup.sh"
if [ "$(id -u)" = 0 ] && [ -f "$SETUP" ]; then
  bash "$SETUP" >/tmp/logmine-container-setup.log 2>&1 || echo "install-tools: podman setup failed (see /tmp/logmine-container-setup.log)" >&2
else
  echo "install-tools: podman setup skipped (needs root and $SETUP)" >&2
fi

if [ ! -x "$HERE/harbor-venv/bin/harbor" ]; then
  PY=""
  for cand in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3.13 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
    if [ -x "$(command -v "$cand" 2>/dev/null || echo "$cand")" ] && "$cand" -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null; then
      PY=$cand; break
    fi
  done
  if [ -n "$PY" ]; then
    ("$PY" -m venv "$HERE/harbor-venv" && "$HERE/harbor-venv/bin/pip" install -q harbor) >/tmp/logmine-harbor.log 2>&1 \
      || { echo "install-tools: harbor not installed (see /tmp/logmine-harbor.log)" >&2; rm -rf "$HERE/harbor-venv"; }
  else
    echo "install-tools: no Python >= 3.12 for harbor: the harbor lint test will skip" >&2
  fi
fi
# A pnpm workspace with vitest, installed once from the npm registry so that tests build it offline:
# its lock file (.ci/pnpm-vitest), pnpm's store (.ci/pnpm-store) and the pinned pnpm (.ci/npm-cache).
PNPM_FIXTURE="$ROOT/tests/fixtures/pnpm-vitest"
if command -v npm >/dev/null && [ ! -f "$HERE/pnpm-vitest/.complete" ]; then
  PNPM_PIN=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$PNPM_FIXTURE/package.json")
  (set -e
   rm -rf "$HERE/pnpm-vitest" "$HERE/pnpm-tools"
   cp -r "$PNPM_FIXTURE" "$HERE/pnpm-vitest"
   npm install -g --prefix "$HERE/pnpm-tools" --cache "$HERE/npm-cache" --no-audit --no-fund "pnpm@$PNPM_PIN"
   cd "$HERE/pnpm-vitest"
   "$HERE/pnpm-tools/bin/pnpm" install --store-dir "$HERE/pnpm-store" --ignore-scripts
   rm -rf node_modules packages/*/node_modules
   touch .complete) >/tmp/logmine-pnpm.log 2>&1 \
    || echo "install-tools: the pnpm workspace fixture was not installed (see /tmp/logmine-pnpm.log)" >&2
fi
# uv's wheel, so that tests install uv into an environment with no index (PIP_NO_INDEX + PIP_FIND_LINKS)
if [ -z "$(ls "$HERE"/wheels/uv-*.whl 2>/dev/null)" ]; then
  python3 -m pip download -q --only-binary :all: --no-deps -d "$HERE/wheels" uv >/tmp/logmine-wheels.log 2>&1 \
    || echo "install-tools: uv's wheel was not downloaded (see /tmp/logmine-wheels.log)" >&2
fi
exit 0

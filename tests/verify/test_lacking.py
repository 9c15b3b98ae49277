"""Which failed runs say the environment lacks something — a tool, a package, a service, an install
that matches its lock — rather than anything of the task's code: real lines from real sessions' replays."""

from __future__ import annotations

import pytest

from logmine.verify.grade import _UNAVAILABLE, Grade
from logmine.verify.task import lacking


def _failed(output: str) -> Grade:
    found = _UNAVAILABLE.search(output)
    return Grade(False, 1, excerpt=output[-600:], unavailable=found.group(0).strip() if found else None)


@pytest.mark.parametrize("output, line", [
    ("E   ModuleNotFoundError: No module named 'yaml'\n", "E   ModuleNotFoundError: No module named 'yaml'"),
    ("error: no matching package named `serde_yaml` found\nlocation searched: crates.io index\n",
     "error: no matching package named `serde_yaml` found"),
    ("bash: line 1: pytest: command not found\n", "bash: line 1: pytest: command not found"),  # names the tool
    # dash runs npm's scripts: a package an install that needed the network would have added
    ("> cross-env NODE_PATH=./node_modules playwright test\n\nsh: 1: cross-env: not found\n", "sh: 1: cross-env: not found"),
    ("Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap\n", "Error: connect ECONNREFUSED 127.0.0.1:5432"),
    ("Error: ERR_PNPM_VERIFY_DEPS_BEFORE_RUN\n\n  × Your node_modules are out of sync with your lockfile\n",
     "Error: ERR_PNPM_VERIFY_DEPS_BEFORE_RUN"),
    ("Error: Cannot find module 'express'\nRequire stack:\n", "Error: Cannot find module 'express'"),
    # vitest's test environment not installed (an earlier `npm install -D jsdom` needed the network)
    ("MISSING DEPENDENCY  Cannot find dependency 'jsdom'\n\n", "MISSING DEPENDENCY  Cannot find dependency 'jsdom'"),
    # a browser the user's cache held and this machine lacks (Playwright 1.49's own words)
    ("  1) tests/a.spec.ts:2:5 › t\n    Error: browserType.launch: Executable doesn't exist at "
     "/root/.cache/ms-playwright/chromium_headless_shell-1148/chrome-linux/headless_shell\n    ╔═══╗\n  1 failed\n",
     "Error: browserType.launch: Executable doesn't exist at "
     "/root/.cache/ms-playwright/chromium_headless_shell-1148/chrome-linux/headless_shell"),
    ("The cypress npm package is installed, but the Cypress binary is missing.\n",
     "The cypress npm package is installed, but the Cypress binary is missing."),
    # a package's path, not the project's own file: Prisma's client, which `prisma generate` makes
    ("Error: Cannot find module '.prisma/client/default'\nRequire stack:\n",
     "Error: Cannot find module '.prisma/client/default'"),
    ("Error: request to https://binaries.prisma.sh/all_commits/0c8e/debian-openssl-3.0.x/schema-engine.gz.sha256 "
     "failed, reason: getaddrinfo ENOTFOUND binaries.prisma.sh\n FAIL tests/a.test.ts\nTypeError: Cannot read "
     "properties of undefined (reading '$disconnect')\n",
     "Error: request to https://binaries.prisma.sh/all_commits/0c8e/debian-openssl-3.0.x/schema-engine.gz.sha256 "
     "failed, reason: getaddrinfo ENOTFOUND binaries.prisma.sh"),
])
def test_a_run_that_lacks_what_it_needs_says_which_line(output, line):
    assert lacking(_failed(output)) == line


@pytest.mark.parametrize("output", [
    "AssertionError: 3 != 2\n", "FAILED test_calc.py::test_add - assert 1 == 2\n",
    "Error: Cannot find module './calc'\nRequire stack:\n",  # the project's own file: a patch may have made it
    "Error: Cannot find module '../lib/db'\n", "Error: Cannot find module '/w/src/db.js'\n",
    "error[E0425]: cannot find value `x` in this scope\n",
    "sh: 1: ./scripts/gen.sh: not found\n",  # the project's own script: a patch may have made it
])
def test_a_failure_of_the_code_is_not_a_lack(output):
    assert lacking(_failed(output)) is None


def test_a_run_that_passed_lacks_nothing():
    assert lacking(Grade(True, 0, excerpt="No module named 'x' (a test that checks the message)")) is None


@pytest.mark.parametrize("command, runs_python", [
    ("python3 -m pytest -q", True), ("cd backend && uv run python -m pytest", True), ("pytest tests/x.py", True),
    ("tox -e py311", True), ("npm test -- --run", False), ("cd frontend && npx vitest run", False),
    ("cargo test", False),
])
def test_the_sessions_python_is_named_only_for_a_command_that_runs_python(command, runs_python):
    """A failing ``npm test`` under another Python than the session's says nothing of the interpreter."""
    from logmine.verify.task import _RUNS_PYTHON

    assert bool(_RUNS_PYTHON.search(command)) is runs_python

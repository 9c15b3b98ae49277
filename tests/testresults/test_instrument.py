"""Which commands are instrumented, and how: the rewritten line, word for word."""

from __future__ import annotations

import shlex
import sys

import pytest
from testresults_support import run_instrumented, statuses, write

from logmine.testresults import instrument

JUNIT = "--junitxml=/r/pytest-junit.xml -o junit_family=xunit1 -rA"
VITEST = "--reporter=default --reporter=json --outputFile=/r/vitest.json"
NODE = ("--test-reporter=spec --test-reporter-destination=stdout --test-reporter=tap "
        "--test-reporter-destination=/r/node-test.tap")


@pytest.mark.parametrize(("command", "runner", "rewritten"), [
    ("pytest", "pytest", f"pytest {JUNIT}"),
    ("pytest -q tests/test_a.py -k 'x and not y'", "pytest", f"pytest -q tests/test_a.py -k 'x and not y' {JUNIT}"),
    ("python -m pytest -x", "pytest", f"python -m pytest -x {JUNIT}"),
    ("python3.11 -B -X dev -m pytest", "pytest", f"python3.11 -B -X dev -m pytest {JUNIT}"),
    ("uv run --with pytest pytest tests", "pytest", f"uv run --with pytest pytest tests {JUNIT}"),
    ("uv run python -m pytest", "pytest", f"uv run python -m pytest {JUNIT}"),
    (".venv/bin/pytest -q", "pytest", f".venv/bin/pytest -q {JUNIT}"),
    ("cd sub && pytest", "pytest", f"cd sub && pytest {JUNIT}"),
    ("source .venv/bin/activate; PYTHONPATH=src pytest -q 2>&1", "pytest",
     f"source .venv/bin/activate; PYTHONPATH=src pytest -q {JUNIT} 2>&1"),
    ("pytest -- tests/a.py", "pytest", f"pytest {JUNIT} -- tests/a.py"),
    ("timeout 60 pytest $TESTS", "pytest", f"timeout 60 pytest $TESTS {JUNIT}"),
    ("python -m unittest discover -s tests -q", "unittest", "python -m unittest discover -s tests -q -v"),
    ("python -m unittest tests.test_a", "unittest", "python -m unittest tests.test_a -v"),
    ("npx vitest run", "vitest", f"npx vitest run {VITEST}"),
    ("pnpm vitest run test/a.test.ts", "vitest", f"pnpm vitest run {VITEST} test/a.test.ts"),
    ("pnpm --filter web exec vitest run", "vitest", f"pnpm --filter web exec vitest run {VITEST}"),
    ("npx jest src", "jest", "npx jest --json --outputFile=/r/jest.json src"),
    ("node --test", "node", f"node --test {NODE}"),
    ("node --test test/", "node", f"node --test {NODE} test/"),
    ("go test ./...", "go", "go test -json ./..."),
    ("go test -json ./pkg", "go", "go test -json ./pkg"),
    ("cargo test", "cargo", "cargo test"),
    ("cargo test -q --lib -- --nocapture", "cargo", "cargo test --lib -- --nocapture"),
    ("bash -lc 'cd sub && pytest -q'", "pytest", "bash -lc " + shlex.quote(f"cd sub && pytest -q {JUNIT}")),
])
def test_a_known_runner_gets_its_report_flags(command, runner, rewritten):
    done = instrument(command, "/r")
    assert done is not None and (done.command, done.runner) == (rewritten, runner)


@pytest.mark.parametrize("command", [
    "make test", "tox", "python -c 'import pytest'", "npm test", "yarn test",
    "pytest | tail -5", "pytest; echo done", "pytest || true", "pytest > log.txt", "(cd sub && pytest)",
    "pytest $(git diff --name-only)", "pytest `ls`", "pytest --junitxml=mine.xml", "vitest watch",
    "npx vitest run --reporter=verbose", "npx jest --json", "node --test --test-reporter=dot", "node app.js",
    "pnpm -r exec vitest run", "cargo test -- --format=json", "cat <<EOF\npytest\nEOF", "pytest 'unterminated",
])
def test_a_command_that_cannot_be_rewritten_safely_is_left_alone(command):
    assert instrument(command, "/r") is None


def test_npm_test_is_known_only_through_its_script():
    assert instrument("npm test", "/r", package_scripts={"test": "vitest run"}).command == f"npm test -- {VITEST}"
    assert instrument("npm run test -- a.test.js", "/r", package_scripts={"test": "jest"}).command == (
        "npm run test -- a.test.js --json --outputFile=/r/jest.json")
    assert instrument("npm test", "/r", package_scripts={"test": "node --test"}).runner == "node"
    for script in ("mocha", "node --test test/", "vitest run && eslint .", "tsc && jest"):
        assert instrument("npm test", "/r", package_scripts={"test": script}) is None, script


def test_the_report_directory_is_absolute():
    with pytest.raises(ValueError, match="absolute"):
        instrument("pytest", "report")


def test_a_wrapped_command_still_runs_and_reports(tmp_path):
    """``bash -lc '…'`` rewritten inside its quotes runs, in a directory with a space in its name."""
    project = write(tmp_path / "my project", {"pytest.ini": "[pytest]\n", "tests/test_a.py": "def test_a():\n    pass\n"})
    inner = f"cd {shlex.quote(str(project))} && {shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider"
    report, code, _ = run_instrumented(f"bash -lc {shlex.quote(inner)}", tmp_path, tmp_path / "the report")
    assert statuses(report) == {"tests/test_a.py::test_a": "passed"} and code == 0

"""verify grades test candidates test by test where it knows the runner: each test's outcome before
and after the replay, FAIL_TO_PASS and PASS_TO_PASS, recorded in ``verifications`` (real runners,
the real sandbox)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

SUM_JS = "exports.sum = (a, b) => a - b;\n"
SUM_TEST_JS = ("const test = require('node:test');\nconst assert = require('node:assert');\n"
               "const { sum } = require('./sum');\n"
               "test('sum adds', () => { assert.strictEqual(sum(2, 3), 5); });\n"
               "test('sum of zero', () => { assert.strictEqual(sum(0, 0), 0); });\n")
FIX_JS = ("*** Begin Patch\n*** Update File: sum.js\n@@\n-exports.sum = (a, b) => a - b;\n"
          "+exports.sum = (a, b) => a + b;\n*** End Patch\n")
CALC_PY = "def add(a, b):\n    return a - b\n"
TEST_PY = ("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
           "def test_zero():\n    assert add(0, 0) == 0\n")
FIX_PY = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
          "*** End Patch\n")


def _repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    git = ["git", "-C", str(path), "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def _verified(tmp_path: Path, files: dict[str, str], command: str, fix: str) -> dict:
    from logmine.verify import VerifyConfig, verify

    repo = tmp_path / "work" / "proj"
    builder = (SessionBuilder(cwd=str(repo), commit=_repo(repo, files))
               .user("Fix it so the tests pass").run(command, 1).patch(fix).run(command, 0).agent("Fixed."))
    builder.write(tmp_path / "sessions")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    verify(VerifyConfig(store=store, env_mode="host"))
    (row,) = query(store, "SELECT r.* FROM verifications r JOIN verifiers v USING (verifier_id) "
                          "WHERE v.kind = 'test_command'")
    return row


def _statuses(tests: list[dict] | None) -> dict[str, str]:
    return {t["test_id"]: t["status"] for t in tests or []}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_runs_are_graded_test_by_test(tmp_path):
    row = _verified(tmp_path, {"sum.js": SUM_JS, "sum.test.js": SUM_TEST_JS}, "node --test", FIX_JS)
    assert row["status"] == "validated" and row["test_runner"] == "node" and row["graded_by"] == "tests", row
    assert _statuses(row["before_tests"]) == {"sum adds": "failed", "sum of zero": "passed"}
    assert _statuses(row["after_tests"]) == {"sum adds": "passed", "sum of zero": "passed"}
    assert row["tests_fail_to_pass"] == ["sum adds"] and row["tests_pass_to_pass"] == ["sum of zero"]


def test_pytest_runs_are_graded_test_by_test(tmp_path, monkeypatch):
    pytest_bin = Path(sys.executable).parent  # this interpreter's pytest, on the session's PATH
    monkeypatch.setenv("PATH", f"{pytest_bin}:{__import__('os').environ['PATH']}")
    row = _verified(tmp_path, {"calc.py": CALC_PY, "test_calc.py": TEST_PY}, "python -m pytest -q -p no:cacheprovider",
                    FIX_PY)
    assert row["status"] == "validated" and row["test_runner"] == "pytest" and row["graded_by"] == "tests", row
    assert _statuses(row["before_tests"]) == {"test_calc.py::test_add": "failed", "test_calc.py::test_zero": "passed"}
    assert row["tests_fail_to_pass"] == ["test_calc.py::test_add"]
    assert row["tests_pass_to_pass"] == ["test_calc.py::test_zero"]

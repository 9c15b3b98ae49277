"""verify end to end: a real git repository, sessions replayed in the real bubblewrap sandbox."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from calc_repo import FIX, TESTS, calc_repo
from conftest import query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")

ADD_MUL = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n     return a + b\n+\n+\n+def mul(a, b):\n"
           "+    return a * b + 1\n*** Add File: test_mul.py\n+import unittest\n+\n+from calc import mul\n+\n+\n"
           "+class M(unittest.TestCase):\n+    def test_mul(self):\n+        self.assertEqual(mul(2, 3), 6)\n*** End Patch\n")


def _session(repo: Path, commit: str) -> SessionBuilder:
    return (SessionBuilder(cwd=str(repo), commit=commit)
            .user("Fix add so the tests pass").run(TESTS, 1).patch(FIX).run(TESTS, 0).agent("Fixed.")
            .user("Add a mul function with a test").patch(ADD_MUL).run(TESTS, 1).run(TESTS, 1).agent("Still failing.")
            .user("Check that the add tests pass").run(f"{TESTS} test_calc", 0).agent("They do."))


def _pipeline(tmp_path: Path, builder: SessionBuilder, **verify_kw):
    from logmine.verify import VerifyConfig, verify

    builder.write(tmp_path / "sessions")
    store = tmp_path / "store"
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=store, jobs=1))
    segment(SegmentConfig(store=store))
    return store, verify(VerifyConfig(store=store, jobs=2, **verify_kw))


def _statuses(store: Path) -> dict[tuple[int, str, str | None], str]:
    rows = query(store, "SELECT t.index, v.kind, v.mode, v.status FROM verifiers v JOIN tasks t USING (task_id)")
    return {(r["index"], r["kind"], r["mode"]): r["status"] for r in rows}


def test_validated_fails_after_and_passes_at_start(tmp_path):
    repo = tmp_path / "work" / "proj"
    commit = calc_repo(repo)
    store, summary = _pipeline(tmp_path, _session(repo, commit))
    statuses = _statuses(store)
    assert statuses[(0, "test_command", None)] == "validated"  # fails at the start, passes after the fix
    assert statuses[(0, "file_diff", "exact")] == "validated"
    assert statuses[(0, "file_diff", "hunks")] == "validated"
    assert statuses[(1, "test_command", None)] == "fails_after"  # the task's tests never pass
    assert statuses[(2, "test_command", None)] == "passes_at_start"  # rebuilt with task 0's fix applied
    assert summary.tasks == 3 and summary.rebuilt == 3
    row = query(store, "SELECT * FROM verifiers WHERE status = 'validated' AND kind = 'test_command'")[0]
    assert row["before_exit_code"] == 1 and row["after_exit_code"] == 0 and not row["before_passed"]
    assert "FAILED" in row["before_excerpt"]
    # unittest reported each test: the verdict rests on the test that flipped, not on the exit code
    assert row["test_runner"] == "unittest" and row["graded_by"] == "tests"
    assert row["tests_fail_to_pass"] == ["test_calc.T.test_add"] and row["tests_pass_to_pass"] == []
    (after,) = query(store, "SELECT before_tests, after_tests FROM verifications WHERE verifier_id = ?",
                     [row["verifier_id"]])
    assert [(t["test_id"], t["status"]) for t in after["before_tests"]] == [("test_calc.T.test_add", "failed")]
    assert [(t["test_id"], t["status"]) for t in after["after_tests"]] == [("test_calc.T.test_add", "passed")]
    diff = query(store, "SELECT graded_by, tests_fail_to_pass FROM verifiers WHERE status = 'validated' AND kind = 'file_diff'")
    assert {(r["graded_by"], r["tests_fail_to_pass"]) for r in diff} == {("files", None)}
    from logmine.verify import VerifyConfig, verify

    assert verify(VerifyConfig(store=store)).tasks == 0  # resumable: nothing left to do


def test_repository_not_found_then_mapped(tmp_path):
    from logmine.verify import VerifyConfig, verify

    repo = tmp_path / "moved" / "proj"
    commit = calc_repo(repo)
    store, summary = _pipeline(tmp_path, _session(Path("/nonexistent/proj"), commit))
    assert summary.rebuilt == 0
    reasons = {r["status_reason"] for r in query(store, "SELECT status_reason FROM verifiers")}
    assert reasons == {"repository not found at /nonexistent/proj (map it with --repo-map /nonexistent/proj=PATH, "
                       "or search with --repo-search DIR)"}
    assert set(_statuses(store).values()) == {"not_rebuilt"}
    # verify does not redo verified tasks; forget the verification in a copy and map the repository
    store2 = tmp_path / "store2"
    shutil.copytree(store, store2)
    con = __import__("duckdb").connect(str(store2 / "catalog.duckdb"))
    con.execute("DELETE FROM verified")
    con.close()
    mapped = verify(VerifyConfig(store=store2, repo_map=(("/nonexistent/proj", str(repo)),)))
    assert mapped.rebuilt == 3
    assert _statuses(store2)[(0, "test_command", None)] == "validated"


def test_grader_timeout_is_unscored_not_failed(tmp_path):
    repo = tmp_path / "work" / "slow"
    commit = calc_repo(repo)
    slow = "python3 -c 'import time; time.sleep(30)' && python3 -m unittest -q"
    builder = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("Fix add").run(slow, 1).patch(FIX).run(slow, 0).agent("Fixed."))
    store, summary = _pipeline(tmp_path, builder, timeout_s=2)
    statuses = _statuses(store)
    assert statuses[(0, "test_command", None)] == "unscored"
    assert statuses[(0, "file_diff", "exact")] == "validated"
    row = query(store, "SELECT * FROM verifiers WHERE kind = 'test_command'")[0]
    assert row["before_passed"] is None and "timed out" in row["status_reason"]


def test_schema_of_verifications(tmp_path):
    import jsonschema

    repo = tmp_path / "work" / "proj"
    store, _ = _pipeline(tmp_path, _session(repo, calc_repo(repo)))
    schema = json.loads((Path(__file__).parents[2] / "schemas/verifications.schema.json").read_text())
    rows = query(store, "SELECT * FROM verifications")
    assert rows
    for row in rows:
        jsonschema.validate(row, schema)


def test_changed_test_file_is_graded_in_its_end_of_task_version(tmp_path):
    """The task extends an existing test file: the start state is graded with the extended tests."""
    repo = tmp_path / "work" / "ext"
    commit = calc_repo(repo)
    add_test = ("*** Begin Patch\n*** Update File: test_calc.py\n@@\n     def test_add(self):\n"
                "         self.assertEqual(add(2, 3), 5)\n+\n+    def test_sub(self):\n"
                "+        from calc import sub\n+        self.assertEqual(sub(3, 1), 2)\n*** End Patch\n")
    add_sub = ("*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
               "+\n+\n+def sub(a, b):\n+    return a - b\n*** End Patch\n")
    builder = (SessionBuilder(cwd=str(repo), commit=commit)
               .user("Add sub with a test").patch(add_test).run(TESTS, 1).patch(add_sub).run(TESTS, 0).agent("Done."))
    store, _ = _pipeline(tmp_path, builder)
    row = query(store, "SELECT * FROM verifiers WHERE kind = 'test_command'")[0]
    assert row["status"] == "validated", row["status_reason"]
    assert "Ran 2 tests" in row["before_excerpt"]  # the start state ran the task's extended tests (1 before)

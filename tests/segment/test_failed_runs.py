"""Fail→pass from runs whose outcome Codex reported without an exit code: a run that failed with an
unknown code is a failure, never a pass; a run whose outcome is unknown is neither."""

from __future__ import annotations

import pytest
from conftest import query
from session_builder import SessionBuilder

from logmine.ingest.run import IngestConfig, ingest
from logmine.pipeline import load_pipeline
from logmine.segment import SegmentConfig, segment
from logmine.segment.commands import CommandClassifier
from logmine.segment.records import Run
from logmine.segment.verifiers import TaskWork, candidates

CLASSIFIER = CommandClassifier(load_pipeline()["segment"])
FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"


def _test_candidate(*runs: dict):
    """The test_command candidate of a task that edited at seq 5, with these pytest runs."""
    work = TaskWork(commands=[{"command": "pytest -q", "workdir": None, **r} for r in runs], edit_seqs=[5])
    (found,) = [c for c in candidates("t-1", "s", work, {}, CLASSIFIER, "/w") if c.kind == "test_command"]
    return found


@pytest.mark.parametrize(("first", "stored", "fail_to_pass"), [
    ({"exit_code": None, "failed": True}, Run(2, None, True), True),  # a sandbox time-out: failed, code unknown
    ({"exit_code": 1}, Run(2, 1, True), True),  # a run without `failed`: its exit code says
    ({"exit_code": None, "failed": None}, Run(2, None, None), False),  # never seen to exit: not a failure
    ({"exit_code": None}, Run(2, None, None), False),
])
def test_an_earlier_failure_without_a_code_counts(first, stored, fail_to_pass):
    found = _test_candidate({"seq": 2, **first}, {"seq": 8, "exit_code": 0, "failed": False})
    assert found.fail_to_pass is fail_to_pass
    assert found.strength == (1.0 if fail_to_pass else 0.6)
    assert found.runs == (stored, Run(8, 0, False))


@pytest.mark.parametrize(("failed_at", "fail_to_pass"), [(2, True), (6, False)], ids=["before-the-edit", "after-it"])
def test_only_a_failure_an_edit_followed_makes_fail_to_pass(failed_at, fail_to_pass):
    """A run that failed after the task's last edit (seq 5) and passed after ``pip install -e .``,
    with no edit between, was mended by the install, not by the task's code."""
    found = _test_candidate({"seq": failed_at, "exit_code": 2}, {"seq": 8, "exit_code": 0})
    assert found.fail_to_pass is fail_to_pass
    assert found.strength == (1.0 if fail_to_pass else 0.6)


@pytest.mark.parametrize(("prose", "fail_to_pass"), [(True, True), (False, False)], ids=["story-file", "code"])
def test_an_edit_of_prose_after_the_last_run_leaves_fail_to_pass(prose, fail_to_pass):
    """BMAD-style tasks tick their story file off once the tests pass: that edit (seq 9, after the
    passing run at 8) changes nothing a test run shows; an edit of code there would."""
    runs = [{"command": "npx vitest run", "workdir": None, "seq": 2, "exit_code": 1},
            {"command": "npx vitest run", "workdir": None, "seq": 8, "exit_code": 0}]
    work = TaskWork(commands=runs, edit_seqs=[5, 9], prose_edit_seqs=[9] if prose else [])
    (found,) = [c for c in candidates("t-1", "s", work, {}, CLASSIFIER, "/w") if c.kind == "test_command"]
    assert (found.fail_to_pass, found.ran_after_last_edit) == (fail_to_pass, fail_to_pass)


def test_a_last_run_that_failed_without_a_code_is_not_a_pass():
    found = _test_candidate({"seq": 2, "exit_code": 1}, {"seq": 8, "exit_code": None, "failed": True})
    assert not found.fail_to_pass and found.strength == 0.2
    assert found.runs == (Run(2, 1, True), Run(8, None, True))


def test_check_command_needs_a_known_failure_before_and_a_pass_after():
    work = TaskWork(commands=[{"seq": 2, "command": "make lint", "workdir": None, "exit_code": None, "failed": True},
                              {"seq": 8, "command": "make lint", "workdir": None, "exit_code": 0, "failed": False}],
                    edit_seqs=[5])
    (found,) = candidates("t-1", "s", work, {}, CLASSIFIER, "/w")
    assert found.kind == "check_command" and found.fail_to_pass


def test_exit_code_inside_a_sandbox_failure_makes_fail_to_pass(tmp_path):
    """Codex 0.34-0.4x reported a failing command in the sandbox as text, its exit code inside."""
    b = SessionBuilder().user("Fix the add function")
    b._add("response_item", {"type": "function_call", "name": "shell", "call_id": "call_sandboxed",
                             "arguments": '{"command": ["bash", "-lc", "pytest -q"]}'})
    b._add("response_item", {"type": "function_call_output", "call_id": "call_sandboxed", "output": (
        "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error, exit code: 1, stdout: "
        ".F\n=== FAILURES ===\n")})
    b.patch(FIX).run("pytest -q", 0).agent("Fixed.")
    b.write(tmp_path / "sessions")
    ingest(IngestConfig(paths=(tmp_path / "sessions",), store=tmp_path / "store", jobs=1))
    summary = segment(SegmentConfig(store=tmp_path / "store"))
    assert summary.fail_to_pass == 1
    (row,) = query(tmp_path / "store", "SELECT runs FROM verifiers WHERE kind = 'test_command'")
    assert row["runs"] == '[{"seq":5,"exit_code":1,"failed":true},{"seq":10,"exit_code":0,"failed":false}]'

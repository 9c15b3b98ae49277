"""Task boundaries, follow-ups, aborts, start states and candidates on purpose-built G2 sessions."""

from __future__ import annotations

import json

import pytest
from conftest import query
from session_builder import SessionBuilder, segmented

from logmine.ingest.run import IngestConfig, ingest
from logmine.segment import SegmentConfig, segment

FIX = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n"
ADD_TEST = "*** Begin Patch\n*** Add File: tests/test_sub.py\n+from calc import sub\n+\n+def test_sub():\n+    assert sub(3, 1) == 2\n*** End Patch\n"


def _tasks(store, session_id=None):
    where = "WHERE session_id = ?" if session_id else ""
    return query(store, f"SELECT * FROM tasks {where} ORDER BY source_path, index", [session_id] if session_id else [])


def _verifiers(store, task_id):
    return query(store, "SELECT * FROM verifiers WHERE task_id = ? ORDER BY kind, mode", [task_id])


def test_follow_ups_extend_the_running_task(tmp_path):
    b = (SessionBuilder().user("Fix the add function").run("pytest -q", 1).agent("Shall I continue?")
         .user("continue").patch(FIX).user("yes to all").run("pytest -q", 0).agent("Done.")
         .user("Now write a README").run("ls").agent("Written."))
    store, summary = segmented(tmp_path, b)
    tasks = _tasks(store)
    assert [t["prompt"] for t in tasks] == ["Fix the add function", "Now write a README"]
    assert json.loads(tasks[0]["followups"]) == ["continue", "yes to all"]
    assert summary.tasks == 2 and summary.fail_to_pass == 1


def test_retried_request_is_one_task_and_error_paste_after_a_request_for_output(tmp_path):
    paste = "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nZeroDivisionError: division by zero"
    b = (SessionBuilder().user("Run the app").user("Run the app").run("python app.py", 1)
         .agent("Please paste the full error output you see.").user(paste).patch(FIX).agent("Fixed.")
         .user(paste))  # a paste nobody asked for is a new request
    store, _ = segmented(tmp_path, b)
    tasks = _tasks(store)
    assert [t["prompt"] for t in tasks] == ["Run the app", paste]
    assert json.loads(tasks[0]["followups"]) == [paste]


def test_injected_context_aborts_and_missing_final_message(tmp_path):
    b = (SessionBuilder().user("Refactor the parser").run("rg parse").abort()
         .user("Only list the files").agent("Here they are.")
         .user("Now delete them").run("git status"))
    store, _ = segmented(tmp_path, b)
    tasks = _tasks(store)
    assert [t["prompt"] for t in tasks] == ["Refactor the parser", "Only list the files", "Now delete them"]
    assert [t["aborted"] for t in tasks] == [True, False, False]
    assert [t["has_final_message"] for t in tasks] == [False, True, False]
    assert tasks[1]["n_tool_calls"] == 0 and tasks[1]["n_candidates"] == 0
    assert not any("<environment_context>" in t["prompt"] or "<turn_aborted>" in t["prompt"] for t in tasks)


def test_wrapped_test_commands_fail_to_pass_and_hidden_test_files(tmp_path):
    b = (SessionBuilder().user("Fix add and add a sub test").run("bash -lc 'cd pkg && python -m pytest -q'", 1)
         .patch(FIX).patch(ADD_TEST).run("cd pkg && python -m pytest -q", 0).agent("Done."))
    store, _ = segmented(tmp_path, b)
    task = _tasks(store)[0]
    rows = _verifiers(store, task["task_id"])
    test = next(r for r in rows if r["kind"] == "test_command")
    assert test["fail_to_pass"] and test["ran_after_last_edit"] and test["strength"] == 1.0
    assert test["tmax_kind"] == "test_pass" and test["command"] == "cd pkg && python -m pytest -q"
    assert [r["exit_code"] for r in json.loads(test["runs"])] == [1, 0]
    hidden = json.loads(test["files"])
    assert hidden == [{"path": "tests/test_sub.py", "content": "from calc import sub\n\ndef test_sub():\n    assert sub(3, 1) == 2\n"}]
    diffs = {r["mode"]: r for r in rows if r["kind"] == "file_diff"}
    assert diffs["exact"]["tmax_kind"] == "exact_text" and diffs["hunks"]["tmax_kind"] == "metric_threshold"
    files = {f["path"]: f for f in json.loads(diffs["hunks"]["files"])}
    assert files["calc.py"]["added"] == ["    return a + b"] and files["calc.py"]["removed"] == ["    return a - b"]
    assert task["files_touched"] == ["calc.py", "tests/test_sub.py"]


def test_check_command_and_failed_patches(tmp_path):
    b = (SessionBuilder().user("Make the build work").run("python build.py", 2).patch(FIX, ok=False)
         .patch(FIX).run("python build.py", 0).agent("Builds now."))
    store, _ = segmented(tmp_path, b)
    task = _tasks(store)[0]
    kinds = {r["kind"]: r for r in _verifiers(store, task["task_id"])}
    assert kinds["check_command"]["fail_to_pass"] and kinds["check_command"]["strength"] == 0.5
    assert json.loads(kinds["file_diff"]["files"])[0]["added"] == ["    return a + b"]  # applied once only
    assert task["n_failed_commands"] == 2  # the failed build and the rejected patch


def test_start_states(tmp_path):
    b = (SessionBuilder().user("Fix add").patch(FIX).agent("ok")
         .user("Tidy up").run("sed -i 's/x/y/' calc.py").agent("ok")
         .user("Add a test").ghost("c" * 40).patch(ADD_TEST).agent("ok")
         .user("Rename things").run("ls").agent("ok"))
    no_git = SessionBuilder(commit=None).user("Hello there, fix it").run("ls")
    store, summary = segmented(tmp_path, b, no_git)
    tasks = _tasks(store, b.session_id)
    states = [json.loads(t["start_state"]) for t in tasks]
    assert [t["rebuildable"] for t in tasks] == [True, True, True, True]
    assert states[0]["method"] == "git_commit+patches" and states[0]["prior_patches"] == []
    assert states[0]["repo"]["git_commit"] == "a" * 40
    assert [p["task_index"] for p in states[1]["prior_patches"]] == [0]
    assert states[2]["method"] == "ghost_snapshot" and states[2]["ghost_commit"] == "c" * 40
    # an earlier shell edit is redone at verify, in order with the patches (logmine.workspace.edits)
    assert states[3]["method"] == "git_commit+edits" and tasks[3]["start_state_reason"] is None
    assert [(p["task_index"], p.get("command")) for p in states[3]["prior_patches"]] == [
        (0, None), (1, "sed -i 's/x/y/' calc.py"), (2, None)]
    lone = _tasks(store, no_git.session_id)[0]  # no commit: verify takes the newest one before the session began
    assert lone["rebuildable"] and json.loads(lone["start_state"])["method"] == "dated_commit"
    assert json.loads(lone["start_state"])["session_started"].startswith("2026-01-01T00:00:01")
    assert summary.not_rebuildable == 0


def test_subagent_and_empty_sessions_yield_no_task(tmp_path):
    parent = SessionBuilder().user("Review my change").run("git diff")
    review = SessionBuilder(source={"subagent": {"thread_spawn": {"parent_thread_id": parent.session_id, "depth": 1}}})
    review.user("Review the diff and report findings").run("git diff")
    silent = SessionBuilder()
    store, summary = segmented(tmp_path, parent, review, silent)
    assert [t["session_id"] for t in _tasks(store)] == [parent.session_id]
    assert summary.no_task_reasons == {"subagent:thread_spawn session": 1, "no genuine user request": 1}


def test_incremental_and_stable_ids(tmp_path):
    b = SessionBuilder().user("Fix add").run("pytest -q", 1).patch(FIX).run("pytest -q", 0).agent("Fixed.")
    other = SessionBuilder().user("Explain the code").agent("It adds.")
    store, first = segmented(tmp_path, b, other)
    before = _tasks(store)
    again = segment(SegmentConfig(store=store))
    assert again.sessions_segmented == 0 and _tasks(store) == before
    b.user("Now add sub").patch(ADD_TEST).agent("Added.")
    path = b.write(tmp_path / "sessions")  # the session grew
    ingest(IngestConfig(paths=(path.parent,), store=store, jobs=1))
    grown = segment(SegmentConfig(store=store))
    assert grown.sessions_segmented == 1
    after = _tasks(store)
    assert len(after) == 3
    assert {t["task_id"] for t in before} <= {t["task_id"] for t in after}
    assert query(store, "SELECT count(*) AS n FROM verifiers WHERE fail_to_pass")[0]["n"] == 1


@pytest.mark.parametrize("bad", ["[segment]\nno_such_key = 1\n", "[segment]\nfollowup_max_chars = 'x'\n", "[[oops"])
def test_pipeline_errors(tmp_path, bad):
    from logmine.pipeline import PipelineError, load_pipeline

    path = tmp_path / "p.toml"
    path.write_text(bad)
    with pytest.raises(PipelineError):
        load_pipeline(path)

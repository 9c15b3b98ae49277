"""Typed segment records: every stored task and candidate row survives ``from_row`` → ``to_row``
unchanged (JSON text included), and :func:`load_task` reads a task back whole."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import query

from logmine.segment import SegmentConfig, segment
from logmine.segment.records import (
    Candidate,
    FileDiff,
    HiddenTest,
    StartState,
    Task,
    load_task,
    read_tasks,
    session_python,
)
from logmine.store import Store
from logmine.store.tables import TASKS, VERIFIERS


@pytest.fixture(scope="module")
def segmented(fixture_store, tmp_path_factory):
    """A copy of the fixtures store, segmented (the shared one is left as other tests expect it)."""
    store = tmp_path_factory.mktemp("records") / "store"
    shutil.copytree(fixture_store[0], store)
    segment(SegmentConfig(store=store))
    return store


def test_task_rows_round_trip(segmented):
    rows = query(segmented, "SELECT * FROM tasks ORDER BY task_id")
    assert len(rows) > 20
    for row in rows:
        task = Task.from_row(row)
        assert isinstance(task.start_state, StartState)
        assert task.to_row() == row
        assert set(task.to_row()) == set(TASKS.names)
    followed = [Task.from_row(r) for r in rows if r["followups"]]
    assert followed and all(isinstance(t.followups, tuple) and t.followups for t in followed)
    assert any(Task.from_row(r).start_state.prior_patches for r in rows)


def test_candidate_rows_round_trip(segmented):
    rows = query(segmented, "SELECT * FROM _verifiers_raw ORDER BY verifier_id")
    assert {r["kind"] for r in rows} >= {"test_command", "file_diff"}  # the corpus has no check command
    for row in rows:
        candidate = Candidate.from_row(row)
        assert candidate.to_row() == row
        assert set(candidate.to_row()) == set(VERIFIERS.names)
        if row["kind"] == "file_diff":
            assert candidate.diffs and all(isinstance(d, FileDiff) for d in candidate.diffs)
            assert not candidate.hidden_tests and candidate.runs is None
        else:
            assert not candidate.diffs and candidate.runs and candidate.runs[-1].seq > 0
            assert all(isinstance(t, HiddenTest) for t in candidate.hidden_tests)
    assert any(Candidate.from_row(r).hidden_tests for r in rows)


def test_candidate_reads_the_verifiers_view(segmented):
    """The public view adds verification columns; they are not part of the record."""
    row = query(segmented, "SELECT * FROM verifiers LIMIT 1")[0]
    assert "status" in row
    assert Candidate.from_row(row).to_row() == {k: v for k, v in row.items() if k in VERIFIERS.names}


def test_start_state_json_shape(segmented):
    row = query(segmented, "SELECT start_state FROM tasks WHERE start_state LIKE '%call_id%' LIMIT 1")[0]
    state = StartState.from_row(json.loads(row["start_state"]))
    assert set(state.to_row()) == {"repo", "ghost_commit", "prior_patches", "method"}  # "untracked" only when known
    assert set(state.to_row()["repo"]) == {"cwd", "git_repo_url", "git_commit", "git_branch"}
    assert state.commit == (state.ghost_commit or state.repo.git_commit)


def test_load_task_reads_candidates_actions_and_prior_patches(segmented):
    with Store(segmented, read_only=True) as store:
        tasks = read_tasks(store)
        later = next(t for t in tasks if t.start_state.prior_patches)
        item = load_task(store, later)
        assert item.task is later
        assert len(item.candidates) == later.n_candidates
        assert all(c.task_id == later.task_id and c.seg_gen == later.seg_gen for c in item.candidates)
        assert 0 < len(item.prior) <= len(later.start_state.prior_patches)
        worked = next(t for t in tasks if t.files_touched)
        actions = load_task(store, worked).actions
    assert [a.seq for a in actions] == sorted(a.seq for a in actions)
    assert any(a.kind == "patch" and a.ops for a in actions)
    assert all(a.command for a in actions if a.kind == "command")


def test_check_command_candidate_round_trips():
    from logmine.segment.records import Run

    candidate = Candidate(verifier_id="v-1", task_id="t-1", session_id="s", kind="check_command", strength=0.5,
                          tmax_kind="test_pass", command="make lint", workdir="/w",
                          runs=(Run(seq=3, exit_code=2), Run(seq=9, exit_code=0)), ran_after_last_edit=True,
                          fail_to_pass=True, seg_gen=4)
    row = candidate.to_row()
    assert row["runs"] == '[{"seq":3,"exit_code":2,"failed":true},{"seq":9,"exit_code":0,"failed":false}]'
    assert row["files"] is None
    assert Candidate.from_row(row) == candidate


def test_runs_stored_without_failed_read_it_from_the_exit_code():
    from logmine.segment.records import Run

    row = {"verifier_id": "v-1", "task_id": "t-1", "session_id": "s", "kind": "test_command", "strength": 0.6,
           "tmax_kind": "test_pass", "files": None,
           "runs": '[{"seq":3,"exit_code":2},{"seq":5,"exit_code":null},{"seq":9,"exit_code":0}]'}
    assert Candidate.from_row(row).runs == (Run(3, 2, True), Run(5, None, None), Run(9, 0, False))
    assert Run(7, None, failed=True).failed is True  # failed without a code (a sandbox denial, a time-out)


def test_the_python_a_session_ran_is_the_one_most_of_its_outputs_name(tmp_path):
    """pytest's header, a traceback's library path and ``python --version`` each name the Python that
    ran; each call counts once, however often it names it. A version only a user's message names
    (a CI log pasted in) is not the session's, nor is one in a command line."""
    from session_builder import SessionBuilder
    from session_builder import segmented as written

    header = "============ test session starts ============\nplatform linux -- Python 3.10.12, pytest-8.4.2\n"
    traceback = 'Traceback (most recent call last):\n  File "/home/u/p/.venv/lib/python3.12/site-packages/x.py"\n' * 3
    b = (SessionBuilder(cwd=str(tmp_path / "p"), commit="0" * 40)
         .user("Fix it; CI says /opt/hostedtoolcache/Python/3.11.14/x64/lib/python3.11/argparse.py fails")
         .run("pytest -q", 1, header).run("python3.13 -c 'print(1)'", 0, "1\n").run("python --version", 0, "Python 3.10.12\n")
         .run("pytest -q tests/x.py", 1, traceback).agent("Done."))
    c = SessionBuilder(cwd=str(tmp_path / "q"), commit="0" * 40).user("Look").run("ls", 0, "a.py\n").agent("Done.")
    store, _ = written(tmp_path, b, c)
    with Store(store, read_only=True) as opened:
        paths = {r["session_id"]: r["source_path"] for r in query(store, "SELECT session_id, source_path FROM sessions")}
        assert session_python(opened, paths[b.session_id]) == "3.10"  # two calls name 3.10, one 3.12
        assert session_python(opened, paths[c.session_id]) is None
        task = read_tasks(opened, "SELECT * FROM tasks WHERE session_id = ?", [b.session_id])[0]
        assert load_task(opened, task).python == "3.10"
